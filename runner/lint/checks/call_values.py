"""What Spark's analyser checks of a call's argument values, beyond each position's basic
type (:mod:`runner.lint.reading.calls` reads the calls, :mod:`.signatures` reports): a ``NULL``
literal where a function refuses one, a higher-order function given a constant of the wrong type
where its function goes, constants out of range, ``pmod`` and ``try_add``... as the operators they
are, ``mask``'s replacement characters, ``ceil``/``floor``'s scale, ``time_bucket``'s origin,
``to_binary``'s format, ``format_string``'s and ``to_number``'s constant formats, the tuple
sketches' ``lgNomEntries`` and ``mode``, ``to_avro``'s schema, an SRID no spatial type takes,
``aggregate``'s constant merge of another type than its start value,
and arrays of another element type where a position casts no elements.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from sqlglot import exp

from runner.lint.checks.call_constants import avro_schema, format_constant, sketch_parameter
from runner.lint.reading.calls import Call, sql_text
from runner.lint.spark_types.builtins import TYPE_NAMES, arg_type, operator_refuses, value_type
from runner.lint.spark_types.coercion import same_type
from runner.lint.spark_types.expr_types import spark_type
from runner.lint.spark_types.infer import element_type, is_known, parse_type, type_string
from runner.lint.spark_types.spatial import literal_srid, spatial_srid, spatial_type, srid_supported

__all__ = ["element_mismatch", "outer_kinds", "value_problem"]

T = exp.DType


def value_problem(call: Call) -> tuple[int, str, str] | None:
    """(offset, message, hint) of the first value ``call``'s arguments are refused for, or
    None: its function argument, a constant out of range, pmod's operands, a NULL literal
    (this last only for the argument counts functions.json's records hold for)."""
    found = _function_argument(call) or _out_of_range(call) or _as_operator(call) or \
        _field_names(call) or _single_characters(call) or _int_constant(call) or \
        _same_timestamps(call) or _named_constant(call) or format_constant(call) or \
        sketch_parameter(call) or avro_schema(call) or _srid(call) or _merge_type(call)
    if found is None and call.signature.checks_arguments_of(len(call.args)):
        found = _null_argument(call)
    return found


def outer_kinds(required: str) -> str:
    """Spark's required type with what is inside ``<...>`` (and parentheses) left out:
    ``ARRAY<STRUCT>`` is an ARRAY, ``(ARRAY or MAP)`` either."""
    out, depth = [], 0
    for ch in required.upper():
        depth += ch == "<"
        if depth == 0:
            out.append(" " if ch in "()" else ch)
        depth -= ch == ">"
    return "".join(out)


def element_mismatch(node: exp.Expr, required: str) -> str | None:
    """The argument's type when it is an array whose element type is not the one a position
    that takes no other requires: ``vector_norm(array(1, 2))`` (ARRAY<INT>; ARRAY<FLOAT>
    required). Strict means Spark refused an ARRAY<INT> there (no implicit cast of the
    elements: ``array_join`` casts them, and is left alone), so only ``ARRAY<X>`` positions
    that refuse ``array`` reach here; None when they match or lint does not know them."""
    dtype = value_type(node)
    inner = element_type(dtype)
    want = parse_type(required) if required.upper().startswith("ARRAY<") else None
    wanted = element_type(want)
    if wanted is None or wanted.expressions or not is_known(inner) or "(" in required or \
            inner.this is wanted.this:
        return None  # the same kind (ARRAY<STRUCT> takes any struct), or unknown
    return type_string(dtype) if inner.this is not T.NULL else "ARRAY<VOID>"


#: Higher-order functions whose function argument Spark wraps in a lambda when it is no
#: lambda (``filter(arr, 1)``): its position, the type it must return, the error class.
_FUNCTION_ARGUMENTS: dict[str, tuple[int, frozenset[str], str]] = {
    name: (1, frozenset({"boolean"}), "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE")
    for name in ("filter", "exists", "forall", "map_filter")}
_FUNCTION_ARGUMENTS["array_sort"] = (1, frozenset({"int"}),
                                     "DATATYPE_MISMATCH.UNEXPECTED_RETURN_TYPE")
_FUNCTION_ARGUMENTS["transform_keys"] = (1, frozenset(), "DATATYPE_MISMATCH.INVALID_MAP_KEY_TYPE")


def _function_argument(call: Call) -> tuple[int, str, str] | None:
    """A higher-order function given a constant of a type its function may not return
    (``filter(arr, 1)``: Spark wants a BOOLEAN) or, for ``transform_keys``, a map key type
    Spark refuses (a MAP)."""
    rule = _FUNCTION_ARGUMENTS.get(call.name)
    arg = call.args[rule[0]] if rule is not None and len(call.args) > rule[0] else None
    if rule is None or arg is None or arg.node is None or arg.is_lambda or arg.name:
        return None
    kind = arg_type(arg.node)
    if call.name == "transform_keys":
        bad = kind == "map"
    else:
        bad = kind is not None and kind not in rule[1] and kind not in (
            "string", "string_literal")
    if not bad:
        return None
    wanted = "a MAP key type (no MAP)" if call.name == "transform_keys" else \
        " or ".join(sorted(k.upper() for k in rule[1]))
    return (arg.start, f"[{rule[2]}] argument {rule[0] + 1} of {call.name}() is a function "
            f"that must return {wanted}, not {TYPE_NAMES.get(kind or '', kind)}: "
            f"{sql_text(arg.node)}", "write a lambda (x -> ...) that returns it")


#: Constant arguments Spark checks the value of ([DATATYPE_MISMATCH.VALUE_OUT_OF_RANGE]): the
#: function, the position, what it must be (Spark's TimeBucket: a positive bucket size;
#: RegExpReplace: a position from 1).
_POSITIVE: dict[str, tuple[int, str]] = {
    "time_bucket": (0, "a positive interval"),
    "regexp_replace": (3, "a position from 1"),
}
_UNIT_SIZES = {"YEAR": ("ym", 12), "MONTH": ("ym", 1), "WEEK": ("dt", 7 * 86_400_000_000),
               "DAY": ("dt", 86_400_000_000), "HOUR": ("dt", 3_600_000_000),
               "MINUTE": ("dt", 60_000_000), "SECOND": ("dt", 1_000_000)}


def _constant_value(node: exp.Expr) -> tuple[str, Decimal] | None:
    """An integer or single-unit interval constant's (family, value): ``5`` is
    ``("int", 5)``, ``INTERVAL '15' MINUTE - INTERVAL '20' MINUTE`` ``("dt", -300000000)``
    (microseconds); None for anything else."""
    node = node.unnest()
    if isinstance(node, exp.Literal) and node.is_int:
        return "int", Decimal(node.name)
    if isinstance(node, exp.Neg):
        inner = _constant_value(node.this)
        return (inner[0], -inner[1]) if inner else None
    if isinstance(node, exp.Interval) and isinstance(node.this, exp.Literal):
        unit = node.args.get("unit")
        size = _UNIT_SIZES.get(unit.name.upper().rstrip("S")) if isinstance(
            unit, exp.Var) else None
        try:
            return (size[0], Decimal(node.this.name.strip()) * size[1]) if size else None
        except InvalidOperation:
            return None
    if isinstance(node, (exp.Add, exp.Sub)):
        a, b = _constant_value(node.this), _constant_value(node.expression)
        if a is None or b is None or a[0] != b[0] or a[0] == "int":
            return None
        return a[0], a[1] + b[1] if isinstance(node, exp.Add) else a[1] - b[1]
    return None


def _out_of_range(call: Call) -> tuple[int, str, str] | None:
    """A constant argument whose value Spark refuses (``time_bucket(INTERVAL '0' SECOND, ts)``,
    ``regexp_replace(s, p, r, 0)``)."""
    rule = _POSITIVE.get(call.name)
    arg = call.args[rule[0]] if rule is not None and len(call.args) > rule[0] else None
    if rule is None or arg is None or arg.node is None or arg.name is not None:
        return None
    value = _constant_value(arg.node)
    if value is None or value[1] > 0:
        return None
    return (arg.start, f"[DATATYPE_MISMATCH.VALUE_OUT_OF_RANGE] argument {rule[0] + 1} of "
            f"{call.name}() must be {rule[1]}, not {sql_text(arg.node)}", f"pass {rule[1]}")


#: Functions that are Spark's binary arithmetic under another name (``Pmod`` extends
#: ``BinaryArithmetic``, like ``%``; ``TryAdd``'s replacement is an ``Add``, ``TrySubtract``'s a
#: ``Subtract``, ``TryMultiply``'s a ``Multiply``): their operands are checked as the
#: operator's.
_OPERATOR_FUNCTIONS = {"pmod": "%", "try_add": "+", "try_subtract": "-", "try_multiply": "*"}


def _as_operator(call: Call) -> tuple[int, str, str] | None:
    """``pmod('1', '1')``: operands the operator refuses (``[BINARY_OP_WRONG_TYPE]``...)."""
    op = _OPERATOR_FUNCTIONS.get(call.name)
    if op is None or len(call.args) != 2 or any(a.node is None or a.name for a in call.args):
        return None
    left, right = (arg_type(a.node) for a in call.args if a.node is not None)
    error = operator_refuses(op, left, right) if left and right else None
    if error is None or left is None or right is None:
        return None
    return (call.start, f"[{error}] {call.name}() is Spark's {op} operator, which has no "
            f"{TYPE_NAMES[left]} {op} {TYPE_NAMES[right]}",
            "cast an operand so that both have types the operator takes")


def _null_argument(call: Call) -> tuple[int, str, str] | None:
    """A ``NULL`` literal where Spark refuses one (``explode(NULL)``: VOID is no ARRAY or
    MAP; ``schema_of_json(NULL)``: [DATATYPE_MISMATCH.UNEXPECTED_NULL])."""
    for i, error in call.signature.nulls.items():
        arg = call.args[i] if i < len(call.args) else None
        if arg is not None and arg.name is None and arg.is_null:
            rule = call.signature.types.get(i)
            needs = f" must be {rule[0]}" if rule else " must not be NULL"
            return (arg.start, f"[{error}] argument {i + 1} of {call.name}(){needs}, not a "
                    "NULL literal", "cast it: CAST(NULL AS <type>) (or pass a value)")
    return None


def _field_names(call: Call) -> tuple[int, str, str] | None:
    """``json_tuple(json, 1)``: Spark's JsonTuple takes strings only, the JSON and every field
    name (a NULL literal is VOID, no string: ``[DATATYPE_MISMATCH.NON_STRING_TYPE]``)."""
    if call.name != "json_tuple":
        return None
    for i, arg in enumerate(call.args):
        kind = arg_type(arg.node) if arg.node is not None and arg.name is None else None
        if arg.is_null or (kind is not None and kind not in ("string", "string_literal")):
            shown = "NULL" if arg.is_null else TYPE_NAMES.get(kind or "", kind)
            return (arg.start, f"[DATATYPE_MISMATCH.NON_STRING_TYPE] argument {i + 1} of "
                    f"json_tuple() must be a STRING, not {shown}",
                    "json_tuple takes the JSON and the field names as strings: quote them")
    return None


#: Functions whose constant string arguments at these positions must be one character long
#: (Spark's Mask: the replacement for upper, lower, digit and other characters; NULL keeps
#: them): ``[DATATYPE_MISMATCH.INPUT_SIZE_NOT_ONE]``.
_ONE_CHARACTER: dict[str, range] = {"mask": range(1, 5)}


def _single_characters(call: Call) -> tuple[int, str, str] | None:
    """``mask(s, 'Qa')``: a replacement character given as a string literal not one character
    long (``''`` too)."""
    positions = _ONE_CHARACTER.get(call.name, range(0))
    for i, arg in enumerate(call.args):
        node = arg.node.unnest() if arg.node is not None else None
        if i in positions and arg.name is None and isinstance(node, exp.Literal) and \
                node.is_string and len(node.name) != 1:
            return (arg.start, f"[DATATYPE_MISMATCH.INPUT_SIZE_NOT_ONE] argument {i + 1} of "
                    f"{call.name}() must be one character, not {sql_text(node)}",
                    "pass a single character (or NULL to leave those characters as they are)")
    return None


#: Functions whose argument at this position must be a non-NULL constant INT (Spark's
#: CeilFloorExpressionBuilderBase: the scale; anything else is
#: ``[NON_FOLDABLE_ARGUMENT]``, NULL and ``'a'`` included).
_INT_CONSTANT: dict[str, int] = {"ceil": 1, "ceiling": 1, "floor": 1}


def _int_constant(call: Call) -> tuple[int, str, str] | None:
    """``ceil(2.5, NULL)``, ``floor(2.5, 'a')``: a scale that is no INT constant (a column
    there is the ``literal`` record's)."""
    i = _INT_CONSTANT.get(call.name, -1)
    arg = call.args[i] if 0 <= i < len(call.args) else None
    if arg is None or arg.name is not None:
        return None
    if arg.is_null:
        shown = "NULL"
    elif arg.node is not None and arg_type(arg.node) not in (None, "int"):
        shown = sql_text(arg.node)
    else:
        return None
    return (arg.start, f"[NON_FOLDABLE_ARGUMENT] argument {i + 1} of "
            f"{call.name}() must be a constant INT, not {shown}", "pass an integer literal")


#: Functions whose arguments at these positions must have one timestamp type (Spark's
#: TimeBucket: the origin is of the timestamp's type, TIMESTAMP or TIMESTAMP_NTZ).
_SAME_TIMESTAMPS: dict[str, tuple[int, int]] = {"time_bucket": (1, 2)}


def _same_timestamps(call: Call) -> tuple[int, str, str] | None:
    """``time_bucket(i, <timestamp>, <timestamp_ntz>)``: a TIMESTAMP with a TIMESTAMP_NTZ."""
    pair = _SAME_TIMESTAMPS.get(call.name)
    if pair is None or len(call.args) <= max(pair):
        return None
    first, second = call.args[pair[0]], call.args[pair[1]]
    if first.node is None or second.node is None or first.name or second.name:
        return None
    kinds = arg_type(first.node), arg_type(second.node)
    if set(kinds) != {"timestamp", "timestamp_ntz"} or kinds[1] is None:
        return None
    return (second.start, f"[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] argument {pair[1] + 1} "
            f"of {call.name}() must be a {TYPE_NAMES[kinds[0] or '']} as argument "
            f"{pair[0] + 1} is, not {TYPE_NAMES[kinds[1]]}: {sql_text(second.node)}",
            "cast one of them so that both have one timestamp type")


#: Functions whose constant argument at this position is one of a few names (any case):
#: Spark's ToBinary takes the formats below ([DATATYPE_MISMATCH.INVALID_ARG_VALUE]).
_NAMED_CONSTANTS: dict[str, tuple[int, frozenset[str]]] = {
    "to_binary": (1, frozenset({"hex", "utf-8", "utf8", "base64"}))}


def _named_constant(call: Call) -> tuple[int, str, str] | None:
    """``to_binary(s, 'invalidFormat')``, ``to_binary(s, 1)``: a constant that is none of
    the names the position takes (a NULL literal and columns are left alone)."""
    rule = _NAMED_CONSTANTS.get(call.name)
    arg = call.args[rule[0]] if rule is not None and len(call.args) > rule[0] else None
    node = arg.node.unnest() if arg is not None and arg.node is not None else None
    if rule is None or arg is None or arg.name is not None or not isinstance(node, exp.Literal) \
            or (node.is_string and node.name.lower() in rule[1]):
        return None
    names = ", ".join(f"'{n}'" for n in sorted(rule[1]))
    return (arg.start, f"[DATATYPE_MISMATCH.INVALID_ARG_VALUE] argument {rule[0] + 1} of "
            f"{call.name}() must be one of {names}, not {sql_text(node)}", f"pass one of {names}")


def _srid(call: Call) -> tuple[int, str, str] | None:
    """``ST_GEOMFROMWKB(wkb, 9999)``, ``ST_SETSRID(geography, 3857)``: an INT literal SRID the
    result's type does not take (Spark's ``STExpressionUtils.geospatialTypeWithSrid`` builds
    ``GeometryType(srid)`` or ``GeographyType(srid)``: [ST_INVALID_SRID_VALUE]). Another SRID
    argument, or a ``ST_SETSRID`` of a value lint cannot type, is left alone."""
    if call.name not in ("st_geomfromwkb", "st_setsrid") or len(call.args) != 2 or \
            any(a.node is None or a.name for a in call.args):
        return None
    first, second = (a.node for a in call.args if a.node is not None)
    if call.name == "st_geomfromwkb":
        kind = "geometry"
    else:
        typed = spatial_srid(spatial_type(first))
        if typed is None:
            return None
        kind = typed[0]
    srid = literal_srid(second)
    if srid is None or srid_supported(kind, srid):
        return None
    takes = "a geographic SRID (4326...)" if kind == "geography" else "a registered SRID or 0"
    return (call.args[1].start, f"[ST_INVALID_SRID_VALUE] {call.name}() makes a "
            f"{kind.upper()}, which takes no SRID {srid}: {sql_text(second)}",
            f"pass {takes}")


def _merge_type(call: Call) -> tuple[int, str, str] | None:
    """``aggregate(arr, map(), map('a', 1))``: a merge function that is no lambda (Spark wraps
    the constant in one) whose type is not the start value's (Spark's ArrayAggregate, by
    ``equalsStructurally``; ``map()`` is MAP<VOID, VOID>, ``array()`` ARRAY<VOID>). A lambda's
    type is left alone."""
    if call.name not in ("aggregate", "reduce") or len(call.args) < 3:
        return None
    zero, merge = call.args[1], call.args[2]
    if zero.name or merge.name or merge.is_lambda or zero.node is None or merge.node is None:
        return None
    start, result = spark_type(zero.node), spark_type(merge.node)
    if start is None or result is None or same_type(start, result, names=False):
        return None
    return (merge.start, f"[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] argument 3 of "
            f"{call.name}() must be of the start value's type {start}, not {result}: "
            f"{sql_text(merge.node)}", "give the start value and the merge function one type "
            "(cast one of them)")
