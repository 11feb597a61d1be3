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
from runner.lint.context import ModelContext
from runner.lint.resolve import relation_selects
from runner.lint.rules import ModelRule
from runner.lint.unique import aggregates

__all__ = ["AppendAggregate", "MergeKeyNotUnique", "NondeterministicMerge"]


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
        hint = ("derive the value from the event instead (e.g. its `timestamp`, or "
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
                parsed = sqlglot.parse_one(text, read="spark")
            except (ParseError, TokenError):
                continue  # merge-update reports it
            for name, _ in _nondeterministic(parsed):
                if name not in seen:
                    seen.add(name)
                    yield self.at_config(ctx, f"{name}() in merge_update/merge_condition: a "
                                         "replayed batch would write different values", hint)


class AppendAggregate(ModelRule):
    """An aggregate (or GROUP BY) in an append model aggregates one micro-batch only: each
    batch appends its own partial totals."""

    id = "append-aggregate"
    default_severity = "warn"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.model.config.materialized != "append" or ctx.scope is None:
            return
        for select in relation_selects(ctx.scope):
            group = select.args.get("group")
            agg = next((a for p in select.expressions for a in aggregates(p)), None)
            if group is None and agg is None:
                continue
            node = agg if agg is not None else group
            keys = [o.name for o in (ctx.analysis.outputs if ctx.analysis else [])
                    if o.expr is not None and next(aggregates(o.expr), None) is None]
            sums = [o.name for o in (ctx.analysis.outputs if ctx.analysis else [])
                    if o.expr is not None and next(aggregates(o.expr), None) is not None]
            n = sums[0] if sums else "n"
            yield self.at(ctx, node, "aggregate in an append model: it aggregates one "
                          "micro-batch only, and every batch appends its own partial result",
                          "accumulate across batches with "
                          f"config(materialized='merge', unique_key={keys or ['<key>']!r}, "
                          f"merge_update={{'{n}': 'target.{n} + source.{n}'}})")
            return


class MergeKeyNotUnique(ModelRule):
    """A merge model must yield one row per unique_key in each batch, provably (GROUP BY the
    key, DISTINCT, or a row_number() = 1 filter per key): a MERGE fails when two source rows
    match one target row."""

    id = "merge-key-not-unique"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        config = ctx.model.config
        if config.materialized != "merge" or ctx.analysis is None:
            return
        keys = frozenset(k.lower() for k in config.unique_key)
        if any(u <= keys for u in ctx.analysis.shape.unique):
            return
        key = ", ".join(config.unique_key)
        yield self.at_config(
            ctx, f"unique_key ({key}) is not provably unique per batch: two rows with one key "
            "in a batch make the MERGE fail",
            f"GROUP BY {key}, or keep one row per key: QUALIFY row_number() OVER "
            f"(PARTITION BY {key} ORDER BY `timestamp` DESC) = 1")
