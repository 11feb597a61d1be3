"""Window frames checked as Spark's analyser checks them (``SpecifiedWindowFrame`` and
``WindowSpecDefinition.checkInputDataTypes``, after ``WindowFrameCoercion``):

- a frame's bounds are in order: no ``UNBOUNDED FOLLOWING`` start, no ``UNBOUNDED PRECEDING``
  end (``[DATATYPE_MISMATCH.SPECIFIED_WINDOW_FRAME_INVALID_BOUND]``), a constant start not
  after a constant end (``RANGE BETWEEN 1 FOLLOWING AND 1 PRECEDING``:
  ``[...SPECIFIED_WINDOW_FRAME_WRONG_COMPARISON]``);
- a ``ROWS`` bound is an INT (``2147483648 FOLLOWING`` is a BIGINT), a ``RANGE`` bound a number
  or an interval once Spark has cast it to the ORDER BY's type (a STRING or BOOLEAN order makes
  ``1 FOLLOWING`` one: ``[...SPECIFIED_WINDOW_FRAME_UNACCEPTED_TYPE]``);
- a ``RANGE`` frame with a value bound has exactly one ORDER BY
  (``[...RANGE_FRAME_WITHOUT_ORDER]``, ``[...RANGE_FRAME_MULTI_ORDER]``) of a type the bound
  can move (a number by a number of its type, a DATE by days or a YEAR-MONTH interval, a
  timestamp by an interval: ``[...RANGE_FRAME_INVALID_TYPE]``).

Only where lint knows the types (the ORDER BY's through name resolution, literals, casts);
windows named in a ``WINDOW`` clause are left alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal, InvalidOperation

from sqlglot import exp

from runner.errors import Violation
from runner.lint.checks.rules import ModelRule
from runner.lint.reading.context import ModelContext
from runner.lint.resolution.names import NILADIC
from runner.lint.spark_types.builtins import value_type
from runner.lint.spark_types.casts import can_ansi_cast, category
from runner.lint.spark_types.infer import parse_type, type_string

__all__ = ["WindowFrame"]

_SPECIAL = ("UNBOUNDED", "CURRENT ROW")
_NUMERIC = frozenset({"integral", "fractional", "decimal"})
_INTERVALS = frozenset({"interval", "interval_ym", "interval_dt"})
_MONTHS = frozenset({"YEAR", "YEARS", "MONTH", "MONTHS"})


def _bound_type(node: exp.Expr) -> exp.DataType | None:
    """The type of a frame bound's value: a number, a cast, or an interval literal."""
    if isinstance(node, exp.Interval):
        unit = node.args.get("unit")
        first = unit.this if isinstance(unit, exp.IntervalSpan) else unit
        name = first.name.upper() if isinstance(first, exp.Expression) else ""
        if not name or not isinstance(node.this, exp.Literal):
            return None  # INTERVAL '1 day 2 hours': a calendar interval, left alone
        return exp.DataType.build("INTERVAL YEAR" if name in _MONTHS else "INTERVAL DAY")
    return value_type(node)


def _value(node: exp.Expr, side: str | None) -> Decimal | None:
    """A numeric literal bound's signed value (``n PRECEDING`` is ``-n``), else None."""
    node = node.unnest()
    if not isinstance(node, exp.Literal) or node.is_string:
        return None
    try:
        value = Decimal(node.name)
    except InvalidOperation:
        return None
    return -value if (side or "").upper() == "PRECEDING" else value


def _sub_day(node: exp.Expr) -> bool:
    """An interval literal with a unit span that ends below days (``DAY TO SECOND``)."""
    unit = node.args.get("unit") if isinstance(node, exp.Interval) else None
    end = unit.expression if isinstance(unit, exp.IntervalSpan) else None
    return isinstance(end, exp.Expression) and end.name.upper() in ("HOUR", "MINUTE", "SECOND")


def _frame_type_ok(order: str, bound: exp.DataType, order_type: exp.DataType,
                   node: exp.Expr) -> bool:
    """Spark's ``WindowSpecDefinition.isValidFrameType(order, bound)`` as a 4.2 session
    answers it: a DATE moves by days (an INT, ``INTERVAL '5' DAY``) or a YEAR-MONTH interval,
    not by ``INTERVAL '1 2:3:4' DAY TO SECOND`` (other day-time intervals are left alone)."""
    kind = category(bound)
    if order == "date":
        return kind != "interval_dt" or not _sub_day(node) if kind in _INTERVALS else \
            bound.this is exp.DType.INT
    if order in ("timestamp", "timestamp_ntz"):
        return kind in _INTERVALS
    return bound == order_type


class WindowFrame(ModelRule):
    """A window frame's bounds are what Spark's analyser takes: in order
    ([DATATYPE_MISMATCH.SPECIFIED_WINDOW_FRAME_INVALID_BOUND], [...WRONG_COMPARISON]), of a
    type the frame takes ([...SPECIFIED_WINDOW_FRAME_UNACCEPTED_TYPE]), and a RANGE frame with
    a value bound orders by exactly one value the bound can move ([...RANGE_FRAME_WITHOUT_ORDER],
    [...RANGE_FRAME_MULTI_ORDER], [...RANGE_FRAME_INVALID_TYPE])."""

    id = "window-frame"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        for window in ctx.nodes.of(exp.Window):
            spec = window.args.get("spec")
            if isinstance(spec, exp.WindowSpec) and window.args.get("alias") is None:
                # (OVER (w ROWS ...) takes its ORDER BY from the named window w: left alone)
                found = _problem(window, spec)
                if found is not None:
                    yield self.at(ctx, window, f"[DATATYPE_MISMATCH.{found[0]}] {found[1]}",
                                  found[2])


