"""Parse once: split a raw micro-batch into schema-typed rows and dead letters.

:func:`parse_batch` runs ONE ``from_json`` over the batch with the project schema (Spark DDL)
and Spark's corrupt-record column, all in Spark expressions (no Python UDF). A record goes to
exactly one of :attr:`ParsedBatch.valid` / :attr:`ParsedBatch.dead`.

A record is dead when
    - it is not a JSON object: invalid or truncated JSON, a JSON array, a string, number,
      boolean or ``null``; JSON5 extras are invalid (single quotes, unquoted names, comments,
      ``NaN``/``Infinity`` literals, leading zeros, unescaped control characters);
    - text follows the object on its line (``{"a":1} trailing``, a second object glued on:
      ``{...}{...}``, ``{...},{...}``). Jackson itself ignores anything after the first
      complete value; so the record is read as a member of a wrapper object (the typed
      parse) and as the only element of a wrapper array, and text after the object breaks
      one or the other (:func:`runner.runtime.batches.reasons.as_member`, ``as_element``);
    - a declared field holds a value Spark cannot convert to the declared type (nothing is
      silently nulled), or a container has the wrong shape (a string where a STRUCT/ARRAY/MAP
      is declared);
    - a NOT NULL field (``eventId STRING NOT NULL``, also nested: ``STRUCT<id: STRING NOT
      NULL>``) is missing or JSON ``null``. A nested NOT NULL field is required only where its
      parent struct is present (a missing/null parent is fine unless it is NOT NULL itself);
      inside arrays it is checked in every non-null element;
    - the value itself is null (a Kafka tombstone) or whitespace only.
    - it holds bytes that are not UTF-8 (reason ``invalid UTF-8 ...``; ``raw`` keeps the
      record with the bad bytes replaced by U+FFFD, so every reader can read the table);
    - it escapes a lone UTF-16 surrogate anywhere (``"\\ud800"``, ``"\\udc00"``, a high
      surrogate not followed by a low one): Spark would store ``?``; reason ``invalid Unicode
      escape ...``. An escaped pair (``"\\ud83d\\ude00"``) is one character and fine;
    - a value converts without failing into something the record does not say (below:
      "Values Spark would change"); the reason names the field path.

Undeclared fields are ignored (and never inspected). Keys match field names case-sensitively
(``EventId`` is not ``eventId``). Duplicate keys: the last one wins.

Coercions Spark performs (kept, deliberately, so they are documented here):
    - STRING accepts ANY JSON value and keeps its JSON text: ``12`` -> ``"12"``, ``true`` ->
      ``"true"``, ``{"a":1}`` -> ``'{"a":1}'``. A STRING field is never a type error.
    - INT/BIGINT/SMALLINT/TINYINT accept JSON integers in range only: ``"12"`` (a string),
      ``12.5`` and out-of-range numbers are type errors.
    - DOUBLE/FLOAT accept JSON numbers only (``"1.5"``, ``"NaN"``, ``""`` are type errors) and
      store the nearest value of the type (IEEE rounding: ``16777217`` is ``16777216.0`` as a
      FLOAT, ``1e-400`` is ``0.0``); a number beyond the type's maximum is an error.
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
      field) makes the record invalid JSON; so does a number of more than 1000 digits (reason
      ``field x: number longer than 1000 digits ...`` when a declared field holds it); very long
      strings (10 MB tested) are fine.

Values Spark would change (measured on Spark 4.2: it converts them without failing, so the
parse checks them, in every nesting, as Spark expressions; :mod:`runner.runtime.batches.reasons`):
    - TIMESTAMP, TIMESTAMP_NTZ, DATE are stored for years 0001-9999 (UTC) only: Spark accepts
      ``"+10000-01-01"``, ``"275760-09-13T00:00:00Z"``, year 0 and negative years, which
      Python's datetime (PySpark's ``collect``, pyarrow's ``to_pylist``, so deltalake readers)
      cannot read. Reason ``field ts: timestamp out of range (years 0001-9999...), got ...``
      (``date out of range`` for a DATE).
    - a JSON integer in a TIMESTAMP is epoch SECONDS, accepted from -62135596800
      (0001-01-01) to 253402300799 (9999-12-31T23:59:59). Spark multiplies the seconds by
      10^6 in a long without an overflow check: from 9223372036855 (13 digits; epoch
      microseconds such as 1704067200000000 are 16) the result wraps to any instant, even
      1970-01-01 exactly. Such a number is found by the array read above, which takes the
      TIMESTAMP paths as STRING (a number keeps its digits): a plan shows two ``from_json``,
      each run once per record.
    - TINYINT: Jackson reads 128..255 as a byte and wraps them (128 -> -128): TINYINT fields are
      read as SMALLINT, range-checked (reason ``expected TINYINT, got 128``) and cast back.
    - FLOAT/DOUBLE: a number beyond the maximum (``1e400``, ``3.5e38`` for FLOAT) becomes
      Infinity; JSON has no infinity, so an infinite value is dead (``number out of range``).
    - DECIMAL(p,s) rounds HALF_UP to scale s (kept, above; a SQL cast does the same) and
      rejects more than p - s integer digits (``expected DECIMAL(10,2)``, as before).

Dead-letter reasons name the field (``field request.latency_ms: expected INT, got "abc"``); they
are computed for dead rows only, after the filter (:mod:`runner.runtime.batches.reasons`).

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
from runner.runtime.batches.field_checks import (
    any_of,
    epoch_schema,
    epoch_violation,
    not_null_violation,
    nullable,
    range_violation,
)
from runner.runtime.batches.reasons import (
    as_element,
    as_member,
    dead_letter_reason,
    lone_surrogate,
    parse_type,
)
from runner.sinks.base import quote_column
from runner.spark_errors import first_line

if TYPE_CHECKING:
    from pyspark.sql import Observation

__all__ = ["ParsedBatch", "batch_id_column", "parse_batch", "parse_schema", "prepare_parse",
           "prune_schema", "JSON_OPTIONS", "BATCH_ID_COLUMN", "DEAD_COLUMNS"]

BATCH_ID_COLUMN = "_batch_id"
DEAD_COLUMNS = ("raw", "reason", BATCH_ID_COLUMN)
"""The dead-letter columns, followed by the source's metadata columns."""


