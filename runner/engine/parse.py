"""Parse once: split a raw micro-batch into schema-typed rows and dead letters.

:func:`parse_batch` runs ONE ``from_json`` over the batch with the project schema (Spark DDL)
and Spark's corrupt-record column, all in Spark expressions (no Python UDF). A record goes to
exactly one of :attr:`ParsedBatch.valid` / :attr:`ParsedBatch.dead`.

A record is dead when
    - it is not a JSON object: invalid or truncated JSON, a JSON array, a string, number,
      boolean or ``null``; JSON5 extras are invalid (single quotes, unquoted names, comments,
      ``NaN``/``Infinity`` literals, leading zeros, unescaped control characters);
    - text follows the object on its line (``{"a":1} trailing``). Jackson itself ignores
      anything after the first complete value; we reject a line whose last non-whitespace
      character is not ``}``. Limitation: a second object glued on (``{...}{...}``) still ends
      in ``}`` and passes with the first object's values;
    - a declared field holds a value Spark cannot convert to the declared type (nothing is
      silently nulled), or a container has the wrong shape (a string where a STRUCT/ARRAY/MAP
      is declared);
    - a NOT NULL field (``eventId STRING NOT NULL``, also nested: ``STRUCT<id: STRING NOT
      NULL>``) is missing or JSON ``null``. A nested NOT NULL field is required only where its
      parent struct is present (a missing/null parent is fine unless it is NOT NULL itself);
      inside arrays it is checked in every non-null element;
    - the value itself is null (a Kafka tombstone) or whitespace only.
    - it holds bytes that are not UTF-8 (reason ``invalid UTF-8 ...``; ``raw`` keeps the
      record with the bad bytes replaced by U+FFFD, so every reader can read the table).

Undeclared fields are ignored (and never inspected). Keys match field names case-sensitively
(``EventId`` is not ``eventId``). Duplicate keys: the last one wins.

Coercions Spark performs (kept, deliberately, so they are documented here):
    - STRING accepts ANY JSON value and keeps its JSON text: ``12`` -> ``"12"``, ``true`` ->
      ``"true"``, ``{"a":1}`` -> ``'{"a":1}'``. A STRING field is never a type error.
    - INT/BIGINT/SMALLINT/TINYINT accept JSON integers in range only: ``"12"`` (a string),
      ``12.5`` and out-of-range numbers are type errors.
    - DOUBLE/FLOAT accept JSON numbers only (``"1.5"``, ``"NaN"``, ``""`` are type errors).
    - DECIMAL(p,s) accepts numbers and numeric strings, rounded HALF_UP to scale s
      (``"1.235"`` -> ``1.24`` for DECIMAL(10,2)); more integer digits than p - s is an error.
    - BOOLEAN accepts ``true``/``false`` only.
    - TIMESTAMP accepts ISO-8601-like strings (``2024-01-01T10:00:00Z``, ``+02:00``, ``+0200``,
      `` UTC``, ``2024-01-01 10:00:00``, date only ``2024-01-01`` = midnight, one-digit parts);
      a string without offset is read in the session time zone (UTC). Fractions beyond
      microseconds are truncated. A JSON integer is epoch seconds. Impossible dates
      (``2024-02-30``), free text, ``""``, numeric strings and non-integer numbers are errors.
      TIMESTAMP_NTZ rejects strings that carry an offset or ``Z``.
    - DATE accepts date strings and drops a time part (``2024-01-01T10:00:00Z`` -> 2024-01-01);
      numbers are errors.
    - Limits (Jackson's): nesting deeper than 1000 levels (anywhere, even inside an undeclared
      field) makes the record invalid JSON; very long strings (10 MB tested) are fine.

Dead-letter reasons name the field, e.g. ``field request.latency_ms: expected INT, got "abc"``,
``field errors[1].severity: expected STRING...``, ``missing NOT NULL field eventId``,
``NOT NULL field eventId is null``, ``not a JSON object (array)``, ``invalid JSON``. They are
computed only for dead rows (after the filter) by walking the record as a VARIANT
(``try_parse_json``) against the schema; each leaf is checked with the same ``from_json`` on
the single value, so the reason follows Spark's own conversion rules.

Parse only what is used (opt-in, ``parse_only_used_fields: true`` in project.yml): given
``fields`` (the top-level event fields the models read, known at compile time as
``Plan.used_fields``), the schema handed to ``from_json`` is pruned to those
fields plus every field that is NOT NULL or holds a NOT NULL field inside (so the NOT NULL
dead-lettering rules still apply in full). Jackson still tokenises the whole record, so invalid
JSON, non-objects, trailing text and over-deep nesting are still dead letters; but a type error
inside a field no model reads (``"amount": "abc"`` when no model reads ``amount``) is then NOT
detected: the record is valid, and ``parsed_events`` simply lacks the unread field. That is the
point of pruning (converting a value is what finds its type error) and it cannot change any
model's output. A project that wants every declared field type-checked on every record makes
one model read them all (or ``SELECT *``, which disables pruning). Dead-letter reasons walk the
same pruned schema.

Caching: nothing is persisted here. ``valid`` and ``dead`` are both filters of
:attr:`ParsedBatch.frame`; persist that one frame (:meth:`ParsedBatch.persist`) and both read
from the cache, or the parse runs once per action.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from runner.errors import ConfigError

if TYPE_CHECKING:
    from pyspark import StorageLevel
    from pyspark.sql import Observation

__all__ = ["ParsedBatch", "parse_batch", "parse_schema", "prepare_parse", "prune_schema",
           "JSON_OPTIONS", "BATCH_ID_COLUMN", "DEAD_COLUMNS"]

BATCH_ID_COLUMN = "_batch_id"
DEAD_COLUMNS = ("raw", "reason", BATCH_ID_COLUMN)
"""The dead-letter columns, followed by the source's metadata columns."""

