"""The built-in SQL and config rules: one small class each, whose docstring is its description.

The streaming-aware rules live in :mod:`.streaming`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from runner.errors import Level, Violation, did_you_mean
from runner.lint.reading.context import ModelContext
from runner.lint.reading.rule import Rule
from runner.lint.resolution.ast_builder import ast_builder_refusals
from runner.lint.resolution.shapes import Finding
from runner.lint.spark_types.infer import field_type, is_, is_known, type_string
from runner.lint.sql.spark_dialect import SPARK

__all__ = [
    "DuplicateOutputColumn",
    "Expectations",
    "JoinKeyTypes",
    "MergeKey",
    "MergeUpdate",
    "ModelRule",
    "PartitionBy",
    "SingleSelect",
    "SyntaxRule",
    "UnknownColumn",
    "UnnamedOutputColumn",
    "time_column",
]

#: What a hint names when the model has no time column of its own.
TIME_PLACEHOLDER = "<ts_column>"
_TIMES = (exp.DType.TIMESTAMP, exp.DType.TIMESTAMPTZ, exp.DType.TIMESTAMPNTZ,
          exp.DType.TIMESTAMPLTZ, exp.DType.DATETIME)


def time_column(ctx: ModelContext, *, quote: bool = True, events_first: bool = False) -> str:
    """The column a hint orders by (backquoted unless ``quote=False``): the model's first output
    of a timestamp type, else the event schema's first top-level timestamp field (that one
    first with ``events_first``: inside the query, before its outputs exist), else
    ``<ts_column>``. Hints name the user's own columns, never the example project's."""
    outputs = ctx.analysis.outputs if ctx.analysis is not None else []
    names = [o.name for o in outputs if is_(o.type, *_TIMES)]
    events = [f.name for f in ctx.project.schema.fields if is_(f.type, *_TIMES)]
    names = events + names if events_first else names + events
    if not names:
        return TIME_PLACEHOLDER
    return f"`{names[0]}`" if quote else names[0]


class ModelRule(Rule):
    """A rule with helpers: a violation at a node of the SQL, or at the model's config() call."""

    def at(self, ctx: ModelContext, node: exp.Expr | None, message: str,
           hint: str | None = None) -> Violation:
        line, column, note = ctx.locate(node)
        return Violation(self.id, _level(self), ctx.model.path, line, column, message + note,
                         hint)

    def at_config(self, ctx: ModelContext, message: str, hint: str | None = None) -> Violation:
        return Violation(self.id, _level(self), ctx.model.path, ctx.model.config_line, None,
                         message, hint)

    def findings(self, ctx: ModelContext, found: Iterable[Finding]) -> Iterator[Violation]:
        for f in found:
            yield self.at(ctx, f.node, f.message, f.hint)


def _level(rule: Rule) -> Level:
    return "warn" if rule.default_severity == "warn" else "error"


class SyntaxRule(ModelRule):
    """The model's SQL must parse as Spark SQL: Spark's own grammar
    (:mod:`runner.lint.sql.spark_parser`), what Spark refuses right after parsing
    (:mod:`runner.lint.sql.spark_grammar`, :mod:`runner.lint.resolution.ast_builder`), and lint's
    SQL reader (:func:`~runner.lint.reading.context.parse_sql`)."""

    id = "syntax"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.syntax is not None and ctx.syntax.rule == self.id:
            s = ctx.syntax
            line, column, note = ctx.source_position(s.line, s.column)
            yield Violation(self.id, _level(self), ctx.model.path, line, column,
                            f"SQL syntax error: {s.message}{note}")
        elif ctx.query is not None:  # what Spark's AST builder refuses after its grammar
            for f in ast_builder_refusals(ctx.query):
                yield self.at(ctx, f.node, f"SQL syntax error: {f.message}", f.hint)


class SingleSelect(ModelRule):
    """A model is exactly one statement (and :class:`~runner.lint.guard.NotAQuery` checks
    that it is a query): no second statement, not an empty file."""

    id = "single-select"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.syntax is not None:
            return
        statements = ctx.statements
        hint = "a model is the SELECT whose rows the runner writes to the model's table"
        if not statements:
            yield self.at_config(ctx, "the model has no SQL statement", hint)
        elif len(statements) > 1:
            yield self.at(ctx, statements[1], f"a model is one query; found {len(statements)} "
                          "statements", "remove the second statement (or make it another model)")


