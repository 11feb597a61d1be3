"""How aggregate calls are written, as Spark's analyser checks them (``CheckAnalysis``, the
ordered-set aggregates' ``SupportsOrderingWithinGroup``, ``WindowsSubstitution``):

- ``WITHIN GROUP (ORDER BY ...)`` follows an ordered-set aggregate only (``percentile_cont``,
  ``percentile_disc``, ``mode``, ``listagg``/``string_agg``:
  ``[INVALID_SQL_SYNTAX.FUNCTION_WITH_UNSUPPORTED_SYNTAX]``); ``percentile_cont``,
  ``percentile_disc`` and an argument-less ``mode()`` need it, with one ordering, ``mode(x)``
  takes none, ``mode`` no DISTINCT, and ``listagg(DISTINCT x) WITHIN GROUP`` orders by ``x``,
  of a type whose text is one per value in order (not a DOUBLE, FLOAT or TIMESTAMP, when name
  resolution typed it: ``[INVALID_WITHIN_GROUP_EXPRESSION.*]``);
- over a window: no DISTINCT aggregate (``[DISTINCT_WINDOW_FUNCTION_UNSUPPORTED]``); no window
  ORDER BY and no frame but the whole partition for an aggregate that orders its own input
  (``median``, ``percentile_cont``/``percentile_disc``, ``listagg ... WITHIN GROUP``; not
  ``mode``: ``[INVALID_WINDOW_SPEC_FOR_AGGREGATION_FUNC]``); and ``OVER w`` names a window of
  the query's WINDOW clause (``[MISSING_WINDOW_SPECIFICATION]``);
- an aggregate's ``FILTER (WHERE ...)`` is a BOOLEAN (a column or literal lint typed) and holds
  no aggregate, no window function and nothing random (``[INVALID_AGGREGATE_FILTER.*]``);
- a PIVOT's aggregate holds no other aggregate (``[NESTED_AGGREGATE_FUNCTION]``), its
  values read no column (``[NON_LITERAL_PIVOT_VALUES]``);
- ``count(t.*)`` is refused, ``count(t.*, t.*)`` is not
  (``[INVALID_USAGE_OF_STAR_WITH_TABLE_IDENTIFIER_IN_COUNT]``).

A call lint cannot read surely (an expression it cannot compare, a name it does not know) is
left to Spark.

>>> import sqlglot
>>> from runner.lint.sql.spark_dialect import SPARK
>>> q = sqlglot.parse_one("SELECT count(DISTINCT a) OVER () FROM t", read=SPARK)
>>> [f.message.split("]")[0] for f in aggregate_call_problems(q)]
['[DISTINCT_WINDOW_FUNCTION_UNSUPPORTED']
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlglot import exp

from runner.errors import Violation
from runner.lint.checks.rules import ModelRule
from runner.lint.reading.context import ModelContext
from runner.lint.resolution.aggregates import is_aggregate_call, own_nodes
from runner.lint.resolution.shapes import Finding
from runner.lint.spark_types.infer import is_, is_known, type_string

__all__ = ["NONDETERMINISTIC", "AggregateCall", "aggregate_call_problems"]

#: Ordered-set aggregates: their ordering is their input.
_ORDERED_SET = (exp.PercentileCont, exp.PercentileDisc, exp.Mode)
#: Spark's built-ins whose value differs from call to call (not allowed in an aggregate FILTER).
NONDETERMINISTIC = frozenset({"rand", "randn", "random", "uuid", "shuffle", "randstr", "uniform",
                     "monotonically_increasing_id", "spark_partition_id", "input_file_name",
                     "input_file_block_start", "input_file_block_length"})
_WG = "INVALID_WITHIN_GROUP_EXPRESSION"
#: Input types whose cast to STRING (what listagg concatenates) is not one text per value in
#: order: floating point numbers, time-zone dependent timestamps.
_UNSAFE_TO_STRING = (exp.DType.DOUBLE, exp.DType.FLOAT, exp.DType.TIMESTAMP,
                     exp.DType.TIMESTAMPLTZ, exp.DType.TIMESTAMPTZ)


def aggregate_call_problems(query: exp.Expr) -> Iterator[Finding]:
    """Each aggregate call of ``query`` Spark's analyser refuses (see the module's docstring)."""
    for node in query.find_all(exp.WithinGroup, exp.PercentileCont, exp.PercentileDisc,
                               exp.Mode, exp.GroupConcat, exp.Window, exp.Filter, exp.Pivot,
                               exp.Count):
        if isinstance(node, exp.Count):
            star = node.this
            if isinstance(star, exp.Column) and star.is_star and star.table and \
                    not node.expressions:  # count(t.*, t.*) Spark accepts
                yield Finding(star, "[INVALID_USAGE_OF_STAR_WITH_TABLE_IDENTIFIER_IN_COUNT] "
                              f"count({star.sql(dialect='spark')}) counts a table's star",
                              "count(*) counts the rows")
        elif isinstance(node, exp.WithinGroup):
            yield from _within_group(node)
        elif isinstance(node, (exp.PercentileCont, exp.PercentileDisc, exp.Mode)):
            yield from _ordered_set(node)
        elif isinstance(node, exp.GroupConcat):
            yield from _listagg(node)
        elif isinstance(node, exp.Window):
            yield from _window(node)
        elif isinstance(node, exp.Filter):
            yield from _filter(node)
        elif isinstance(node, exp.Pivot):
            yield from _pivot(node)


def _name(node: exp.Expr) -> str:
    return node.name.lower() if isinstance(node, exp.Anonymous) else (
        node.sql_name().lower() if isinstance(node, exp.Func) else node.key)


def _orderings(order: exp.Expr | None) -> list[exp.Expr]:
    return [o.this for o in order.expressions] if isinstance(order, exp.Order) else []


def _within_group(node: exp.WithinGroup) -> Iterator[Finding]:
    inner = node.this
    orderings = _orderings(node.expression)
    if not isinstance(inner, _ORDERED_SET):
        if isinstance(inner, exp.Func) and not isinstance(inner, exp.Anonymous):
            yield Finding(node, "[INVALID_SQL_SYNTAX.FUNCTION_WITH_UNSUPPORTED_SYNTAX] "
                          f"{_name(inner)}() does not take WITHIN GROUP (ORDER BY ...)",
                          "WITHIN GROUP follows percentile_cont, percentile_disc, mode and "
                          "listagg only; drop it (or use one of those)")
        return
    if isinstance(inner, exp.Mode) and inner.this is not None:
        yield Finding(node, f"[{_WG}.WRONG_NUM_ORDERINGS] mode(x) WITHIN GROUP orders twice: "
                      "mode takes its input from either the argument or WITHIN GROUP",
                      "write mode(x), or mode() WITHIN GROUP (ORDER BY x)")
    elif len(orderings) != 1:
        yield Finding(node, f"[{_WG}.WRONG_NUM_ORDERINGS] {_name(inner)}() WITHIN GROUP takes "
                      f"one ordering, not {len(orderings)}", "order by the one value it reads")


def _ordered_set(node: exp.Expr) -> Iterator[Finding]:
    if isinstance(node, exp.Mode) and isinstance(node.this, exp.Distinct):
        yield Finding(node, f"[{_WG}.DISTINCT_UNSUPPORTED] mode() does not take DISTINCT",
                      "drop DISTINCT: the most frequent value needs every row")
        return
    if isinstance(node.parent, exp.WithinGroup) and node.parent.this is node:
        return
    if isinstance(node, exp.Mode) and node.this is not None:
        return  # mode(x): the plain aggregate
    yield Finding(node, f"[{_WG}.WITHIN_GROUP_MISSING] {_name(node)}() needs WITHIN GROUP "
                  "(ORDER BY <value>)", f"write {_name(node)}(...) WITHIN GROUP (ORDER BY x)")


def _listagg(node: exp.GroupConcat) -> Iterator[Finding]:
    """``listagg(DISTINCT x) WITHIN GROUP (ORDER BY y)``: sqlglot reads the ordering into the
    call (``GroupConcat(this=Order(this=Distinct(x)))``)."""
    order = node.this
    if not isinstance(order, exp.Order) or not isinstance(order.this, exp.Distinct):
        return
    inputs = order.this.expressions
    orderings = [o.this for o in order.expressions]
    differ = len(orderings) != len(inputs) or any(
        isinstance(a, exp.Column) and isinstance(b, exp.Column) and a.name.lower() !=
        b.name.lower() for a, b in zip(inputs, orderings))
    if differ:
        yield Finding(node, f"[{_WG}.MISMATCH_WITH_DISTINCT_INPUT] listagg(DISTINCT ...) "
                      "WITHIN GROUP orders by something other than its input",
                      "order by the DISTINCT input itself")
    elif len(inputs) == 1 and is_(inputs[0].type, *_UNSAFE_TO_STRING):
        yield Finding(node, f"[{_WG}.MISMATCH_WITH_DISTINCT_INPUT_UNSAFE_CAST] listagg(DISTINCT"
                      f" ...) of a {type_string(inputs[0].type)}: its text is not one per "
                      "value in order, so DISTINCT and WITHIN GROUP would disagree",
                      "cast the input to STRING in both places: listagg(DISTINCT CAST(x AS "
                      "STRING)) WITHIN GROUP (ORDER BY CAST(x AS STRING))")


def _window_spec(window: exp.Window) -> exp.Window | None:
    """The spec a window call uses: its own, or the WINDOW clause's for ``OVER w`` (None:
    ``w`` is not defined there)."""
    name = window.args.get("alias")
    if not isinstance(name, exp.Identifier):
        return window
    select = window.find_ancestor(exp.Select)
    while select is not None:  # the nearest query's WINDOW clause (an outer one: left to Spark)
        for definition in select.args.get("windows") or []:
            if isinstance(definition, exp.Window) and \
                    definition.this.name.lower() == name.name.lower():
                return definition
        select = select.find_ancestor(exp.Select)
    return None


def _window(node: exp.Window) -> Iterator[Finding]:
    if node.parent is not None and node.arg_key == "windows":
        return  # a WINDOW clause's definition
    spec = _window_spec(node)
    if spec is None:
        yield Finding(node, "[MISSING_WINDOW_SPECIFICATION] OVER "
                      f"{node.args['alias'].name}: no window of that name in the WINDOW clause",
                      "define it: `WINDOW w AS (PARTITION BY ... ORDER BY ...)` after "
                      "HAVING, or write the window out")
        return
    func = node.this
    while isinstance(func, (exp.IgnoreNulls, exp.RespectNulls)):
        func = func.this
    arg = func.this if isinstance(func, exp.Func) else None
    if isinstance(func, exp.GroupConcat) and isinstance(arg, exp.Order):
        arg = arg.this
    if is_aggregate_call(func) and isinstance(arg, exp.Distinct):
        yield Finding(node, "[DISTINCT_WINDOW_FUNCTION_UNSUPPORTED] an aggregate over a window "
                      "cannot be DISTINCT", "aggregate DISTINCT values in a subquery (GROUP BY),"
                      " then join or window over it")
        return
    own_order = isinstance(func, (exp.Median, exp.PercentileCont, exp.PercentileDisc)) or (
        isinstance(func, exp.WithinGroup) and isinstance(
            func.this, (exp.PercentileCont, exp.PercentileDisc))) or (
        isinstance(func, exp.GroupConcat) and isinstance(func.this, exp.Order))
    if own_order and (spec.args.get("order") or not _whole_partition(spec.args.get("spec"))):
        yield Finding(node, "[INVALID_WINDOW_SPEC_FOR_AGGREGATION_FUNC] "
                      f"{_name(func.this if isinstance(func, exp.WithinGroup) else func)}() "
                      "orders its own input: its window takes no ORDER BY and no frame",
                      "keep PARTITION BY only in its OVER (...)")


def _whole_partition(frame: exp.Expr | None) -> bool:
    """No frame, or ``ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING``."""
    if not isinstance(frame, exp.WindowSpec):
        return frame is None
    args = {k: str(frame.args.get(k) or "").upper() for k in
            ("kind", "start", "start_side", "end", "end_side")}
    return args == {"kind": "ROWS", "start": "UNBOUNDED", "start_side": "PRECEDING",
                    "end": "UNBOUNDED", "end_side": "FOLLOWING"}


def _filter(node: exp.Filter) -> Iterator[Finding]:
    where = node.expression
    cond = where.this if isinstance(where, exp.Where) else None
    if cond is None:
        return
    if isinstance(cond, (exp.Column, exp.Literal)) and is_known(cond.type) and \
            not is_(cond.type, exp.DType.BOOLEAN):
        yield Finding(cond, "[INVALID_AGGREGATE_FILTER.NOT_BOOLEAN] an aggregate's FILTER is "
                      f"a {type_string(cond.type)}, not a BOOLEAN", _FILTER_HINT)
        return
    for inner in own_nodes(cond):
        if isinstance(inner, exp.Window):
            yield Finding(inner, "[INVALID_AGGREGATE_FILTER.CONTAINS_WINDOW_FUNCTION] an "
                          "aggregate's FILTER holds a window function", _FILTER_HINT)
            return
        if is_aggregate_call(inner):
            yield Finding(inner, "[INVALID_AGGREGATE_FILTER.CONTAINS_AGGREGATE] an aggregate's "
                          f"FILTER holds the aggregate {_name(inner)}()", _FILTER_HINT)
            return
        if isinstance(inner, exp.Func) and _name(inner) in NONDETERMINISTIC:
            yield Finding(inner, "[INVALID_AGGREGATE_FILTER.NON_DETERMINISTIC] an aggregate's "
                          f"FILTER calls {_name(inner)}(), which differs from call to call",
                          _FILTER_HINT)
            return


_FILTER_HINT = "filter on the row's own values; compute the rest in a subquery first"


def _pivot(node: exp.Pivot) -> Iterator[Finding]:
    if not node.args.get("unpivot"):  # an UNPIVOT's IN lists columns
        for field in node.args.get("fields") or []:
            values = field.expressions if isinstance(field, exp.In) else []
            column = next((c for v in values for c in v.find_all(exp.Column)), None)
            if column is not None:
                yield Finding(column, f"[NON_LITERAL_PIVOT_VALUES] PIVOT's value {column.sql()}"
                              " reads a column: its values are literals", "list the values "
                              "the pivot column takes as literals: IN (2012, 2013)")
    for agg in node.expressions:
        call = agg.unalias()
        nested = next((n for n in call.walk() if n is not call and is_aggregate_call(n)), None)
        if nested is not None and is_aggregate_call(call):
            yield Finding(nested, f"[NESTED_AGGREGATE_FUNCTION] PIVOT's {_name(call)}() holds "
                          f"the aggregate {_name(nested)}()", "aggregate once in PIVOT; "
                          "pre-aggregate in a subquery")


class AggregateCall(ModelRule):
    """Aggregate calls are written as Spark's analyser accepts them: WITHIN GROUP after an
    ordered-set aggregate only, and where one needs it
    ([INVALID_SQL_SYNTAX.FUNCTION_WITH_UNSUPPORTED_SYNTAX], [INVALID_WITHIN_GROUP_EXPRESSION]);
    no DISTINCT aggregate over a window ([DISTINCT_WINDOW_FUNCTION_UNSUPPORTED]), no window
    ORDER BY or frame for median, percentile_cont/_disc or listagg with WITHIN GROUP
    ([INVALID_WINDOW_SPEC_FOR_AGGREGATION_FUNC]), OVER w names a WINDOW clause's window
    ([MISSING_WINDOW_SPECIFICATION]); an aggregate FILTER without aggregates, windows or
    random calls ([INVALID_AGGREGATE_FILTER]); no aggregate in a PIVOT's aggregate."""

    id = "aggregate-call"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.query is None or not ctx.nodes.has(exp.AggFunc, exp.WithinGroup, exp.Window,
                                                  exp.Filter, exp.Pivot):
            return
        yield from self.findings(ctx, aggregate_call_problems(ctx.query))
