"""Dead-letter reasons: why a dead record is dead, in words that name the field.

``field request.latency_ms: expected INT, got "abc"``, ``field errors[1].severity: expected
STRING...``, ``missing NOT NULL field eventId``, ``NOT NULL field eventId is null``, ``not a
JSON object (array)``, ``invalid JSON``. :func:`dead_letter_reason` is a Spark expression over
dead rows only (the parse in :mod:`runner.runtime.batches.parse` finds them): it walks the record as
a VARIANT (``try_parse_json``) against the schema, and checks each leaf with ``from_json`` on the
single value, under the parse's own JSON options, so a reason follows Spark's own conversion rules,
then applies the runner's value checks (:func:`value_out_of_range`, the epoch-seconds range of a
number in a TIMESTAMP) the parse applies.

Value checks shared with the parse (:mod:`runner.runtime.batches.parse`): :func:`parse_type` (the
type ``from_json`` is given for a declared type), :func:`value_out_of_range` (a converted value the
runner does not store), :func:`wrapped_epoch` (a JSON number in a TIMESTAMP whose conversion
overflows) and :func:`lone_surrogate` (an escaped half of a UTF-16 pair); and the two wrappers the
parse reads every record in, :func:`as_member` and :func:`as_element`.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from runner.errors import ConfigError

__all__ = ["TRAILING_REASON", "UNICODE_REASON", "as_element", "as_member", "dead_letter_reason",
           "lone_surrogate", "parse_type", "trailing_content", "value_out_of_range",
           "wrapped_epoch"]

_GOT_CHARS = 80
_MAX_NESTING = 1000
_JSON_WS = " \t\r\n"
_CORRUPT = "__runner_corrupt_record"
TRAILING_REASON = ("invalid JSON: unexpected content after the closing '}' (a second value on "
                   "the line, or trailing text)")
UNICODE_REASON = ("invalid Unicode escape: a lone UTF-16 surrogate (\\ud800-\\udfff without its "
                  "pair) cannot be stored as text")
LONG_NUMBER = "number longer than 1000 digits (the JSON reader's limit)"

# The range of TIMESTAMP, TIMESTAMP_NTZ and DATE values the runner stores: years 0001-9999 (UTC).
# Spark holds years -290308..294247, but Python's datetime (PySpark's collect, pyarrow's
# to_pylist, deltalake's readers through pyarrow) cannot: outside it a table breaks its readers.
_MIN_MICROS, _MAX_MICROS = -62_135_596_800_000_000, 253_402_300_799_999_999
_MIN_DAY, _MAX_DAY = -719_162, 2_932_896  # 0001-01-01, 9999-12-31
_MIN_SECONDS, _MAX_SECONDS = -62_135_596_800, 253_402_300_799
_NTZ_MIN = "TIMESTAMP_NTZ'0001-01-01 00:00:00'"
_NTZ_MAX = "TIMESTAMP_NTZ'9999-12-31 23:59:59.999999'"
#: Spark reads a JSON integer for a TIMESTAMP as seconds and multiplies by 10^6 unchecked: from
#: 9223372036855 s (13 digits) the product wraps around. A 13-digit second count is out of range
#: anyway (beyond 9999-12-31 = 253402300799 s, 12 digits).
_WRAP_DIGITS = 13
# An escape of a UTF-16 surrogate preceded by an even run of backslashes (a real escape, not
# an escaped backslash followed by "u"); a valid pair is a high then a low surrogate escape.
_SURROGATE = r"\\u[dD][89a-fA-F]"
_REAL = r"(?<!\\)((?:\\\\)*)"
_PAIR = _REAL + r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
_LONE = _REAL + r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}"
# A JSON number with more than 1000 digits (Jackson's maxNumberLength), and what replaces it
# to find the field that holds it.
_LONG_NUMBER_RE = (r"-?(?=(?:[.eE+-]{0,2}[0-9]){1001})[0-9]+(?:\.[0-9]+)?"
                   r"(?:[eE][+-]?[0-9]+)?")
_LONG_MARK = "__runner_long_number__"


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
    Used by the reason, over dead rows only; the parse finds the same records more cheaply
    with two reads it makes anyway (:func:`as_member`, :func:`as_element`).
    """
    def one_element(text: Column) -> Column:
        return F.coalesce(F.json_array_length(text) == 1, F.lit(False))

    single = one_element(as_element(raw)) & one_element(as_element(as_member(raw, "k")))
    return (F.when(F.endswith(raw, F.lit("}")), ~single)  # most records: no trimmed copy
            .otherwise(~F.endswith(F.btrim(raw, F.lit(_JSON_WS)), F.lit("}")) | ~single))


def as_member(raw: Column, name: str) -> Column:
    """``{"<name>":raw}``: the record as the value of a member of a wrapping object.

    The parse reads the record this way, so text after the record's object is an error inside
    the wrapper (``{"v":{..} x}``) unless it starts with ``}`` (which closes the wrapper early;
    Jackson ignores what follows) or ``,`` (more members); :func:`as_element` finds those two.
    A JSON ``null`` becomes a null member; anything else that is not an object, a type error.
    """
    return F.concat(F.lit('{"' + name + '":'), raw, F.lit("}"))