JSON_OPTIONS: dict[str, str] = {
    "mode": "PERMISSIVE",
    "allowSingleQuotes": "false",
    "allowNonNumericNumbers": "false",
    "allowComments": "false",
    "allowUnquotedFieldNames": "false",
    "allowNumericLeadingZeros": "false",
    "allowBackslashEscapingAnyCharacter": "false",
    "allowUnquotedControlChars": "false",
}
"""Strict JSON for every from_json here (Spark's defaults accept single quotes and NaN)."""

_CORRUPT = "__runner_corrupt_record"
_PARSED = "__runner_parsed"
_DEAD = "__runner_dead"
_RAW = "__runner_raw"
_CORRUPT_FLAG = "__runner_corrupt"
_BAD_UTF8 = "__runner_bad_utf8"
_KIND = "__runner_dead_kind"  # cached: null for a valid row; 0-3 for a dead one (see _Expressions)
BAD_UTF8_REASON = "invalid UTF-8 (bad bytes replaced by U+FFFD in raw)"
_VARIANT = "__runner_variant"
_BARRIER = "__runner_partition"
_GOT_CHARS = 80
_MAX_NESTING = 1000
_JSON_WS = " \t\r\n"


@dataclass(frozen=True)
class ParsedBatch:
    """One micro-batch, parsed.

    Attributes:
        valid: the schema's top-level fields, ``_batch_id`` (BIGINT), then the metadata columns.
        frame: the one parsed frame that valid rows and dead letters are filtered from;
            persist it to parse once. It holds no ``_batch_id`` (a constant, added after).
        batch_id: the micro-batch id.
    """

    valid: DataFrame
    frame: DataFrame
    batch_id: int
    _exprs: _Expressions

    @property
    def dead(self) -> DataFrame:
        """``raw`` STRING, ``reason`` STRING, ``_batch_id`` BIGINT, then the metadata columns.

        Built on first use: its reason expression is large and costs the driver about 0.1 s
        of analysis, which a batch without dead letters need not pay."""
        return self.dead_of(self.frame)

    def dead_of(self, frame: DataFrame) -> DataFrame:
        """The dead letters of ``frame``: :attr:`frame` itself or :meth:`counting`'s frame."""
        x = self._exprs
        return (frame.filter(F.col(_KIND).isNotNull()).select(*x.dead_inputs)
                .select(F.col(_RAW).alias("raw"), x.reason,
                        F.lit(self.batch_id).cast("bigint").alias(BATCH_ID_COLUMN), *x.meta))

    def counting(self, observation: Observation) -> DataFrame:
        """:attr:`frame` observing ``rows`` (every record) and ``dead`` (dead letters) into
        ``observation`` as any action computes it: counts without an action of their own."""
        return self.frame.observe(observation, F.count(F.lit(1)).alias("rows"),
                                  F.count_if(F.col(_KIND).isNotNull()).alias("dead"))

    def persist(self, storage_level: StorageLevel | None = None) -> ParsedBatch:
        """Persist :attr:`frame` (``MEMORY_AND_DISK`` by default); returns ``self``."""
        if storage_level is None:
            self.frame.persist()
        else:
            self.frame.persist(storage_level)
        return self

    def unpersist(self) -> None:
        """Drop the cached :attr:`frame` (non-blocking)."""
        self.frame.unpersist()