def batch_id_column(batch_id: int, anchor: Column) -> Column:
    """``batch_id`` as the BIGINT column ``_batch_id``, kept out of the code Spark generates.

    ``F.lit(batch_id)`` is written into the generated Java as a constant, so every batch's
    plans are new code, compiled again (Janino; the dead-letter reason alone is a large piece of
    Java). Here the id is the only element of an array literal, which the generated code
    references instead of spelling it, read at an index the optimizer cannot fold: the least of
    ``anchor``'s text length (any column of the frame; null is skipped) and 0, always 0. Each
    batch then reuses the code the first one compiled (``tests/spark/test_parse_codegen.py``).
    """
    index = F.least(F.length(anchor.cast("string")), F.lit(0))
    return F.coalesce(F.lit([batch_id]).cast("array<bigint>")[index],
                      F.lit(-1).cast("bigint")).alias(BATCH_ID_COLUMN)

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
"""Strict JSON for every from_json of the parse and of the dead-letter reasons (Spark's defaults
accept single quotes and NaN)."""

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
_ELEMENTS = "__runner_elements"
_ROOT = "v"


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

        Built on first use: its reason expression is large, and a batch without dead letters
        need not pay for building and analysing it."""
        return self.dead_of(self.frame)

    def dead_of(self, frame: DataFrame) -> DataFrame:
        """The dead letters of ``frame``: :attr:`frame` itself or :meth:`counting`'s frame."""
        x = self._exprs
        return (frame.filter(F.col(_KIND).isNotNull()).select(*x.dead_inputs)
                .select(F.col(_RAW).alias("raw"), x.reason,
                        batch_id_column(self.batch_id, F.col(_RAW)), *x.meta))

    def counting(self, observation: Observation) -> DataFrame:
        """:attr:`frame` observing ``rows`` (every record), ``dead`` (dead letters) and
        ``dead_bytes`` (their raw text's UTF-8 bytes, None when there are none) into
        ``observation`` as any action computes it: counts without an action of their own."""
        dead = F.col(_KIND).isNotNull()
        return self.frame.observe(observation, F.count(F.lit(1)).alias("rows"),
                                  F.count_if(dead).alias("dead"),
                                  F.sum(F.when(dead, F.octet_length(F.col(_RAW))))
                                  .alias("dead_bytes"))

    def persist(self) -> ParsedBatch:
        """Persist :attr:`frame` (Spark's default level, ``MEMORY_AND_DISK``); returns
        ``self``. Unpersist ``frame`` when the batch is done."""
        self.frame.persist()
        return self


