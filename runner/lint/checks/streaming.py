"""Streaming-aware rules: what a micro-batch pipeline gets wrong that no SQL linter sees.

A model runs once per micro-batch, over that batch's rows only, and a batch can be replayed
after a crash (same batch id, same input). Hence: aggregates in append models are per-batch
partials, merge models must be deterministic, and a merge source needs one row per key.
"""

from __future__ import annotations

from collections.abc import Iterator

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from runner.errors import Violation
from runner.lint.checks.rules import ModelRule, time_column
from runner.lint.reading.context import ModelContext
from runner.lint.resolution.aggregates import grouping_aggregates
from runner.lint.resolution.select_parts import relation_selects
from runner.lint.resolution.unique import identifies_window, time_window
from runner.lint.sql.spark_dialect import SPARK

__all__ = ["AppendAggregate", "AppendWindow", "MergeKeyNotUnique", "NondeterministicMerge"]


_NONDETERMINISTIC_NODES = tuple(getattr(exp, n) for n in (
    "Rand", "Randn", "Randstr", "Uuid", "CurrentTimestamp", "CurrentTimestampLTZ", "CurrentDate",
    "CurrentDatetime", "CurrentTime", "Localtime", "Localtimestamp", "Shuffle") if hasattr(exp, n))
_NONDETERMINISTIC_NAMES = frozenset({
    "now", "rand", "randn", "random", "uuid", "shuffle", "current_timestamp", "current_date",
    "localtimestamp", "monotonically_increasing_id", "spark_partition_id", "input_file_name",
    "uniform", "randstr"})


def _nondeterministic(node: exp.Expr) -> Iterator[tuple[str, exp.Expr]]:
    for n in node.walk(bfs=False):
        if isinstance(n, exp.Anonymous) and n.name.lower() in _NONDETERMINISTIC_NAMES:
            yield n.name.lower(), n
        elif (isinstance(n, exp.Column) and not n.table
              and n.name.lower() in ("localtimestamp", "current_time")):
            yield n.name.lower(), n
        elif isinstance(n, _NONDETERMINISTIC_NODES):
            yield n.sql(dialect="spark").split("(")[0].lower(), n


class NondeterministicMerge(ModelRule):
    """A merge model should be deterministic: a replayed micro-batch (same batch id, same
    input) must write the same values, and rand(), uuid(), current_timestamp(), now(),
    monotonically_increasing_id() ... differ on every run."""

    id = "nondeterministic-merge"
    default_severity = "warn"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        config = ctx.model.config
        if config.materialized != "merge":
            return
        hint = (f"derive the value from the event instead (e.g. its "
                f"{time_column(ctx, events_first=True)}, or "
                "_batch_id for the micro-batch)")
        seen: set[str] = set()
        for statement in ctx.statements:
            for name, node in _nondeterministic(statement):
                if name not in seen:
                    seen.add(name)
                    yield self.at(ctx, node, f"{name}() in a merge model: a replayed batch would "
                                  "write different values", hint)
        texts = [*(config.merge_update or {}).values(), config.merge_condition or ""]
        for text in filter(None, texts):
            try:
                parsed = sqlglot.parse_one(text, read=SPARK)
            except (ParseError, TokenError):
                continue  # merge-update reports it
            for name, _ in _nondeterministic(parsed):
                if name not in seen:
                    seen.add(name)
                    yield self.at_config(ctx, f"{name}() in merge_update/merge_condition: a "
                                         "replayed batch would write different values", hint)


# -- the grouping and windows of one SELECT, in the model's own names --------------------------

_EVENT_ID_NAMES = frozenset({"id", "eventid", "eventuuid", "messageid", "recordid", "uuid"})
_KAFKA_RECORD = frozenset({"_partition", "_offset"})
_RANKS = (exp.RowNumber, exp.Rank, exp.DenseRank)
_NEEDS_ORDER = (*_RANKS, exp.PercentRank, exp.CumeDist, exp.Ntile, exp.Lag, exp.Lead)
_VALUES = (exp.Lag, exp.Lead, exp.FirstValue, exp.LastValue, exp.NthValue)


def _event_ids(ctx: ModelContext) -> frozenset[str]:
    """Lower-cased names of the schema's top-level fields that identify an event (``id``,
    ``eventId``, ``event_id``, ``message_id``, ``uuid``...): all rows derived from one event
    are in one micro-batch."""
    return frozenset(f.name.lower() for f in ctx.project.schema.fields
                     if f.name.lower().replace("_", "") in _EVENT_ID_NAMES)


