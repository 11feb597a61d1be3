"""Function calls and operators checked as Spark's analyser checks them, against the signatures
recorded from Spark's registry (:mod:`runner.lint.spark_types.builtins`):

- ``function-arguments``: the number of arguments (``IF(x, 'a')``: ``[WRONG_NUM_ARGS]``),
  named arguments (``[NAMED_PARAMETERS_NOT_SUPPORTED]``, ``[UNRECOGNIZED_PARAMETER_NAME]``,
  ``[UNEXPECTED_POSITIONAL_ARGUMENT]``, ``[DUPLICATE_ROUTINE_PARAMETER_ASSIGNMENT]``,
  ``[REQUIRED_PARAMETER_NOT_FOUND]``),
  arguments that must be constant (``percentile_approx(x, p)`` with a column ``p``:
  ``[DATATYPE_MISMATCH.NON_FOLDABLE_INPUT]``), lambdas outside higher-order functions;
- ``argument-type``: an argument of a type the position refuses (``json_array_length(2)``:
  ``[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE]``), argument values Spark refuses
  (:mod:`.call_values`: ``explode(NULL)``, ``filter(arr, 1)``, ``time_bucket(INTERVAL '0'
  SECOND, ts)``, ``pmod('1', '1')``), operands an operator refuses, a struct indexed by a
  number (``[INVALID_EXTRACT_FIELD_TYPE]``), a CAST ANSI mode refuses
  (:mod:`runner.lint.spark_types.casts`: ``CAST(1 AS BINARY)``), an ORDER BY of a MAP or VARIANT.

Spark refuses every finding (each example is run through its analyser by
tests/spark/test_signatures_vs_spark.py). When in doubt a rule does not flag: a call whose
arguments lint cannot map to Spark's positions, an argument whose type it cannot vouch for
(:func:`~runner.lint.spark_types.builtins.value_type`: a function's result), a count or type the
registry has no record of, an overload with more arguments than the one probed, the grammar's own
forms (``DATE_ADD(DAY, 1, d)``, ``trim(BOTH 'x' FROM s)``, ``count(DISTINCT a)``). The calls are
read from the SQL's tokens by :mod:`runner.lint.reading.calls`.
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlglot import exp
from sqlglot.tokens import TokenType

from runner.errors import Violation
from runner.lint.checks.call_values import element_mismatch, outer_kinds, value_problem
from runner.lint.checks.rules import ModelRule
from runner.lint.reading.calls import OPERAND_END, Arg, Call, calls, sql_text
from runner.lint.reading.context import ModelContext
from runner.lint.reading.sql_tokens import tokens as sql_tokens
from runner.lint.reading.sql_tokens import violation_at
from runner.lint.spark_types.builtins import TYPE_NAMES, arg_type, operator_refuses, value_type
from runner.lint.spark_types.casts import cast_refusal
from runner.lint.spark_types.coercion import MAX_PRECISION
from runner.lint.spark_types.infer import element_type, is_, is_known, type_string
from runner.lint.spark_types.spatial import spatial_type

__all__ = ["ArgumentType", "FunctionArguments", "unorderable"]

T = exp.DType


def _decimal_precision(dtype: exp.Expr | None) -> int | None:
    """The precision written in ``DECIMAL(p, s)``, or None (another type, or none written)."""
    if not isinstance(dtype, exp.DataType) or dtype.this is not T.DECIMAL or \
            not dtype.expressions:
        return None
    first = dtype.expressions[0]
    text = first.this.name if isinstance(first, exp.DataTypeParam) else ""
    return int(text) if text.isdigit() else None


def _non_constant(arg: exp.Expr, select: exp.Select | None) -> exp.Expr | None:
    """A column reference or subquery in ``arg`` (Spark: not foldable), outside lambdas; a
    name that may be a lateral alias of the SELECT's own is left alone."""
    aliases = {p.alias.lower() for p in (select.expressions if select else [])
               if isinstance(p, exp.Alias)}
    for node in arg.walk(prune=lambda n: isinstance(n, (exp.Lambda, exp.Subquery))):
        if isinstance(node, exp.Lambda):
            return None
        if isinstance(node, exp.Subquery):
            return node
        if isinstance(node, exp.Column) and not (len(node.parts) == 1
                                                 and node.name.lower() in aliases):
            return node
    return None