@lru_cache(maxsize=16)
def parse_schema(schema_ddl: str) -> T.StructType:
    """Parse the project's Spark DDL into a StructType; NOT NULL becomes ``nullable=False``.

    Raises:
        ConfigError: the DDL does not parse or declares no fields.
    """
    try:
        schema = T.StructType.fromDDL(schema_ddl)
    except Exception as e:  # pyspark raises ParseException/AnalysisException subclasses
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ConfigError(f"schema: invalid Spark DDL: {first}",
                          hint="e.g. 'eventId STRING NOT NULL, ts TIMESTAMP, "
                               "user STRUCT<id: STRING>'") from e
    if not schema.fields:
        raise ConfigError("schema: declares no fields")
    return schema


def prune_schema(schema: T.StructType, fields: Collection[str] | None) -> T.StructType:
    """``schema`` restricted to ``fields`` plus every field that is NOT NULL or contains one
    (in the schema's order); all of it when ``fields`` is None. For
    ``a INT NOT NULL, b STRING, c STRUCT<x: INT NOT NULL>, d INT`` and ``["d"]``: a, c, d.
    """
    if fields is None:
        return schema
    keep = set(fields)
    return T.StructType([f for f in schema.fields if f.name in keep or _requires(f)])


def _requires(field: T.StructField) -> bool:
    """True when a record can be dead because of this field's nullness (a NOT NULL in it)."""
    return not field.nullable or _has_not_null(field.dataType)


def _has_not_null(dtype: T.DataType) -> bool:
    """True when ``dtype`` declares a NOT NULL field or element anywhere inside."""
    if isinstance(dtype, T.StructType):
        return any(_requires(f) for f in dtype.fields)
    if isinstance(dtype, T.ArrayType):
        return not dtype.containsNull or _has_not_null(dtype.elementType)
    if isinstance(dtype, T.MapType):
        return not dtype.valueContainsNull or _has_not_null(dtype.valueType)
    return False


