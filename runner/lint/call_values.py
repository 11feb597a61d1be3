"""What Spark's analyser checks of a call's argument values, beyond each position's basic
type (:mod:`.calls` reads the calls, :mod:`.signatures` reports): a ``NULL`` literal where a
function refuses one, a higher-order function given a constant of the wrong type where its
function goes, constants out of range, ``pmod`` and ``try_add``... as the operators they are,
``mask``'s replacement characters, ``ceil``/``floor``'s scale, ``time_bucket``'s origin,
``to_binary``'s format, ``format_string``'s and ``to_number``'s constant formats, the tuple
sketches' ``lgNomEntries`` and ``mode``, ``to_avro``'s schema, ``aggregate``'s constant merge,
and arrays of another element type where a position casts no elements.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from sqlglot import exp

from runner.lint.builtins import TYPE_NAMES, arg_type, operator_refuses, value_type
from runner.lint.calls import Call
from runner.lint.infer import element_type, is_known, parse_type, type_string
from runner.lint.number_format import number_format_problem

__all__ = ["element_mismatch", "outer_kinds", "value_problem"]

T = exp.DType


def _sql(node: exp.Expr) -> str:
    return node.sql(dialect="spark", comments=False)


def value_problem(call: Call) -> tuple[int, str, str] | None:
    """(offset, message, hint) of the first value ``call``'s arguments are refused for, or
    None: its function argument, a constant out of range, pmod's operands, a NULL literal
    (this last only for the argument counts functions.json's records hold for)."""
    found = _function_argument(call) or _out_of_range(call) or _as_operator(call) or \
        _field_names(call) or _single_characters(call) or _int_constant(call) or \
        _same_timestamps(call) or _named_constant(call) or _format_constant(call) or \
        _sketch_parameter(call) or _avro_schema(call) or _aggregate_merge(call)
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
            f"{_sql(arg.node)}", "write a lambda (x -> ...) that returns it")


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
            f"{call.name}() must be {rule[1]}, not {_sql(arg.node)}", f"pass {rule[1]}")


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
                    f"{call.name}() must be one character, not {_sql(node)}",
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
        shown = _sql(arg.node)
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
            f"{pair[0] + 1} is, not {TYPE_NAMES[kinds[1]]}: {_sql(second.node)}",
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
            f"{call.name}() must be one of {names}, not {_sql(node)}", f"pass one of {names}")


def _format_constant(call: Call) -> tuple[int, str, str] | None:
    """A constant format Spark refuses before it formats anything: ``format_string('%0$s',
    x)`` (``FormatString`` refuses an argument index 0: [INVALID_PARAMETER_VALUE.ZERO_INDEX]),
    ``to_number(s, '999G')`` (:mod:`.number_format`: [INVALID_FORMAT.<reason>])."""
    position = 0 if call.name in ("format_string", "printf") else \
        1 if call.name in ("to_number", "try_to_number") else -1
    arg = call.args[position] if 0 <= position < len(call.args) else None
    node = arg.node.unnest() if arg is not None and arg.node is not None else None
    if arg is None or arg.name is not None or not isinstance(node, exp.Literal) or \
            not node.is_string:
        return None
    if position == 0:
        if "%0$" not in node.name:
            return None
        return (arg.start, f"[INVALID_PARAMETER_VALUE.ZERO_INDEX] {call.name}()'s format "
                f"{_sql(node)} refers to argument %0$: Spark numbers them from %1$",
                "use %1$ for the first argument after the format")
    problem = number_format_problem(node.name.upper())
    if problem is None:
        return None
    return (arg.start, f"[INVALID_FORMAT.{problem}] {call.name}()'s number format "
            f"{_sql(node)} is one Spark refuses", "formats are [MI|S] [$] [0|9|G|,]* [.|D] "
            "[0|9]* [$] [PR|MI|S], with separators between digits before the point")


#: Spark's ThetaSketchUtils: the range of ``lgNomEntries`` (``checkLgNomLongs``) and the
#: summary modes (``TupleSummaryMode``, any case) of the tuple sketch functions.
_LG_NOM_ENTRIES = (4, 26)
_SUMMARY_MODES = frozenset({"sum", "min", "max", "alwaysone"})


def _sketch_parameter(call: Call) -> tuple[int, str, str] | None:
    """The tuple sketch functions' ``lgNomEntries`` and ``mode`` arguments as Spark's
    ``SketchSize`` and ``SummaryAggregateMode`` check them (each a constant, after the implicit
    cast to INT or STRING): not NULL ([DATATYPE_MISMATCH.UNEXPECTED_NULL]), no column
    ([DATATYPE_MISMATCH.NON_FOLDABLE_INPUT]), ``lgNomEntries`` from 4 to 26 and ``mode`` one of
    sum, min, max, alwaysone ([DATATYPE_MISMATCH.TYPE_CHECK_FAILURE_WITH_HINT]); a string no
    INT cast reads ([CAST_INVALID_INPUT]). Only functions whose signature names them."""
    params = [p.lower() for p in call.signature.params]
    for name in ("lgnomentries", "mode"):
        i = params.index(name) if name in params else -1
        arg = call.args[i] if 0 <= i < len(call.args) else None
        if arg is None or arg.name is not None or arg.node is None and not arg.is_null:
            continue
        found = _sketch_value(call, i, arg.node, arg.is_null, name == "mode")
        if found is not None:
            return arg.start, *found
    return None