def _relations(select: exp.Select) -> set[str]:
    from_ = select.args.get("from_")
    sources = [from_.this] if from_ else []
    sources += [j.this for j in select.args.get("joins") or []]
    return {s.alias_or_name.lower() for s in sources}


def _top_column(node: exp.Expr, select: exp.Select) -> str | None:
    """The lower-cased name of a top-level column ``node`` refers to (``eventId``,
    ``p.eventId``; not a struct field like ``user.userId``)."""
    node = node.unnest()
    if not isinstance(node, exp.Column) or node.args.get("db") or node.is_star:
        return None
    if node.table and node.table.lower() not in _relations(select):
        return None
    return node.name.lower()


def _projection(select: exp.Select, item: exp.Expr) -> exp.Expr:
    """A GROUP BY item with ordinals and select-list aliases replaced by what they name."""
    projections = select.expressions
    if isinstance(item, exp.Literal) and item.is_int:
        i = int(item.name) - 1
        if 0 <= i < len(projections):
            chosen: exp.Expr = projections[i]
            return chosen.this if isinstance(chosen, exp.Alias) else chosen
    if isinstance(item, exp.Column) and not item.table:
        for p in projections:
            if isinstance(p, exp.Alias) and p.alias.lower() == item.name.lower():
                inner: exp.Expr = p.this
                return inner
    return item


def _group_items(select: exp.Select) -> list[exp.Expr]:
    """What ``select`` groups by (grouping sets, cube and rollup flattened; GROUP BY ALL: its
    projections without an aggregate)."""
    group = select.args.get("group")
    if group is None:
        return []
    if group.args.get("all"):
        return [p.this if isinstance(p, exp.Alias) else p for p in select.expressions
                if next(grouping_aggregates(p), None) is None]
    stack: list[exp.Expr] = []
    for key in ("expressions", "grouping_sets", "cube", "rollup"):
        stack += group.args.get(key) or []
    items: list[exp.Expr] = []
    while stack:
        item = stack.pop(0)
        if isinstance(item, (exp.GroupingSets, exp.Cube, exp.Rollup, exp.Tuple)):
            stack += item.expressions
        elif isinstance(item, exp.Paren):
            stack.append(item.this)
        else:
            items.append(_projection(select, item))
    return items


def _per_event(exprs: list[exp.Expr], select: exp.Select, ids: frozenset[str]) -> bool:
    """Grouping or partitioning by ``exprs`` keeps each event's rows apart: they include the
    event's id, or the Kafka record's partition and offset."""
    names = {_top_column(e, select) for e in exprs}
    return bool(names & ids) or _KAFKA_RECORD <= names


def _name_in(select: exp.Select, expr: exp.Expr) -> str | None:
    """The output column of ``select`` that ``expr`` becomes (its alias, or the column's own
    name), or None."""
    text = expr.unnest().sql(dialect="spark", comments=False).lower()
    for p in select.expressions:
        inner = p.this if isinstance(p, exp.Alias) else p
        if inner.sql(dialect="spark", comments=False).lower() == text:
            return str(p.alias_or_name)
    window = time_window(expr)
    if window is not None:
        return next((p.alias_or_name for p in select.expressions
                     if identifies_window(p.this if isinstance(p, exp.Alias) else p, window,
                                           expr.sql(comments=False).lower())), None)
    if isinstance(expr, exp.Column) and not expr.table:
        low = expr.name.lower()
        return next((p.alias_or_name for p in select.expressions
                     if p.alias_or_name.lower() == low), None)
    return None


def _column_name(select: exp.Select, expr: exp.Expr) -> str | None:
    """How a hint names ``expr``: the output column it becomes, else its own (last) name."""
    named = _name_in(select, expr)
    if named is not None:
        return named
    inner = expr.unnest()
    if isinstance(inner, exp.Column) and not inner.is_star:
        return inner.name
    if isinstance(inner, exp.Dot) and isinstance(inner.expression, exp.Identifier):
        return inner.expression.name
    return None


_ACCUMULATE = {exp.Count: "target.{c} + source.{c}", exp.Sum: "target.{c} + source.{c}",
               exp.Max: "greatest(target.{c}, source.{c})",
               exp.Min: "least(target.{c}, source.{c})"}