class UnknownColumn(ModelRule):
    """Columns and struct fields must exist in the event schema, parsed_events' metadata
    columns, the ref'd models' outputs or the query's own CTEs, subqueries and aliases."""

    id = "unknown-column"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.analysis is not None:
            yield from self.findings(ctx, ctx.analysis.unknown_columns)


class DuplicateOutputColumn(ModelRule):
    """Output column names must be unique (case-insensitive): a Delta table cannot hold two
    columns of one name."""

    id = "duplicate-output-column"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.analysis is None:
            return
        seen: dict[str, int | None] = {}
        for out in ctx.analysis.outputs:
            key = out.name.lower()
            if key in seen:
                first = f" (first at line {seen[key]})" if seen[key] else ""
                yield self.at(ctx, out.node, f"output column '{out.name}' appears twice{first}",
                              "give one of them another alias")
            else:
                seen[key] = ctx.position(out.node)[0]


class UnnamedOutputColumn(ModelRule):
    """Every computed output column should have an alias: Spark's generated names (like
    '(a + 1)') make poor, unstable table column names."""

    id = "unnamed-output-column"
    default_severity = "warn"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.analysis is None:
            return
        for out in ctx.analysis.outputs:
            if not out.named:
                yield self.at(ctx, out.node, f"output column `{out.name}` has no alias: Spark "
                              "names it after the expression's text",
                              f"name it: {out.name} AS <column_name>")


def _missing(ctx: ModelContext, columns: Iterable[str], what: str, rule: ModelRule
             ) -> Iterator[Violation]:
    names = ctx.output_names
    if names is None:
        return
    for col in columns:
        if col.lower() not in names:
            yield rule.at_config(ctx, f"{what} column '{col}' is not an output column"
                                 + did_you_mean(col, names.values()),
                                 f"output columns: {', '.join(names.values())}")


class MergeKey(ModelRule):
    """Every unique_key column of a merge model must be one of its output columns."""

    id = "merge-key"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.model.config.materialized == "merge":
            yield from _missing(ctx, ctx.model.config.unique_key, "unique_key", self)


class MergeUpdate(ModelRule):
    """merge_update keys must be non-key output columns; merge_update expressions and
    merge_condition may only read target.<column> and source.<column> of
    output columns."""

    id = "merge-update"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        seen: set[str] = set()
        for v in self._check(ctx):
            if v.message not in seen:
                seen.add(v.message)
                yield v

    def _check(self, ctx: ModelContext) -> Iterator[Violation]:
        config = ctx.model.config
        if config.materialized != "merge":
            return
        names = ctx.output_names
        keys = {k.lower() for k in config.unique_key}
        for column, text in (config.merge_update or {}).items():
            if column.lower() in keys:
                yield self.at_config(ctx, f"merge_update sets key column '{column}'",
                                     "key columns match rows; they cannot be updated")
            elif names is not None and column.lower() not in names:
                yield self.at_config(ctx, f"merge_update column '{column}' is not an output "
                                     "column" + did_you_mean(column, names.values()))
                continue
            yield from self._expression(ctx, f"merge_update['{column}']", text)
        if config.merge_condition is not None:
            yield from self._expression(ctx, "merge_condition", config.merge_condition)

    def _expression(self, ctx: ModelContext, where: str, text: str) -> Iterator[Violation]:
        try:
            node = sqlglot.parse_one(text, read=SPARK)
        except (ParseError, TokenError):
            return  # not-a-query reports it (runner.lint.guard)
        names = ctx.output_names
        for col in node.find_all(exp.Column):
            parts = [p.name for p in col.parts if isinstance(p, exp.Identifier)]
            if len(parts) < 2 or parts[0].lower() not in ("target", "source"):
                yield self.at_config(ctx, f"{where}: column '{col.sql(dialect='spark')}' must "
                                     "be qualified as target.<column> or source.<column>",
                                     f"e.g. target.{parts[-1]} + source.{parts[-1]}")
            elif names is not None and parts[1].lower() not in names:
                yield self.at_config(ctx, f"{where}: '{parts[1]}' is not an output column"
                                     + did_you_mean(parts[1], names.values()))


