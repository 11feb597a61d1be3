"""Dead-letter reasons: why a dead record is dead, in words that name the field.

``field request.latency_ms: expected INT, got "abc"``, ``field errors[1].severity: expected
STRING...``, ``missing NOT NULL field eventId``, ``NOT NULL field eventId is null``, ``not a
JSON object (array)``, ``invalid JSON``. :func:`dead_letter_reason` is a Spark expression over
dead rows only (the parse in :mod:`runner.runtime.parse` finds them): it walks the record as a
VARIANT (``try_parse_json``) against the schema, and checks each leaf with ``from_json`` on the
single value, under the parse's own JSON options, so a reason follows Spark's own conversion
rules.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from runner.errors import ConfigError

__all__ = ["TRAILING_REASON", "dead_letter_reason", "trailing_content"]

_GOT_CHARS = 80
_MAX_NESTING = 1000
_JSON_WS = " \t\r\n"
_CORRUPT = "__runner_corrupt_record"
TRAILING_REASON = ("invalid JSON: unexpected content after the closing '}' (a second value on "
                   "the line, or trailing text)")


def trailing_content(raw: Column) -> Column:
    """True where text follows the record's first JSON value (``{..}{..}``, ``{..} x``).

    Spark's JSON reader (Jackson) reads the first complete value and ignores the rest, so
    ``from_json`` alone takes ``{"a":1}{"a":2}`` as ``{"a":1}``. Meant for records that parsed
    as an object: ``raw`` is ``ws O R`` with ``O`` the object, and the result is true when the
    trailing text ``R`` is not whitespace only:
        - ``R`` does not end in ``}`` (a byte comparison, the cheap test, first);
        - ``[raw]`` is not a JSON array of exactly one element: true for every ``R`` except
          one starting with ``]`` (that closes the wrapper early; Jackson ignores the rest);
        - ``[{"k":raw}]`` is not a JSON array of exactly one element: true for every ``R``
          starting with ``]`` (an error inside the object).
    So the three leave no trailing content through. A wrapper adds one level of nesting: a
    record nested exactly 1000 levels deep (Jackson's limit) is dead with this reason.
    ``json_array_length`` tokenises the wrappers without converting values (measured: the
    parse of 1M seed-shaped records about 1.5 s slower on 2 cores; docs/OPERATIONS.md).
    """
    def one_element(text: Column) -> Column:
        return F.coalesce(F.json_array_length(text) == 1, F.lit(False))

    single = (one_element(F.concat(F.lit("["), raw, F.lit("]")))
              & one_element(F.concat(F.lit('[{"k":'), raw, F.lit("}]"))))
    return (F.when(F.endswith(raw, F.lit("}")), ~single)  # most records: no trimmed copy
            .otherwise(~F.endswith(F.btrim(raw, F.lit(_JSON_WS)), F.lit("}")) | ~single))


def dead_letter_reason(raw: Column, v: Column, corrupt: Column, schema: T.StructType, *,
                       json_options: Mapping[str, str]) -> Column:
    """Why the record is dead.

    Args:
        raw: the record's text.
        v: the record as a VARIANT (null when it is not JSON).
        corrupt: whether the parse found the record malformed.
        schema: the schema the record was parsed with.
        json_options: the parse's ``from_json`` options (leaves are checked with them).
    """
    brackets = F.length(raw) - F.length(F.translate(raw, "[{", ""))
    invalid = F.when(brackets > _MAX_NESTING,
                     F.lit(f"invalid JSON (or nested deeper than {_MAX_NESTING} levels)")
                     ).otherwise(F.lit("invalid JSON"))
    fields = _fields_reason(v, schema, None, json_options)  # None: STRINGs only, always fit
    return (
        F.when(raw.isNull(), F.lit("empty record (null value)"))
        .when(F.btrim(raw, F.lit(_JSON_WS)) == "", F.lit("empty record (whitespace only)"))
        .when(v.isNull() & corrupt, invalid)
        .when(v.isNull(), F.lit("record could not be inspected (larger than 16 MiB?): it does "
                                "not match the schema"))
        .when(~_is_object(v), F.concat(F.lit("not a JSON object ("), _kind(v), F.lit(")")))
        .when(trailing_content(raw), F.lit(TRAILING_REASON))
        .otherwise(F.coalesce(
            *[r for r in [fields] if r is not None],
            F.lit("does not match the schema (no single field identified)")))
    )


def _fields_reason(v: Column, dtype: T.StructType, path: Column | None,
                   options: Mapping[str, str]) -> Column | None:
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
        sub = _value_reason(child, field.dataType, child_path, options)
        if sub is not None:
            reasons.append(F.when(child.isNotNull() & ~F.is_variant_null(child), sub))
    return F.coalesce(*reasons) if len(reasons) > 1 else (reasons[0] if reasons else None)


def _value_reason(v: Column, dtype: T.DataType, path: Column,
                  options: Mapping[str, str]) -> Column | None:
    """Why the (present, non-null) JSON value ``v`` does not fit ``dtype``; None if it
    always fits."""
    if isinstance(dtype, T.StructType):
        inner = _fields_reason(v, dtype, path, options)
        shape = F.when(~_is_object(v), _mismatch(path, "STRUCT (a JSON object)", v))
        return shape if inner is None else F.coalesce(shape, inner)
    if isinstance(dtype, T.ArrayType):
        as_array = F.try_variant_get(v, "$", "array<variant>")
        shape = F.when(as_array.isNull(), _mismatch(path, "ARRAY", v))
        element_type, contains_null = dtype.elementType, dtype.containsNull
        per_element = F.transform(as_array, lambda e, i: _element_reason(
            e, element_type, contains_null,
            F.concat(path, F.lit("["), i.cast("string"), F.lit("]")), options))
        first = F.get(F.filter(per_element, lambda r: r.isNotNull()), 0)
        return F.coalesce(shape, first)
    if isinstance(dtype, T.MapType):
        as_map = F.try_variant_get(v, "$", "map<string,variant>")
        shape = F.when(as_map.isNull(), _mismatch(path, "MAP (a JSON object)", v))
        value_type, value_null = dtype.valueType, dtype.valueContainsNull
        per_value = F.transform(F.map_entries(as_map), lambda kv: _element_reason(
            kv.getField("value"), value_type, value_null,
            F.concat(path, F.lit('["'), kv.getField("key"), F.lit('"]')), options))
        first = F.get(F.filter(per_value, lambda r: r.isNotNull()), 0)
        return F.coalesce(shape, first)
    if isinstance(dtype, (T.StringType, T.VariantType)):
        return None
    # A leaf: ask Spark's own JSON converter about this single value.
    probe_schema = T.StructType([T.StructField("x", dtype),
                                 T.StructField(_CORRUPT, T.StringType())])
    probe = F.from_json(F.concat(F.lit('{"x":'), F.to_json(v), F.lit("}")), probe_schema,
                        {**options, "columnNameOfCorruptRecord": _CORRUPT})
    return F.when(probe.getField(_CORRUPT).isNotNull(), _mismatch(path, _type_name(dtype), v))


def _element_reason(e: Column, dtype: T.DataType, contains_null: bool, path: Column,
                    options: Mapping[str, str]) -> Column:
    is_null = e.isNull() | F.is_variant_null(e)
    sub = _value_reason(e, dtype, path, options)
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