def _order_type(node: exp.Expr) -> exp.DataType | None:
    """The ORDER BY value's type: :func:`~runner.lint.spark_types.builtins.value_type`'s, or a
    niladic date/time call's (``current_timestamp()`` is a TIMESTAMP)."""
    found = value_type(node)
    if found is None and isinstance(node, (exp.CurrentTimestamp, exp.CurrentDate)) and \
            not node.args.get("this"):
        found = parse_type(NILADIC[node.sql_name().lower()])
    return found


def _problem(window: exp.Window, spec: exp.WindowSpec) -> tuple[str, str, str] | None:
    """(error subclass, message, hint) of the frame's first problem, in Spark's order."""
    kind = str(spec.args.get("kind") or "").upper()
    start, end = spec.args.get("start"), spec.args.get("end")
    start_side, end_side = spec.args.get("start_side"), spec.args.get("end_side")
    if end is None:  # ROWS 1 PRECEDING: from there to the current row
        end, end_side = "CURRENT ROW", None
    if kind not in ("ROWS", "RANGE") or start is None:
        return None
    bounds = [(start, start_side, "lower"), (end, end_side, "upper")]
    values = [(b, s, where) for b, s, where in bounds if isinstance(b, exp.Expression)]
    order = window.args.get("order")
    keys = order.expressions if isinstance(order, exp.Order) else []
    order_type = _order_type(keys[0].this) if len(keys) == 1 and isinstance(
        keys[0], exp.Ordered) else None
    order_kind = category(order_type)
    # the frame's own checks (Spark checks it before the window spec that holds it)
    for bound, _, where in values:
        dtype = _bound_type(bound)
        if kind == "RANGE" and dtype is not None and order_type is not None and \
                order_kind not in ("date", "timestamp", "timestamp_ntz") and \
                dtype != order_type and can_ansi_cast(dtype, order_type):
            dtype = order_type  # WindowFrameCoercion casts the bound to the order's type
        accepted = (dtype is not None and dtype.this is exp.DType.INT) if kind == "ROWS" else \
            category(dtype) in _NUMERIC | _INTERVALS
        if dtype is not None and category(dtype) is not None and not accepted:
            wanted = "INT" if kind == "ROWS" else "a number or an interval"
            return ("SPECIFIED_WINDOW_FRAME_UNACCEPTED_TYPE", f"the {where} bound of this "
                    f"{kind} frame is {type_string(dtype)}, not {wanted}",
                    "ROWS frames count rows (an INT); RANGE frames move the ORDER BY value "
                    "(a number for a number, an interval for a date or timestamp)")
    if (str(start).upper() == "UNBOUNDED" and str(start_side).upper() == "FOLLOWING") or (
            str(end).upper() == "UNBOUNDED" and str(end_side).upper() == "PRECEDING"):
        return ("SPECIFIED_WINDOW_FRAME_INVALID_BOUND", f"{kind} BETWEEN {start} "
                f"{start_side or ''} AND {end} {end_side or ''}: a frame cannot start after "
                "every row or end before every row", "start with UNBOUNDED PRECEDING or "
                "CURRENT ROW, end with CURRENT ROW or UNBOUNDED FOLLOWING")
    if len(values) == 2:
        (first, first_side, _), (last, last_side, _) = values
        low, high = _value(first, first_side), _value(last, last_side)
        same = _bound_type(first) == _bound_type(last)
        if low is not None and high is not None and same and low > high:
            return ("SPECIFIED_WINDOW_FRAME_WRONG_COMPARISON", f"this {kind} frame starts "
                    f"after it ends ({start} {start_side} is past {end} {end_side})",
                    "swap the bounds (or PRECEDING/FOLLOWING)")
    if kind != "RANGE" or not values:
        return None
    if not keys:
        return ("RANGE_FRAME_WITHOUT_ORDER", "a RANGE frame with a value bound moves the "
                "ORDER BY value: this window has no ORDER BY", "add ORDER BY <one column>, "
                "or use ROWS BETWEEN ...")
    if len(keys) > 1:
        return ("RANGE_FRAME_MULTI_ORDER", f"a RANGE frame with a value bound moves one ORDER "
                f"BY value: this window orders by {len(keys)}", "order by one column, or use "
                "ROWS BETWEEN ...")
    if order_type is None or order_kind is None:
        return None
    for bound, _, where in values:
        dtype = _bound_type(bound)
        if dtype is not None and order_kind not in ("date", "timestamp", "timestamp_ntz") \
                and dtype != order_type and can_ansi_cast(dtype, order_type):
            dtype = order_type
        if dtype is not None and category(dtype) is not None and \
                not _frame_type_ok(order_kind, dtype, order_type, bound):
            return ("RANGE_FRAME_INVALID_TYPE", f"the {where} bound ({type_string(dtype)}) "
                    f"cannot move an ORDER BY value of type {type_string(order_type)}",
                    "a number moves a number, days or a YEAR-MONTH interval a DATE, an "
                    "interval a timestamp")
    return None