def _merge_update(select: exp.Select, names: dict[str, str] | None) -> dict[str, str]:
    """An accumulating merge_update for the select's count/sum/max/min output columns."""
    out: dict[str, str] = {}
    for p in select.expressions:
        inner = p.this.unnest() if isinstance(p, exp.Alias) else p
        template = _ACCUMULATE.get(type(inner))
        name = p.alias_or_name
        if template is not None and (names is None or name.lower() in names):
            out[name] = template.format(c=name)
    return out


class AppendAggregate(ModelRule):
    """An aggregate (or GROUP BY) in an append model aggregates one micro-batch only: each
    batch appends its own partial totals (an aggregate per event, grouped by the event's id,
    is complete: one event's rows are in one batch)."""

    id = "append-aggregate"
    default_severity = "warn"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.model.config.materialized != "append" or ctx.scope is None:
            return
        ids = _event_ids(ctx)
        for select in relation_selects(ctx.scope):
            group = select.args.get("group")
            agg = next((a for p in select.expressions for a in grouping_aggregates(p)), None)
            if group is None and agg is None:
                continue
            items = _group_items(select)
            if _per_event(items, select, ids):
                continue
            node = agg if agg is not None else group
            yield self.at(ctx, node, "aggregate in an append model: it aggregates one "
                          "micro-batch only, and every batch appends its own partial result",
                          self._hint(ctx, select, items))
            return

    def _hint(self, ctx: ModelContext, select: exp.Select, items: list[exp.Expr]) -> str:
        keys = [_name_in(select, i) or "<key>" for i in items] or ["<key>"]
        names = ctx.output_names
        unique = ctx.analysis.shape.unique if ctx.analysis is not None else ()
        root = ctx.scope is not None and select is ctx.scope.expression
        if root or frozenset(k.lower() for k in keys) in unique:
            update = _merge_update(select, names)
            more = f", merge_update={update!r}" if update else ""
            others = [p.alias_or_name for p in select.expressions
                      if next(grouping_aggregates(p), None) is not None
                      and p.alias_or_name not in update]
            return ("accumulate across batches with config(materialized='merge', "
                    f"unique_key={keys!r}{more})"
                    + ("" if items else " over a constant key column ('all' AS <key>)")
                    + (f"; {', '.join(others)} cannot add up batch by batch: keep a sum and a "
                       "count instead" if others else ""))
        return (f"the model's rows are not one per {', '.join(keys)}: aggregate in its own "
                f"merge model (config(materialized='merge', unique_key={keys!r}, merge_update="
                "...) accumulating each batch's part) and join its table as a source; or, "
                "to count per event, group by the event's id")