class PartitionBy(ModelRule):
    """Every partition_by column must be one of the model's output columns."""

    id = "partition-by"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        yield from _missing(ctx, ctx.model.config.partition_by, "partition_by", self)


class Expectations(ModelRule):
    """Each expectation's expr is a Spark predicate over the model's output columns (and
    their struct fields)."""

    id = "expectation"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        for expectation in ctx.model.config.expectations:
            where = f"expectation '{expectation.name}'"
            try:
                node = sqlglot.parse_one(expectation.expr, read=SPARK)
            except (ParseError, TokenError):
                continue  # not-a-query reports it (runner.lint.guard)
            if ctx.analysis is None or ctx.analysis.shape.open:
                continue
            shape = ctx.analysis.shape
            for col in node.find_all(exp.Column):
                parts = [p.name for p in col.parts if isinstance(p, exp.Identifier)]
                found = shape.find(parts[0]) if parts else None
                if parts and found is None:
                    yield self.at_config(ctx, f"{where}: '{parts[0]}' is not an output column"
                                         + did_you_mean(parts[0], shape.names),
                                         f"output columns: {', '.join(shape.names)}")
                    continue
                dtype = found[1] if found else None
                for field in parts[1:]:
                    dtype, _, candidates = field_type(dtype, field)
                    if dtype is None:
                        if candidates:
                            yield self.at_config(ctx, f"{where}: unknown field '{field}'"
                                                 + did_you_mean(field, candidates))
                        break


_FAMILIES = {
    **dict.fromkeys((exp.DType.TINYINT, exp.DType.SMALLINT, exp.DType.INT, exp.DType.BIGINT,
                     exp.DType.FLOAT, exp.DType.DOUBLE, exp.DType.DECIMAL), "a number"),
    **dict.fromkeys((exp.DType.TEXT, exp.DType.VARCHAR, exp.DType.CHAR), "a string"),
    **dict.fromkeys((exp.DType.DATE, exp.DType.DATETIME, exp.DType.TIMESTAMP,
                     exp.DType.TIMESTAMPNTZ, exp.DType.TIMESTAMPLTZ), "a date or time"),
    exp.DType.BOOLEAN: "a boolean", exp.DType.BINARY: "binary",
}


def _conjuncts(node: exp.Expr | None) -> Iterator[exp.Expr]:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        yield from _conjuncts(node.this)
        yield from _conjuncts(node.expression)
    elif node is not None:
        yield node


def _key_type(node: exp.Expr) -> exp.DataType | None:
    dtype = node.type
    if isinstance(node, exp.Literal) or not is_known(dtype) or is_(dtype, exp.DType.NULL):
        return None
    return dtype


class JoinKeyTypes(ModelRule):
    """A join key compared with a key of another type (a string with a number, a date with a
    timestamp) matches through an implicit cast: values that do not cast silently find no
    row (e.g. a source's string ids joined with numeric event ids). Cast one side
    explicitly."""

    id = "join-key-types"
    default_severity = "warn"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        query = ctx.query
        if query is None or ctx.analysis is None:
            return
        for join in query.find_all(exp.Join):
            for cond in _conjuncts(join.args.get("on")):
                if not isinstance(cond, (exp.EQ, exp.NullSafeEQ)):
                    continue
                left, right = _key_type(cond.this), _key_type(cond.expression)
                if left is None or right is None or left.this == right.this:
                    continue
                families = (_FAMILIES.get(left.this), _FAMILIES.get(right.this))
                same = families[0] is not None and families[0] == families[1]
                if same and families[0] != "a date or time":
                    continue  # INT = BIGINT, STRING = VARCHAR: widened without loss
                a, b = (s.sql(dialect="spark", comments=False) for s in (cond.this,
                                                                          cond.expression))
                yield self.at(ctx, cond, f"join key {a} ({type_string(left)}) is compared with "
                              f"{b} ({type_string(right)})",
                              f"cast one side so both are one type, e.g. CAST({b} AS "
                              f"{type_string(left)})")