def parse_batch(raw: DataFrame, *, schema_ddl: str, batch_id: int,
                metadata_columns: Sequence[str],
                fields: Collection[str] | None = None,
                valid_metadata: bool = True) -> ParsedBatch:
    """Parse ``raw.value`` with the project schema; split into valid rows and dead letters.

    Args:
        raw: the raw batch: ``value`` (STRING, one record) plus ``metadata_columns``.
        schema_ddl: the project's schema as Spark DDL.
        batch_id: the micro-batch id, stamped on every row as ``_batch_id``.
        metadata_columns: source columns carried through to both outputs, in this order.
        fields: parse only these top-level fields (plus the NOT NULL ones, see the module
            docstring); None parses every field.
        valid_metadata: False when no model reads the metadata columns: then :attr:`ParsedBatch.
            frame` keeps them for dead rows only (the dead-letter table needs them) and they
            are null in ``valid`` (same columns and types). A cached frame is smaller by a
            file path (or the Kafka columns) per row.

    Returns:
        The lazily evaluated :class:`ParsedBatch` (nothing is computed or cached here).

    Raises:
        ConfigError: bad DDL, or a schema field that clashes with a metadata column.
        ValueError: ``raw`` lacks ``value`` or a metadata column.
    """
    meta = tuple(metadata_columns)
    missing = [c for c in ["value", *meta] if c not in raw.columns]
    if missing:
        raise ValueError(f"raw batch lacks column(s) {missing}; has {raw.columns}")
    x = _expressions(schema_ddl, None if fields is None else frozenset(fields), meta,
                     valid_metadata, _gateway_token())
    batch = F.lit(batch_id).cast("bigint").alias(BATCH_ID_COLUMN)
    frame = raw.select(*x.parse).select(*x.split).select(*x.keep_raw)
    valid = frame.filter(F.col(_KIND).isNull()).select(*x.fields, batch, *x.meta)
    return ParsedBatch(valid=valid, frame=frame, batch_id=batch_id, _exprs=x)


def prepare_parse(schema_ddl: str, *, metadata_columns: Sequence[str],
                  fields: Collection[str] | None = None, valid_metadata: bool = True) -> None:
    """Build (and cache) the expressions :func:`parse_batch` will use with these arguments,
    before any batch exists: a cold JVM takes a few tenths of a second for them. Needs an
    active SparkSession.

    Raises:
        ConfigError: bad DDL, or a schema field that clashes with a metadata column.
    """
    _expressions(schema_ddl, None if fields is None else frozenset(fields),
                 tuple(metadata_columns), valid_metadata, _gateway_token())


@dataclass(frozen=True)
class _Expressions:
    """The select lists of :func:`parse_batch`: they depend on the schema, the pruning and the
    metadata columns only, so they are built once (through py4j, a few tenths of a second for
    a nested schema) and reused by every batch; only ``_batch_id`` is added per batch."""

    parse: tuple[Column, ...]  # raw -> value, metadata, from_json struct, partition id
    split: tuple[Column, ...]  # -> fields, metadata, dead/corrupt/UTF-8 flags, value
    keep_raw: tuple[Column, ...]  # -> the same with the raw text of dead rows only
    fields: tuple[Column, ...]
    meta: tuple[Column, ...]
    dead_inputs: tuple[Column, ...]  # what the reason reads, for dead rows
    schema: T.StructType  # the (pruned) schema parsed

    @cached_property
    def reason(self) -> Column:
        """Why a dead row is dead; the largest expression here, so built on first need."""
        return (F.when(F.col(_BAD_UTF8), F.lit(BAD_UTF8_REASON))
                .otherwise(_reason(F.col(_RAW), F.col(_VARIANT), F.col(_CORRUPT_FLAG),
                                   self.schema))
                .alias("reason"))


def _gateway_token() -> int:
    """Identifies the JVM gateway the cached Columns live in (a new one after a restart)."""
    from pyspark import SparkContext

    return id(getattr(SparkContext, "_gateway", None))