def as_element(raw: Column) -> Column:
    """``[raw]``: the record as the only element of a wrapping array, which it is not when text
    follows its object: a ``}`` there is an error, a ``,`` makes more elements (or an error);
    only a ``]`` closes the wrapper early, which :func:`as_member` finds."""
    return F.concat(F.lit("["), raw, F.lit("]"))


def parse_type(dtype: T.DataType) -> T.DataType:
    """The type ``from_json`` is given for the declared ``dtype``: TINYINT is read as SMALLINT
    (Jackson reads 128..255 as a byte and wraps it to -128..-1) and range-checked
    (:func:`value_out_of_range`); everything else as declared, nested types recursively."""
    if isinstance(dtype, T.ByteType):
        return T.ShortType()
    if isinstance(dtype, T.StructType):
        return T.StructType([T.StructField(f.name, parse_type(f.dataType), f.nullable, f.metadata)
                             for f in dtype.fields])
    if isinstance(dtype, T.ArrayType):
        return T.ArrayType(parse_type(dtype.elementType), dtype.containsNull)
    if isinstance(dtype, T.MapType):
        return T.MapType(dtype.keyType, parse_type(dtype.valueType), dtype.valueContainsNull)
    return dtype


def value_out_of_range(x: Column, dtype: T.DataType) -> Column | None:
    """True where the converted leaf value ``x`` (of :func:`parse_type` of ``dtype``, not null)
    is one the runner does not store; None when every converted value of ``dtype`` is stored.

    - TIMESTAMP, TIMESTAMP_NTZ, DATE: outside years 0001-9999 (Spark accepts ``+10000-01-01``
      and ``275760-09-13``, which Python's datetime, pyarrow's ``to_pylist`` and PySpark's
      ``collect`` cannot read);
    - TINYINT: outside -128..127 (read as SMALLINT, see :func:`parse_type`);
    - FLOAT, DOUBLE: infinite. JSON has no infinity (``Infinity`` is invalid JSON), so an
      infinite value is a number beyond the type's maximum (``1e400``) that Jackson rounded.
    """
    if isinstance(dtype, T.TimestampType):
        return ~F.unix_micros(x).between(_MIN_MICROS, _MAX_MICROS)
    if isinstance(dtype, T.TimestampNTZType):
        return ~x.between(F.expr(_NTZ_MIN), F.expr(_NTZ_MAX))
    if isinstance(dtype, T.DateType):
        return ~F.unix_date(x).between(_MIN_DAY, _MAX_DAY)
    if isinstance(dtype, T.ByteType):
        return ~x.between(-128, 127)
    if isinstance(dtype, (T.FloatType, T.DoubleType)):
        return F.abs(x) == F.lit(float("inf"))
    return None


def wrapped_epoch(text: Column) -> Column:
    """True where ``text``, a TIMESTAMP's value read as STRING (a JSON number keeps its digits,
    a JSON string its content), is a JSON integer whose epoch seconds Spark multiplies into a
    wrapped-around value (13 digits or more: beyond 9999 anyway). A digits-only JSON *string*
    that long never converts to a TIMESTAMP (the parse marks it corrupt), so it cannot be
    mistaken for one. Byte tests first: it runs on every record's TIMESTAMP values, and a
    string such as ``2024-01-01T10:00:00Z`` is long enough but holds a ``:``."""
    return ((F.length(text) >= _WRAP_DIGITS) & ~F.contains(text, F.lit(":"))
            & text.rlike(r"^-?[0-9]+$"))