def _named_problem(call: Call, named: list[Arg]) -> tuple[int, str, str] | None:
    """How Spark's ``NamedParametersSupport`` refuses a call's named arguments: a positional
    one after them ([UNEXPECTED_POSITIONAL_ARGUMENT]), one named twice or after its position
    was given ([DUPLICATE_ROUTINE_PARAMETER_ASSIGNMENT])."""
    name, sig, args = call.name, call.signature, call.args
    first = args.index(named[0])
    late = next((a for a in args[first:] if a.name is None), None)
    if late is not None:
        return (late.start, f"[UNEXPECTED_POSITIONAL_ARGUMENT] {name}() gets an argument by "
                "position after one by name", "pass the positional arguments first")
    params = [p.lower() for p in sig.params]
    seen: set[str] = set()
    for arg in named:
        low = (arg.name or "").lower()
        if low in seen or params.index(low) < first:
            kind = ("DOUBLE_NAMED_ARGUMENT_REFERENCE" if low in seen
                    else "BOTH_POSITIONAL_AND_NAMED")
            return (arg.start, f"[DUPLICATE_ROUTINE_PARAMETER_ASSIGNMENT.{kind}] {name}()'s "
                    f"argument {arg.name} is given twice", "give each argument once")
        seen.add(low)
    return None


def _missing_parameter(call: Call, named: set[str]) -> tuple[int, str, str] | None:
    """A parameter without default given neither by position nor by name (Spark's
    ``NamedParametersSupport.defaultRearrange``: [REQUIRED_PARAMETER_NOT_FOUND])."""
    sig = call.signature
    positional = next((k for k, a in enumerate(call.args) if a.name is not None), len(call.args))
    for param in sig.params[positional:sig.required]:
        if param.lower() not in named:
            return (call.start, f"[REQUIRED_PARAMETER_NOT_FOUND] {call.name}() needs its "
                    f"argument {param}, given neither by position nor by name",
                    f"pass {param} first, or as {param} => ...")
    return None


def argument_problem(call: Call) -> tuple[int, str, str] | None:
    """(offset, message, hint) of the first problem of ``call``'s arguments, or None."""
    name, sig, args = call.name, call.signature, call.args
    if sig.refused is not None:
        return (call.start, f"[{sig.refused}] {name}() makes or takes TIME values, which this "
                "Spark does not support", "use a TIMESTAMP (date_trunc, hour(), minute()...)")
    named = [a for a in args if a.name is not None]
    params = {p.lower() for p in sig.params}
    if named and not params:
        return (named[0].start, f"[NAMED_PARAMETERS_NOT_SUPPORTED] {name}() takes no named "
                f"arguments ({named[0].name} => ...)", "pass the arguments by position")
    unknown = next((a for a in named if (a.name or "").lower() not in params), None)
    if unknown is not None:
        return (unknown.start, f"[UNRECOGNIZED_PARAMETER_NAME] {name}() has no argument "
                f"named {unknown.name}", f"its arguments: {', '.join(sig.params)}")
    if named:
        found = _named_problem(call, named)
        if found is not None:
            return found
    missing = _missing_parameter(call, {(a.name or "").lower() for a in named})
    if missing is not None:
        return missing
    if not named and sig.refuses_count(len(args)):
        return (call.start, f"[WRONG_NUM_ARGS] {name}() takes {sig.expected} "
                f"argument(s), not {len(args)}", f"call {name}() with {sig.expected} "
                "argument(s)")
    lam = next((a for a in args if a.is_lambda), None)
    if lam is not None and sig.kind != "higher_order":
        return (lam.start, "[INVALID_LAMBDA_FUNCTION_CALL.NON_HIGHER_ORDER_FUNCTION] "
                f"{name}() is not a higher-order function: it takes no lambda (x -> ...)",
                "lambdas go in transform, filter, exists, forall, aggregate, zip_with...")
    if sig.kind == "window" and not call.over:
        return (call.start, f"[WINDOW_FUNCTION_WITHOUT_OVER_CLAUSE] {name}() is a window "
                "function: it needs an OVER clause", f"{name}(...) OVER (PARTITION BY ... "
                "ORDER BY ...)")
    return None