@lru_cache(maxsize=16)
def _expressions(schema_ddl: str, fields: frozenset[str] | None, meta: tuple[str, ...],
                 valid_metadata: bool,
                 gateway: int) -> _Expressions:  # noqa: ARG001 - part of the cache key
    schema = parse_schema(schema_ddl)
    reserved = {BATCH_ID_COLUMN, *meta}
    clash = [f.name for f in schema.fields if f.name in reserved]
    if clash:
        raise ConfigError(f"schema: field(s) {clash} clash with the runner's metadata columns "
                          f"{sorted(reserved)}", hint="rename the field in the schema")
    schema = prune_schema(schema, fields)

    parse_schema_ = T.StructType([*schema.fields, T.StructField(_CORRUPT, T.StringType())])
    options = {**JSON_OPTIONS, "columnNameOfCorruptRecord": _CORRUPT}
    value = F.col("value")
    parsed = F.col(_PARSED)
    corrupt = parsed.getField(_CORRUPT).isNotNull()
    violation = _not_null_violation(parsed, schema)
    # Most lines end with '}' exactly: only the others pay for a trimmed copy.
    trailing = (F.when(F.endswith(value, F.lit("}")), F.lit(False))
                .otherwise(~F.endswith(F.rtrim(value, F.lit(_JSON_WS)), F.lit("}"))))
    # Bytes that are not UTF-8 would otherwise become U+FFFD inside a value, silently.
    bad_utf8 = F.coalesce(~F.is_valid_utf8(value), F.lit(False))
    dead_flag = parsed.isNull() | corrupt | trailing | bad_utf8
    if violation is not None:
        dead_flag = dead_flag | violation
    # An optimizer barrier: Spark pushes a Filter below a deterministic Project by inlining
    # the projected expressions, which would run from_json again inside each filter. A
    # nondeterministic column in the parsing Project (spark_partition_id, never negative,
    # referenced by the dead flag so it is not pruned) keeps filters above it: one parse.
    dead_flag = dead_flag | (F.col(_BARRIER) < 0)
    metadata = tuple(_col(c) for c in meta)
    field_cols = tuple(_col(f.name) for f in schema.fields)
    return _Expressions(
        parse=(value, *metadata, F.from_json(value, parse_schema_, options).alias(_PARSED),
               F.spark_partition_id().alias(_BARRIER)),
        split=(*[parsed.getField(f.name).alias(f.name) for f in schema.fields], *metadata,
               dead_flag.alias(_DEAD), corrupt.alias(_CORRUPT_FLAG), bad_utf8.alias(_BAD_UTF8),
               value),
        # What is cached. The raw text is kept for dead rows only (a cached frame holds it once
        # per dead row), as valid UTF-8 so that every reader can read the dead-letter table.
        # The three flags become one column, null for valid rows (1: corrupt, 2: bad UTF-8):
        # cheaper to cache (measured 1.39 -> 1.29 JVM CPU s to fill 250k events). ``_batch_id``
        # is not in the frame: a constant, it is added after the cache.
        keep_raw=(*field_cols,
                  *(metadata if valid_metadata else
                    [F.when(F.col(_DEAD), _col(c)).alias(c) for c in meta]),
                  F.when(F.col(_DEAD), F.col(_CORRUPT_FLAG).cast("tinyint")
                         + F.col(_BAD_UTF8).cast("tinyint") * 2).alias(_KIND),
                  F.when(F.col(_DEAD), F.make_valid_utf8(value)).alias(_RAW)),
        fields=field_cols,
        meta=metadata,
        dead_inputs=(F.col(_RAW), (F.col(_KIND) % 2 == 1).alias(_CORRUPT_FLAG),
                     (F.col(_KIND) >= 2).alias(_BAD_UTF8), *metadata,
                     F.try_parse_json(F.col(_RAW)).alias(_VARIANT)),
        schema=schema,
    )


def _col(name: str) -> Column:
    """A column by its exact name (dots and backticks are part of the name)."""
    return F.col("`" + name.replace("`", "``") + "`")


# --- the hot path: NOT NULL checks on the parsed value -------------------------------------