@lru_cache(maxsize=16)
def parse_schema(schema_ddl: str) -> T.StructType:
    """Parse the project's Spark DDL into a StructType; NOT NULL becomes ``nullable=False``.

    Raises:
        ConfigError: the DDL does not parse or declares no fields.
    """
    try:
        schema = T.StructType.fromDDL(schema_ddl)
    except Exception as e:  # pyspark raises ParseException/AnalysisException subclasses
        raise ConfigError(f"schema: invalid Spark DDL: {first_line(e)}",
                          hint="e.g. 'eventId STRING NOT NULL, ts TIMESTAMP, "
                               "user STRUCT<id: STRING>'") from e
    if not isinstance(schema, T.StructType):
        raise ConfigError(f"schema: invalid Spark DDL: {schema_ddl!r} is a type, not fields",
                          hint="e.g. 'eventId STRING NOT NULL, ts TIMESTAMP, "
                               "user STRUCT<id: STRING>'")
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
    batch = batch_id_column(batch_id, F.col(_KIND))
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
                .otherwise(dead_letter_reason(F.col(_RAW), F.col(_VARIANT),
                                              F.col(_CORRUPT_FLAG), self.schema,
                                              json_options=JSON_OPTIONS))
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

    read_schema = parse_type(schema)
    assert isinstance(read_schema, T.StructType)
    # Read as a wrapper object's member and as a wrapper array's only element: text after the
    # object breaks one or the other (reasons.as_member, as_element); see _checks.
    parse_schema_ = T.StructType([T.StructField(_ROOT, read_schema),
                                  T.StructField(_CORRUPT, T.StringType())])
    options = {**JSON_OPTIONS, "columnNameOfCorruptRecord": _CORRUPT}
    value = F.col("value")
    parsed = F.col(_PARSED).getField(_ROOT)
    corrupt = F.col(_PARSED).getField(_CORRUPT).isNotNull()
    epochs = epoch_schema(schema)
    element = epochs if isinstance(epochs, T.StructType) else T.StructType([])
    # Bytes that are not UTF-8 would otherwise become U+FFFD inside a value, silently.
    bad_utf8 = F.coalesce(~F.is_valid_utf8(value), F.lit(False))
    dead_flag = (parsed.isNull() | corrupt | bad_utf8
                 | _checks(parsed, F.col(_ELEMENTS), schema, epochs)
                 | F.coalesce(lone_surrogate(value), F.lit(False)))  # stored as "?"
    # An optimizer barrier: Spark pushes a Filter below a deterministic Project by inlining
    # the projected expressions, which would run from_json again inside each filter. A
    # nondeterministic column in the parsing Project (spark_partition_id, never negative,
    # referenced by the dead flag so it is not pruned) keeps filters above it: one parse.
    dead_flag = dead_flag | (F.col(_BARRIER) < 0)
    metadata = tuple(_col(c) for c in meta)
    field_cols = tuple(_col(f.name) for f in schema.fields)
    # Fields read as a wider type (TINYINT as SMALLINT) are cast back, in valid rows only (a
    # dead row may hold a value out of the declared type's range).
    kept_fields = tuple(
        F.when(~F.col(_DEAD), _col(f.name).cast(nullable(f.dataType))).alias(f.name)
        if parse_type(f.dataType) != f.dataType else _col(f.name)
        for f in schema.fields)
    return _Expressions(
        parse=(value, *metadata,
               F.from_json(as_member(value, _ROOT), parse_schema_, options).alias(_PARSED),
               F.from_json(as_element(value), T.ArrayType(element), JSON_OPTIONS)
               .alias(_ELEMENTS),
               F.spark_partition_id().alias(_BARRIER)),
        split=(*[parsed.getField(f.name).alias(f.name) for f in schema.fields], *metadata,
               dead_flag.alias(_DEAD), corrupt.alias(_CORRUPT_FLAG), bad_utf8.alias(_BAD_UTF8),
               value),
        # What is cached. The raw text is kept for dead rows only (a cached frame holds it once
        # per dead row), as valid UTF-8 so that every reader can read the dead-letter table.
        # The three flags become one column, null for valid rows (1: corrupt, 2: bad UTF-8):
        # one column is cheaper to cache than three (``bench.parse_profile``). ``_batch_id`` is not
        # in the frame: a constant, it is added after the cache.
        keep_raw=(*kept_fields,
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


def _checks(parsed: Column, elements: Column, schema: T.StructType,
            epochs: T.DataType | None) -> Column:
    """True where a record that parsed is dead all the same: text after its object (the array
    read is not one element), a NOT NULL field missing, a value Spark converts into something
    the record does not say, or TIMESTAMP epoch seconds that wrap around (x 10^6), found in
    the array read's STRINGs."""
    checks = [F.coalesce(F.size(elements) != 1, F.lit(True)),
              not_null_violation(parsed, schema), range_violation(parsed, schema)]
    wrapped = epoch_violation(F.get(elements, 0), epochs) if epochs is not None else None
    if wrapped is not None:
        checks.append(F.coalesce(wrapped, F.lit(False)))
    flag = any_of([c for c in checks if c is not None])
    assert flag is not None
    return flag


def _col(name: str) -> Column:
    """A column by its exact name (dots and backticks are part of the name)."""
    return F.col(quote_column(name))