class AppendWindow(ModelRule):
    """A window function (... OVER) or QUALIFY in an append model sees one micro-batch's rows
    only: lag(), running totals and row_number() dedup miss the rows of other batches, and
    their values change with how the stream is cut into batches. Windows within one event
    (partitioned by its id) are complete; in a merge model, a row_number() that keeps one row
    per unique_key is its dedup."""

    id = "append-window"
    default_severity = "warn"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        config = ctx.model.config
        if ctx.scope is None or not ctx.nodes.has(exp.Window):
            return
        keys = {k.lower() for k in config.unique_key} if config.materialized == "merge" else None
        ids = _event_ids(ctx)
        for select in relation_selects(ctx.scope):
            named = {w.name.lower(): w for w in select.args.get("windows") or []}
            exploded = bool(select.args.get("laterals")) or any(
                isinstance(j.this, exp.Lateral) for j in select.args.get("joins") or [])
            qualify = select.args.get("qualify")
            roots = [*select.expressions, qualify]
            for window in (n for r in roots if r is not None for n in _own_windows(r)):
                func = window.this
                while isinstance(func, (exp.IgnoreNulls, exp.RespectNulls)):
                    func = func.this
                alias = window.args.get("alias")
                base = named.get(alias.name.lower()) if alias is not None else None
                spec = base if base is not None and not window.args.get("partition_by") \
                    else window
                partition = list(spec.args.get("partition_by") or [])
                order = window.args.get("order") or (base.args.get("order") if base else None)
                if isinstance(func, _NEEDS_ORDER) and order is None and alias is None:
                    continue  # window-order's error
                ranking = isinstance(func, _RANKS)
                if _per_event(partition, select, ids) and (
                        keys is not None or not ranking or exploded):
                    continue  # one event's rows: all in this batch (a dedup: see the doc)
                parts = [_column_name(select, p) or "<key>" for p in partition] or ["<key>"]
                if keys is not None and ranking and partition and {
                        p.lower() for p in parts} <= keys:
                    continue  # the merge's own dedup: one row per key, the merge does the rest
                in_qualify = qualify is not None and window.find_ancestor(exp.Qualify) is qualify
                yield self._violation(ctx, window, func, parts, order, select,
                                      in_qualify=in_qualify, merge=keys is not None)

    def _violation(self, ctx: ModelContext, window: exp.Expr, func: exp.Expr, parts: list[str],
                   order: exp.Expr | None, select: exp.Select, *, in_qualify: bool,
                   merge: bool) -> Violation:
        name = func.sql(dialect="spark", comments=False).split("(")[0].lower() + "()"
        where = "a merge model" if merge else "an append model"
        key = ", ".join(parts)
        ordered = order.expressions[0] if order is not None and order.expressions else None
        ts = (_column_name(select, ordered.this) if isinstance(ordered, exp.Ordered) else None
              ) or time_column(ctx, quote=False)
        newest = ">" if isinstance(ordered, exp.Ordered) and ordered.args.get("desc") else "<"
        if isinstance(func, _RANKS):
            message = (f"QUALIFY {name} OVER (PARTITION BY {key} ...) in {where} keeps one row "
                       f"per {key} within one micro-batch only: rows of other batches with "
                       "the same key are written again" if in_qualify else
                       f"window function {name} in {where} ranks one micro-batch's rows only: "
                       f"rows of other batches with the same {key} are not ranked with them")
            names = ctx.output_names
            output = "" if names is None or ts.lower() in names or ts.startswith("<") else \
                f" (with {ts} among the outputs)"
            hint = (f"keep one row per {key} across batches with config(materialized='merge', "
                    f"unique_key={parts!r}, merge_condition='source.{ts} {newest} "
                    f"target.{ts}'){output} and keep the per-batch filter: the merge drops the "
                    "other batches' rows")
            return self.at(ctx, window, message, hint)
        newest = ">"
        message = (f"window function {name} in {where} sees one micro-batch's rows only: rows "
                   f"of the same {key} in other batches are not in its window, and its values "
                   "change with how the stream is cut into batches")
        if isinstance(func, exp.AggFunc) and not isinstance(func, _VALUES):
            hint = (f"for totals across batches, aggregate per {key} in a merge model "
                    f"(config(materialized='merge', unique_key={parts!r}, merge_update=...) "
                    "accumulating each batch's part) and join its table here as a source")
        else:
            hint = (f"for values from earlier batches, keep the last row per {key} in a merge "
                    f"model (config(materialized='merge', unique_key={parts!r}, "
                    f"merge_condition='source.{ts} {newest} target.{ts}')) and join its table "
                    f"here as a source (read as of the previous batch), e.g. "
                    f"coalesce({name[:-1]}...) OVER (...), last.<column>)")
        return self.at(ctx, window, message, hint)


def _own_windows(root: exp.Expr) -> Iterator[exp.Window]:
    """Window calls under ``root`` in its own SELECT (not in nested queries)."""
    for node in root.walk(prune=lambda n: isinstance(n, (exp.Query, exp.Subquery))):
        if isinstance(node, exp.Window):
            yield node


class MergeKeyNotUnique(ModelRule):
    """A merge model must yield one row per unique_key in each batch, provably (GROUP BY the
    key, DISTINCT, or a row_number() = 1 filter per key): a MERGE fails when two source rows
    match one target row."""

    id = "merge-key-not-unique"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        config = ctx.model.config
        if config.materialized != "merge" or ctx.analysis is None or config.sequence_by:
            return  # a change-data-capture model keeps the latest change per key itself
        keys = frozenset(k.lower() for k in config.unique_key)
        if any(u <= keys for u in ctx.analysis.shape.unique):
            return
        key = ", ".join(config.unique_key)
        yield self.at_config(
            ctx, f"unique_key ({key}) is not provably unique per batch: two rows with one key "
            "in a batch make the MERGE fail",
            f"GROUP BY {key}, or keep one row per key: QUALIFY row_number() OVER "
            f"(PARTITION BY {key} ORDER BY {time_column(ctx)} DESC) = 1")