def _not_null_violation(col: Column, dtype: T.DataType) -> Column | None:
    """True where a NOT NULL field inside the (non-null) value ``col`` is null; None if the
    type declares no NOT NULL field anywhere."""
    if isinstance(dtype, T.StructType):
        parts: list[Column] = []
        for field in dtype.fields:
            child = col.getField(field.name)
            if not field.nullable:
                parts.append(child.isNull())
            sub = _not_null_violation(child, field.dataType)
            if sub is not None:
                parts.append(child.isNotNull() & sub)
        return _any(parts)
    if isinstance(dtype, T.ArrayType):
        element_type = dtype.elementType
        if _not_null_violation(F.lit(None).cast(element_type), element_type) is None \
                and dtype.containsNull:
            return None
        return F.exists(col, lambda e: _element_violation(e, element_type, dtype.containsNull))
    if isinstance(dtype, T.MapType):
        value_type = dtype.valueType
        if _not_null_violation(F.lit(None).cast(value_type), value_type) is None \
                and dtype.valueContainsNull:
            return None
        return F.exists(F.map_values(col),
                        lambda e: _element_violation(e, value_type, dtype.valueContainsNull))
    return None


def _element_violation(e: Column, dtype: T.DataType, contains_null: bool) -> Column:
    sub = _not_null_violation(e, dtype)
    inner = e.isNotNull() & sub if sub is not None else F.lit(False)
    return inner if contains_null else (e.isNull() | inner)


def _any(parts: list[Column]) -> Column | None:
    if not parts:
        return None
    result = parts[0]
    for part in parts[1:]:
        result = result | part
    return result


# --- dead rows only: the reason, by walking the record as a VARIANT --------------------------

def _reason(raw: Column, v: Column, corrupt: Column, schema: T.StructType) -> Column:
    brackets = F.length(raw) - F.length(F.translate(raw, "[{", ""))
    invalid = F.when(brackets > _MAX_NESTING,
                     F.lit(f"invalid JSON (or nested deeper than {_MAX_NESTING} levels)")
                     ).otherwise(F.lit("invalid JSON"))
    return (
        F.when(raw.isNull(), F.lit("empty record (null value)"))
        .when(F.trim(raw, F.lit(_JSON_WS)) == "", F.lit("empty record (whitespace only)"))
        .when(v.isNull() & corrupt, invalid)
        .when(v.isNull(), F.lit("record could not be inspected (larger than 16 MiB?): it does "
                                "not match the schema"))
        .when(~_is_object(v), F.concat(F.lit("not a JSON object ("), _kind(v), F.lit(")")))
        .when(~F.endswith(F.rtrim(raw, F.lit(_JSON_WS)), F.lit("}")),
              F.lit("invalid JSON: unexpected content after the closing '}'"))
        .otherwise(F.coalesce(
            *[r for r in [_fields_reason(v, schema, None)] if r is not None],  # None: STRINGs only
            F.lit("does not match the schema (no single field identified)")))
    )


def _fields_reason(v: Column, dtype: T.StructType, path: Column | None) -> Column | None:
    reasons: list[Column] = []
    for field in dtype.fields:
        child = F.variant_get(v, _variant_path(field.name), "variant")
        child_path = (F.lit(field.name) if path is None
                      else F.concat(path, F.lit("." + field.name)))
        if not field.nullable:
            reasons.append(
                F.when(child.isNull(), F.concat(F.lit("missing NOT NULL field "), child_path))
                .when(F.is_variant_null(child),
                      F.concat(F.lit("NOT NULL field "), child_path, F.lit(" is null"))))
        sub = _value_reason(child, field.dataType, child_path)
        if sub is not None:
            reasons.append(F.when(child.isNotNull() & ~F.is_variant_null(child), sub))
    return F.coalesce(*reasons) if len(reasons) > 1 else (reasons[0] if reasons else None)