class FunctionArguments(ModelRule):
    """A built-in function gets the arguments Spark's analyser accepts: their number
    ([WRONG_NUM_ARGS]), named arguments it has ([NAMED_PARAMETERS_NOT_SUPPORTED],
    [UNRECOGNIZED_PARAMETER_NAME]), each one without a default ([REQUIRED_PARAMETER_NOT_FOUND]),
    constants where it needs them ([DATATYPE_MISMATCH.NON_FOLDABLE_INPUT]), lambdas only in
    higher-order functions."""

    id = "function-arguments"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        for call in calls(ctx):
            found = argument_problem(call)
            if found is not None:
                yield violation_at(self, ctx, *found)
                continue
            yield from self._constants(ctx, call)

    def _constants(self, ctx: ModelContext, call: Call) -> Iterator[Violation]:
        if not call.signature.checks_arguments_of(len(call.args)):
            return
        for i, error in call.signature.literal.items():
            arg = call.args[i] if i < len(call.args) else None
            if arg is None or arg.node is None or arg.name is not None:
                continue
            found = _non_constant(arg.node, arg.node.find_ancestor(exp.Select))
            if found is not None:
                yield self.at(ctx, found, f"[{error}] argument {i + 1} of {call.name}() must "
                              f"be a constant, not {sql_text(found)}",
                              "write a literal (or an expression of literals) there")


_BINARY: dict[type[exp.Expr], str] = {
    exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%", exp.IntDiv: "div",
    exp.BitwiseAnd: "&", exp.BitwiseOr: "|", exp.BitwiseXor: "^", exp.DPipe: "||",
    exp.EQ: "=", exp.NullSafeEQ: "<=>", exp.NEQ: "!=", exp.LT: "<", exp.LTE: "<=",
    exp.GT: ">", exp.GTE: ">=", exp.And: "and", exp.Or: "or",
}
_UNARY: dict[type[exp.Expr], str] = {exp.Neg: "-", exp.BitwiseNot: "~", exp.Not: "not"}
_COMPLEX = frozenset({"array", "map", "struct"})
_CONSTRUCTORS = {"map": "a MAP", "array": "an ARRAY", "struct": "a STRUCT",
                 "named_struct": "a STRUCT"}

_CAST_HINTS = {
    "DATATYPE_MISMATCH.CAST_WITH_FUNC_SUGGESTION": "between numbers and dates use "
    "date_from_unix_date() / unix_date()",
    "DATATYPE_MISMATCH.CAST_WITH_CONF_SUGGESTION": "only legacy casting (ANSI off) takes "
    "it: convert with a function instead (hex(), to_binary(), ...)",
    "DATATYPE_MISMATCH.CAST_WITHOUT_SUGGESTION": "no cast does this: build the value with "
    "a function (from_json(), split(), array(), struct(), ...)",
}


def unorderable(dtype: exp.DataType | None) -> str | None:
    """The part of ``dtype`` that has no order in Spark (``MAP``, ``VARIANT``), or None
    (orderable, or unknown)."""
    if dtype is None:
        return None
    if is_(dtype, T.MAP, T.VARIANT):
        return type_string(exp.DataType(this=dtype.this))
    if is_(dtype, T.ARRAY, T.STRUCT):
        for inner in dtype.expressions:
            kind = inner.args.get("kind") if isinstance(inner, exp.ColumnDef) else inner
            found = unorderable(kind) if isinstance(kind, exp.DataType) else None
            if found is not None:
                return found
    return None


def _value_type(node: exp.Expr) -> exp.DataType | None:
    """The type of a column, struct field or an array element of one, where resolution typed
    it (``errors[0]``: the element type of ``errors``)."""
    node = node.unnest()
    if isinstance(node, (exp.Column, exp.Dot)):
        return node.type if is_known(node.type) else None
    if isinstance(node, exp.Bracket) and len(node.expressions) == 1 and not node.args.get(
            "offset"):
        inner = _value_type(node.this)
        index = node.expressions[0]
        if is_(inner, T.ARRAY) and isinstance(index, exp.Literal) and index.is_int:
            return element_type(inner)
    return None


#: Types Spark extracts no value from (``<string>[0]``): [INVALID_EXTRACT_BASE_FIELD_TYPE].
_SCALARS = frozenset({T.TEXT, T.VARCHAR, T.CHAR, T.TINYINT, T.SMALLINT, T.INT, T.BIGINT,
                      T.FLOAT, T.DOUBLE, T.DECIMAL, T.BOOLEAN, T.DATE, T.TIMESTAMP,
                      T.TIMESTAMPNTZ, T.TIMESTAMPLTZ, T.BINARY})