def _sketch_value(call: Call, i: int, node: exp.Expr | None, is_null: bool, mode: bool
                  ) -> tuple[str, str] | None:
    what = f"argument {i + 1} of {call.name}() ({'mode' if mode else 'lgNomEntries'})"
    node = node.unnest() if node is not None else None
    if is_null or (isinstance(node, exp.Cast) and isinstance(node.this, exp.Null)):
        return (f"[DATATYPE_MISMATCH.UNEXPECTED_NULL] {what} must not be NULL",
                "pass a constant")
    if node is None:
        return None
    select = node.find_ancestor(exp.Select)
    aliases = {e.alias.lower() for e in select.expressions if isinstance(e, exp.Alias)} \
        if select is not None else set()
    column = next((c for c in node.find_all(exp.Column) if c.name.lower() not in aliases), None)
    if column is not None and not node.find(exp.Lambda, exp.Subquery):
        return (f"[DATATYPE_MISMATCH.NON_FOLDABLE_INPUT] {what} must be a constant, not "
                f"{_sql(node)}", "pass a constant")
    text = _constant_text(node)
    if text is None:
        return None
    if mode:
        if text.lower() in _SUMMARY_MODES:
            return None
        return (f"[DATATYPE_MISMATCH.TYPE_CHECK_FAILURE_WITH_HINT] {what} must be one of "
                f"sum, min, max, alwaysone, not {_sql(node)}", "pass 'sum', 'min', 'max' or "
                "'alwaysone'")
    try:
        value = int(Decimal(text.strip()))
    except (InvalidOperation, ValueError, OverflowError):  # 'fifteen', 'NaN', 'Infinity'
        return (f"[CAST_INVALID_INPUT] {what}: {_sql(node)} is no INT", "pass an integer")
    low, high = _LG_NOM_ENTRIES
    if low <= value <= high:
        return None
    return (f"[DATATYPE_MISMATCH.TYPE_CHECK_FAILURE_WITH_HINT] {what} must be from {low} to "
            f"{high}, not {_sql(node)}", f"pass an integer from {low} to {high} (12 is Spark's "
            "default)")


def _constant_text(node: exp.Expr) -> str | None:
    """A literal's text (a number's, signed, or a string's), also under a cast to a number or
    a string; None for anything else."""
    if isinstance(node, exp.Cast) and isinstance(node.args.get("to"), exp.DataType):
        to = node.args["to"]
        if not (to.is_type(*exp.DataType.NUMERIC_TYPES) or to.is_type(*exp.DataType.TEXT_TYPES)):
            return None
        node = node.this.unnest()
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and node.this.is_number:
        return "-" + node.this.name
    return node.name if isinstance(node, exp.Literal) else None


def _avro_schema(call: Call) -> tuple[int, str, str] | None:
    """``to_avro(s, 42)``, ``from_avro(b, 42, map())``: Spark's ToAvro and FromAvro take the
    schema as a constant STRING (or NULL) only ([DATATYPE_MISMATCH.TYPE_CHECK_FAILURE_WITH_HINT]);
    a type lint knows and Spark refuses there (a STRING column is left alone)."""
    arg = call.args[1] if call.name in ("to_avro", "from_avro") and len(call.args) > 1 else None
    kind = arg_type(arg.node) if arg is not None and arg.node is not None and \
        arg.name is None else None
    if arg is None or arg.node is None or kind in (None, "string", "string_literal"):
        return None
    return (arg.start, f"[DATATYPE_MISMATCH.TYPE_CHECK_FAILURE_WITH_HINT] argument 2 of "
            f"{call.name}() is the Avro schema, a constant STRING, not "
            f"{TYPE_NAMES.get(kind or '', kind)}: {_sql(arg.node)}",
            "pass the schema's JSON as a string literal")


def _complete(dtype: exp.DataType, *, top: bool = True) -> bool:
    """Every part of ``dtype`` known, as Spark would compare it: element, key, value and field
    types, a DECIMAL's precision; no CHAR/VARCHAR (Spark reads them as STRING); VOID only
    inside (``array()`` is ARRAY<VOID>; a NULL itself is left alone)."""
    if dtype.this in (T.CHAR, T.VARCHAR, T.NCHAR, T.NVARCHAR, T.UNKNOWN, T.USERDEFINED):
        return False
    if dtype.this is T.NULL:
        return not top
    if dtype.this is T.DECIMAL:
        return bool(dtype.expressions)
    if dtype.this in (T.ARRAY, T.MAP, T.STRUCT):
        kinds = [e.args.get("kind") if isinstance(e, exp.ColumnDef) else e
                 for e in dtype.expressions]
        return bool(kinds) and all(isinstance(k, exp.DataType) and _complete(k, top=False)
                                   for k in kinds)
    return True


def _aggregate_merge(call: Call) -> tuple[int, str, str] | None:
    """``aggregate(arr, array(), array('a'))``: a constant merge (Spark wraps it in a lambda)
    whose type is not the start value's; Spark's ArrayAggregate compares them structurally
    ([DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE]). Only types lint knows in full."""
    if call.name not in ("aggregate", "reduce") or len(call.args) not in (3, 4):
        return None
    zero, merge = call.args[1], call.args[2]
    if zero.node is None or merge.node is None or merge.is_lambda or zero.name or merge.name:
        return None
    start, value = value_type(zero.node), value_type(merge.node)
    if start is None or value is None or not _complete(start) or not _complete(value) or \
            type_string(start) == type_string(value):
        return None
    return (merge.start, f"[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] argument 3 of "
            f"{call.name}() must have the start value's type {type_string(start)}, not "
            f"{type_string(value)}: {_sql(merge.node)}", "write a lambda ((acc, x) -> ...) that "
            "returns the start value's type")