def lone_surrogate(raw: Column) -> Column:
    """True where the JSON text ``raw`` escapes a lone UTF-16 surrogate (``"\\ud800"``, a low
    surrogate without its high one): Spark's ``from_json`` stores it as ``?``. The cheap tests
    first (``\\u`` anywhere, then a surrogate escape); valid pairs are removed before the last
    test. An escaped backslash followed by ``ud800`` is text, not an escape."""
    return (F.contains(raw, F.lit("\\u")) & raw.rlike(_SURROGATE)
            & F.regexp_replace(raw, _PAIR, "$1").rlike(_LONE))


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
    # A number longer than Jackson's limit makes the record invalid JSON (and no VARIANT):
    # with each such number replaced by a marker string, the record is read again to name
    # the field that holds it.
    long_v = F.when(v.isNull() & corrupt & raw.rlike(_LONG_NUMBER_RE),
                    F.try_parse_json(F.regexp_replace(raw, _LONG_NUMBER_RE, f'"{_LONG_MARK}"')))
    long_field = _long_number_reason(long_v, schema, None)
    return (
        F.when(raw.isNull(), F.lit("empty record (null value)"))
        .when(F.btrim(raw, F.lit(_JSON_WS)) == "", F.lit("empty record (whitespace only)"))
        .when(long_v.isNotNull(), F.coalesce(
            long_field, F.lit(f"invalid JSON: {LONG_NUMBER}, outside the declared fields")))
        .when(v.isNull() & corrupt, invalid)
        .when(v.isNull() & lone_surrogate(raw), F.lit(UNICODE_REASON))
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
    # A leaf: ask Spark's own JSON converter about this single value, then the runner's checks.
    probe_schema = T.StructType([T.StructField("x", parse_type(dtype)),
                                 T.StructField(_CORRUPT, T.StringType())])
    probe = F.from_json(F.concat(F.lit('{"x":'), F.to_json(v), F.lit("}")), probe_schema,
                        {**options, "columnNameOfCorruptRecord": _CORRUPT})
    cases: list[tuple[Column, Column]] = []
    if isinstance(dtype, (T.FloatType, T.DoubleType)):
        # A VARIANT reads a number beyond DOUBLE's maximum as Infinity (as JSON: "Infinity").
        infinite = ((F.schema_of_variant(v) == "DOUBLE")
                    & (F.abs(F.try_variant_get(v, "$", "double")) == F.lit(float("inf"))))
        cases.append((infinite, _out_of_range(path, dtype, v)))
    cases.append((probe.getField(_CORRUPT).isNotNull(), _mismatch(path, _type_name(dtype), v)))
    x = probe.getField("x")
    out = value_out_of_range(x, dtype)
    if out is not None and isinstance(dtype, T.TimestampType):
        # a JSON integer: its seconds, whatever the (possibly wrapped) converted value says
        seconds = F.when(F.schema_of_variant(v) == "BIGINT",
                         F.try_variant_get(v, "$", "bigint"))
        out = F.coalesce(out, F.lit(False)) | F.coalesce(
            ~seconds.between(_MIN_SECONDS, _MAX_SECONDS), F.lit(False))
    if out is not None:
        cases.append((x.isNotNull() & out, _out_of_range(path, dtype, v)))
    reason = F.when(*cases[0])
    for condition, value in cases[1:]:
        reason = reason.when(condition, value)
    return reason


def _element_reason(e: Column, dtype: T.DataType, contains_null: bool, path: Column,
                    options: Mapping[str, str]) -> Column:
    is_null = e.isNull() | F.is_variant_null(e)
    sub = _value_reason(e, dtype, path, options)
    present = F.when(~is_null, sub) if sub is not None else F.lit(None).cast("string")
    if contains_null:
        return present
    return F.when(is_null, F.concat(F.lit("NOT NULL element "), path, F.lit(" is null"))
                  ).otherwise(present)


def _out_of_range(path: Column, dtype: T.DataType, v: Column) -> Column:
    if isinstance(dtype, T.ByteType):
        return _mismatch(path, "TINYINT", v)  # as an INT overflow reads: expected INT, got ...
    if isinstance(dtype, (T.FloatType, T.DoubleType)):  # v holds Infinity, not the number
        return F.concat(F.lit("field "), path,
                        F.lit(f": number out of range for {_type_name(dtype)}"))
    kind = "date" if isinstance(dtype, T.DateType) else "timestamp"
    epoch = "; a JSON number is epoch seconds" if isinstance(dtype, T.TimestampType) else ""
    return F.concat(F.lit("field "), path,
                    F.lit(f": {kind} out of range (years 0001-9999{epoch}), got "),
                    _shown(v))


def _long_number_reason(v: Column, dtype: T.DataType, path: Column | None) -> Column:
    """The first declared field of ``v`` (the record with long numbers marked) holding one."""
    if isinstance(dtype, T.StructType) or path is None:
        assert isinstance(dtype, T.StructType)
        parts = [_long_number_reason(
            F.variant_get(v, _variant_path(f.name), "variant"), f.dataType,
            F.lit(f.name) if path is None else F.concat(path, F.lit("." + f.name)))
            for f in dtype.fields]
        return F.coalesce(*parts, F.lit(None).cast("string"))
    if isinstance(dtype, T.ArrayType):
        element_type = dtype.elementType
        per_element = F.transform(
            F.try_variant_get(v, "$", "array<variant>"), lambda e, i: _long_number_reason(
                e, element_type, F.concat(path, F.lit("["), i.cast("string"), F.lit("]"))))
        return F.get(F.filter(per_element, lambda r: r.isNotNull()), 0)
    if isinstance(dtype, T.MapType):
        value_type = dtype.valueType
        per_value = F.transform(
            F.map_entries(F.try_variant_get(v, "$", "map<string,variant>")),
            lambda kv: _long_number_reason(
                kv.getField("value"), value_type,
                F.concat(path, F.lit('["'), kv.getField("key"), F.lit('"]'))))
        return F.get(F.filter(per_value, lambda r: r.isNotNull()), 0)
    return F.when(F.try_variant_get(v, "$", "string") == _LONG_MARK,
                  F.concat(F.lit("field "), path, F.lit(f": {LONG_NUMBER}")))


def _shown(v: Column) -> Column:
    got = F.to_json(v)
    return F.when(F.length(got) > _GOT_CHARS,
                  F.concat(F.substring(got, 1, _GOT_CHARS), F.lit("..."))).otherwise(got)


def _mismatch(path: Column, expected: str, v: Column) -> Column:
    return F.concat(F.lit("field "), path, F.lit(f": expected {expected}, got "), _shown(v))


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
