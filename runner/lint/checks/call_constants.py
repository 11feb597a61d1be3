"""Constant arguments Spark checks before it runs a call, beyond their type (:mod:`.call_values`
asks): ``format_string``'s and ``to_number``'s formats, the tuple sketches' ``lgNomEntries`` and
``mode``, ``to_avro``/``from_avro``'s schema."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from sqlglot import exp

from runner.lint.reading.calls import Call, sql_text
from runner.lint.spark_types.builtins import TYPE_NAMES, arg_type
from runner.lint.sql.number_format import number_format_problem

__all__ = ["avro_schema", "format_constant", "sketch_parameter"]


def format_constant(call: Call) -> tuple[int, str, str] | None:
    """A constant format Spark refuses before it formats anything: ``format_string('%0$s',
    x)`` (``FormatString`` refuses an argument index 0: [INVALID_PARAMETER_VALUE.ZERO_INDEX]),
    ``to_number(s, '999G')`` (:mod:`runner.lint.sql.number_format`: [INVALID_FORMAT.<reason>])."""
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
                f"{sql_text(node)} refers to argument %0$: Spark numbers them from %1$",
                "use %1$ for the first argument after the format")
    problem = number_format_problem(node.name.upper())
    if problem is None:
        return None
    return (arg.start, f"[INVALID_FORMAT.{problem}] {call.name}()'s number format "
            f"{sql_text(node)} is one Spark refuses", "formats are [MI|S] [$] [0|9|G|,]* [.|D] "
            "[0|9]* [$] [PR|MI|S], with separators between digits before the point")


#: Spark's ThetaSketchUtils: the range of ``lgNomEntries`` (``checkLgNomLongs``) and the
#: summary modes (``TupleSummaryMode``, any case) of the tuple sketch functions.
_LG_NOM_ENTRIES = (4, 26)
_SUMMARY_MODES = frozenset({"sum", "min", "max", "alwaysone"})


def sketch_parameter(call: Call) -> tuple[int, str, str] | None:
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
                f"{sql_text(node)}", "pass a constant")
    text = _constant_text(node)
    if text is None:
        return None
    if mode:
        if text.lower() in _SUMMARY_MODES:
            return None
        return (f"[DATATYPE_MISMATCH.TYPE_CHECK_FAILURE_WITH_HINT] {what} must be one of "
                f"sum, min, max, alwaysone, not {sql_text(node)}", "pass 'sum', 'min', 'max' or "
                "'alwaysone'")
    try:
        value = int(Decimal(text.strip()))
    except (InvalidOperation, ValueError, OverflowError):  # 'fifteen', 'NaN', 'Infinity'
        return (f"[CAST_INVALID_INPUT] {what}: {sql_text(node)} is no INT", "pass an integer")
    low, high = _LG_NOM_ENTRIES
    if low <= value <= high:
        return None
    return (f"[DATATYPE_MISMATCH.TYPE_CHECK_FAILURE_WITH_HINT] {what} must be from {low} to "
            f"{high}, not {sql_text(node)}", f"pass an integer from {low} to {high} (12 is Spark's "
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


def avro_schema(call: Call) -> tuple[int, str, str] | None:
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
            f"{TYPE_NAMES.get(kind or '', kind)}: {sql_text(arg.node)}",
            "pass the schema's JSON as a string literal")