def _scalar_base(node: exp.Bracket) -> exp.DataType | None:
    """The type of ``col[i]``'s column when it is one Spark extracts nothing from: a column
    name resolution typed (``HAVING col1[0]`` reads the aggregate's input column first, as
    Spark does). Not in ORDER BY, where Spark also tries the select list's alias of that name
    (``ORDER BY col1[0]`` may index the alias), nor a NULL column (Spark takes ``HAVING
    col1.a`` over one)."""
    base = node.this
    if not isinstance(base, exp.Column) or base.find_ancestor(exp.Order) is not None:
        return None
    dtype = base.type
    return dtype if isinstance(dtype, exp.DataType) and dtype.this in _SCALARS else None


class ArgumentType(ModelRule):
    """An argument's type is one Spark accepts at its position
    ([DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE]), an operator's operands are types it applies
    to ([DATATYPE_MISMATCH.BINARY_OP_DIFF_TYPES]...), a struct's field is named, not numbered
    ([INVALID_EXTRACT_FIELD_TYPE]), only an array, map or struct is indexed
    ([INVALID_EXTRACT_BASE_FIELD_TYPE]). Only where lint knows the types."""

    id = "argument-type"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.query is None:
            return
        for call in calls(ctx):
            if argument_problem(call) is not None:
                continue  # the arguments are wrong already
            found = value_problem(call)
            if found is not None:
                yield violation_at(self, ctx, *found)
                continue
            if not call.signature.checks_arguments_of(len(call.args)):
                continue  # an overload not probed
            for i, arg in enumerate(call.args):
                rule = call.signature.types.get(i)
                kind = arg_type(arg.node) if rule is not None and arg.node is not None \
                    and arg.name is None else None
                if rule is None or arg.node is None or kind is None or kind not in rule[1]:
                    continue
                required = rule[0]
                shown = TYPE_NAMES[kind]
                if kind in _COMPLEX and shown in outer_kinds(required).split():
                    shown = element_mismatch(arg.node, required) or ""
                    if not shown:
                        continue  # an element or field type Spark may take, not the kind
                text = sql_text(arg.node)
                yield self.at(ctx, arg.node, f"[{rule[2]}] argument {i + 1} of {call.name}() "
                              f"must be {required}, not {shown}: {text}",
                              f"cast it (CAST({text} AS ...)) or pass another column")
                break
        yield from self._operators(ctx)
        yield from self._struct_index(ctx)
        yield from self._unary_plus(ctx)
        yield from self._time_casts(ctx)
        yield from self._casts(ctx)
        yield from self._ordering(ctx)

    def _casts(self, ctx: ModelContext) -> Iterator[Violation]:
        """``CAST(x AS t)`` of a type ANSI mode does not cast to ``t``
        (:mod:`runner.lint.spark_types.casts`): ``CAST(1 AS BINARY)``, ``CAST('a' AS
        ARRAY<STRING>)``. TRY_CAST has rules of its own (left alone); a typed literal (``DATE
        '...'``) is a string cast, always taken. A DECIMAL of more than 38 digits is no type
        (``CAST(x AS DECIMAL(40, 40))``, TRY_CAST too:
        [DECIMAL_PRECISION_EXCEEDS_MAX_PRECISION])."""
        for node in ctx.nodes.of(exp.Cast):
            to = node.args.get("to")
            digits = _decimal_precision(to)
            if digits is not None and digits > MAX_PRECISION:
                yield self.at(ctx, node, f"[DECIMAL_PRECISION_EXCEEDS_MAX_PRECISION] "
                              f"{sql_text(node)}: a DECIMAL holds at most {MAX_PRECISION} digits, "
                              f"not {digits}", f"use DECIMAL({MAX_PRECISION}, s) or DOUBLE")
                continue
            if node.args.get("safe") or not isinstance(to, exp.DataType):
                continue
            source = spatial_type(node.this) or value_type(node.this)
            error = cast_refusal(source, to)
            if error is not None and source is not None:
                yield self.at(ctx, node, f"[{error}] {sql_text(node)}: Spark's ANSI mode does not "
                              f"cast {type_string(source)} to {type_string(to)}",
                              _CAST_HINTS.get(error, "cast to another type, or convert it "
                                              "with a function"))

    def _ordering(self, ctx: ModelContext) -> Iterator[Violation]:
        """``ORDER BY`` (a query's or a window's) of a value Spark cannot order: a MAP, a
        VARIANT, or an array or struct holding one ([DATATYPE_MISMATCH.INVALID_ORDERING_TYPE])."""
        for node in ctx.nodes.of(exp.Ordered):
            dtype = value_type(node.this)
            bad = unorderable(dtype)
            if bad is not None and dtype is not None:
                yield self.at(ctx, node, f"[DATATYPE_MISMATCH.INVALID_ORDERING_TYPE] "
                              f"{sql_text(node.this)}: Spark cannot order values of type "
                              f"{type_string(dtype)} ({bad} has no order)",
                              "order by a field or a cast of it to STRING")

    def _time_casts(self, ctx: ModelContext) -> Iterator[Violation]:
        """``CAST(x AS TIME)``: Spark 4.2 has no TIME values (a ``TIME '12:00'`` literal, which
        sqlglot parses as a cast too, is left alone)."""
        sql = ctx.model.sql
        for node in ctx.nodes.of(exp.Cast):
            to = node.args.get("to")
            if not isinstance(to, exp.DataType) or to.this is not T.TIME:
                continue
            start = node.this.meta.get("start") if isinstance(node.this, exp.Literal) else None
            if isinstance(start, int) and sql[:start].rstrip().upper().endswith("TIME"):
                continue  # TIME '12:00:00'
            yield self.at(ctx, node, "[UNSUPPORTED_TIME_TYPE] this Spark does not support TIME "
                          "values", "cast to TIMESTAMP instead")

    def _unary_plus(self, ctx: ModelContext) -> Iterator[Violation]:
        """``+map(1, 2)``: sqlglot drops a unary ``+``; Spark's takes numbers and intervals."""
        tokens = sql_tokens(ctx.model.sql)
        for k in range(len(tokens) - 2):
            if tokens[k].token_type != TokenType.PLUS or (
                    k > 0 and tokens[k - 1].token_type in OPERAND_END):
                continue
            kind = _CONSTRUCTORS.get(tokens[k + 1].text.lower())
            if kind and tokens[k + 2].token_type == TokenType.L_PAREN:
                yield violation_at(self, ctx, tokens[k].start, "[DATATYPE_MISMATCH."
                                   f"UNEXPECTED_INPUT_TYPE] a unary + takes a number or an "
                                   f"interval, not {kind}", "remove the +")

    def _operators(self, ctx: ModelContext) -> Iterator[Violation]:
        for node in ctx.nodes.of(*_BINARY, *_UNARY):
            op = _BINARY.get(type(node)) or _UNARY[type(node)]
            if type(node) in _UNARY:
                kind = arg_type(node.this)
                error = operator_refuses(op, kind) if kind else None
                text = f"{op.upper()} {TYPE_NAMES.get(kind or '', '')}"
            else:
                left, right = arg_type(node.this), arg_type(node.expression)
                if left is None or right is None or (isinstance(node, (
                        exp.EQ, exp.NEQ, exp.NullSafeEQ, exp.LT, exp.LTE, exp.GT, exp.GTE))
                        and {left, right} & _COMPLEX):
                    continue  # complex comparisons: the type-mismatch rule's
                error = operator_refuses(op, left, right)
                text = f"{TYPE_NAMES[left]} {op.upper()} {TYPE_NAMES[right]}"
            if error is not None:
                yield self.at(ctx, node, f"[{error}] {sql_text(node)}: Spark has no {text}",
                              "cast an operand so that both have types the operator takes")

    def _struct_index(self, ctx: ModelContext) -> Iterator[Violation]:
        for node in ctx.nodes.of(exp.Bracket):
            if len(node.expressions) != 1 or node.args.get("offset") or node.args.get("safe"):
                continue
            base = _scalar_base(node)
            if base is not None:
                yield self.at(ctx, node, f"[INVALID_EXTRACT_BASE_FIELD_TYPE] {sql_text(node)}: "
                              f"{sql_text(node.this)} is a {type_string(base)}, and Spark extracts "
                              "values from an ARRAY, a MAP or a STRUCT only",
                              "index an array, map or struct column (or convert the value)")
                continue
            index = node.expressions[0]
            if isinstance(index, exp.Literal) and index.is_int and is_(
                    _value_type(node.this), T.STRUCT):
                yield self.at(ctx, node, f"[INVALID_EXTRACT_FIELD_TYPE] {sql_text(node)}: "
                              f"{sql_text(node.this)} is a struct, whose fields are named, not "
                              "numbered", f"{sql_text(node.this)}.<field> or "
                              f"{sql_text(node.this)}['<field>']")