def _value_reason(v: Column, dtype: T.DataType, path: Column) -> Column | None:
    """Why the (present, non-null) JSON value ``v`` does not fit ``dtype``; None if it
    always fits."""
    if isinstance(dtype, T.StructType):
        inner = _fields_reason(v, dtype, path)
        shape = F.when(~_is_object(v), _mismatch(path, "STRUCT (a JSON object)", v))
        return shape if inner is None else F.coalesce(shape, inner)
    if isinstance(dtype, T.ArrayType):
        as_array = F.try_variant_get(v, "$", "array<variant>")
        shape = F.when(as_array.isNull(), _mismatch(path, "ARRAY", v))
        element_type = dtype.elementType
        per_element = F.transform(as_array, lambda e, i: _element_reason(
            e, element_type, dtype.containsNull,
            F.concat(path, F.lit("["), i.cast("string"), F.lit("]"))))
        first = F.get(F.filter(per_element, lambda r: r.isNotNull()), 0)
        return F.coalesce(shape, first)
    if isinstance(dtype, T.MapType):
        as_map = F.try_variant_get(v, "$", "map<string,variant>")
        shape = F.when(as_map.isNull(), _mismatch(path, "MAP (a JSON object)", v))
        value_type = dtype.valueType
        per_value = F.transform(F.map_entries(as_map), lambda kv: _element_reason(
            kv.getField("value"), value_type, dtype.valueContainsNull,
            F.concat(path, F.lit('["'), kv.getField("key"), F.lit('"]'))))
        first = F.get(F.filter(per_value, lambda r: r.isNotNull()), 0)
        return F.coalesce(shape, first)
    if isinstance(dtype, (T.StringType, T.VariantType)):
        return None
    # A leaf: ask Spark's own JSON converter about this single value.
    probe_schema = T.StructType([T.StructField("x", dtype),
                                 T.StructField(_CORRUPT, T.StringType())])
    probe = F.from_json(F.concat(F.lit('{"x":'), F.to_json(v), F.lit("}")), probe_schema,
                        {**JSON_OPTIONS, "columnNameOfCorruptRecord": _CORRUPT})
    return F.when(probe.getField(_CORRUPT).isNotNull(), _mismatch(path, _type_name(dtype), v))


def _element_reason(e: Column, dtype: T.DataType, contains_null: bool,
                    path: Column) -> Column:
    is_null = e.isNull() | F.is_variant_null(e)
    sub = _value_reason(e, dtype, path)
    present = F.when(~is_null, sub) if sub is not None else F.lit(None).cast("string")
    if contains_null:
        return present
    return F.when(is_null, F.concat(F.lit("NOT NULL element "), path, F.lit(" is null"))
                  ).otherwise(present)


def _mismatch(path: Column, expected: str, v: Column) -> Column:
    got = F.to_json(v)
    shown = F.when(F.length(got) > _GOT_CHARS,
                   F.concat(F.substring(got, 1, _GOT_CHARS), F.lit("..."))).otherwise(got)
    return F.concat(F.lit("field "), path, F.lit(f": expected {expected}, got "), shown)


def _is_object(v: Column) -> Column:
    return F.try_variant_get(v, "$", "map<string,variant>").isNotNull()


def _kind(v: Column) -> Column:
    scalar = F.schema_of_variant(v)
    return (F.when(F.is_variant_null(v), F.lit("null"))
            .when(F.try_variant_get(v, "$", "array<variant>").isNotNull(), F.lit("array"))
            .when(scalar == "STRING", F.lit("string"))
            .when(scalar == "BOOLEAN", F.lit("boolean"))
            .otherwise(F.lit("number")))


def _variant_path(name: str) -> str:
    if "'" not in name:
        return f"$['{name}']"
    if '"' not in name:
        return f'$["{name}"]'
    raise ConfigError(f"schema: field name {name!r} has both quote characters",
                      hint="rename the field")


def _type_name(dtype: T.DataType) -> str:
    if isinstance(dtype, T.StructType):
        inner = ", ".join(f"{f.name}: {_type_name(f.dataType)}" for f in dtype.fields)
        return f"STRUCT<{inner}>"
    if isinstance(dtype, T.ArrayType):
        return f"ARRAY<{_type_name(dtype.elementType)}>"
    if isinstance(dtype, T.MapType):
        return f"MAP<{_type_name(dtype.keyType)}, {_type_name(dtype.valueType)}>"
    return dtype.simpleString().upper()
