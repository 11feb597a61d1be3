"""The rules that guard execution: what passes them runs with the pipeline's credentials.

A model is one query over ``parsed_events``, ref'd models and CTEs, calling allowlisted Spark
built-ins (:mod:`runner.lint.reading.allowlist`); each SQL fragment of its config (expectations,
merge_update, merge_condition, apply_as_deletes) is one expression over the model's columns. These
rules are always errors: project.yml cannot turn them off or down to warnings (:data:`GUARD_RULES`,
checked by ``check_lint_config``).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from runner.errors import Violation
from runner.lint.checks.rules import ModelRule
from runner.lint.reading.allowlist import Problem, function_problems
from runner.lint.reading.context import ModelContext
from runner.lint.sql.spark_dialect import SPARK

__all__ = ["GUARD_RULES", "NotAQuery", "UnknownTable", "UnsafeFunction", "UnsafeTable",
           "fragments", "model_problems"]

#: Rule ids whose severity is always ``error`` (the guard rules, and the two that decide what
#: the guard sees: the SQL parses, and it is one statement).
GUARD_RULES = frozenset({"syntax", "single-select", "not-a-query", "unsafe-function",
                         "unsafe-table", "unknown-table"})


def model_problems(ctx: ModelContext) -> tuple[Problem, ...]:
    """What the guard refuses in the model's own SQL (its query statements), once per model."""
    return ctx.guard_problems


def fragments(ctx: ModelContext) -> Iterator[tuple[str, str]]:
    """``(where, SQL text)`` of every SQL fragment of the model's config."""
    config = ctx.model.config
    for expectation in config.expectations:
        yield f"expectation '{expectation.name}'", expectation.expr
    for column, text in (config.merge_update or {}).items():
        yield f"merge_update['{column}']", text
    if config.merge_condition is not None:
        yield "merge_condition", config.merge_condition
    if config.apply_as_deletes is not None:
        yield "apply_as_deletes", config.apply_as_deletes


@lru_cache(maxsize=4096)
def _fragment_problems(where: str, text: str) -> tuple[tuple[str, str], ...]:
    """``(rule, message)`` for one config fragment: one expression, allowlisted calls, no
    table. Cached: the four guard rules ask about each fragment, and models often share one
    (``target.n + source.n``)."""
    return tuple(_find_fragment_problems(where, text))


def _find_fragment_problems(where: str, text: str) -> Iterator[tuple[str, str]]:
    try:
        statements = [s for s in sqlglot.parse(text, read=SPARK) if s is not None]
    except (ParseError, TokenError) as e:
        first = e.errors[0]["description"] if isinstance(e, ParseError) and e.errors else e
        yield "not-a-query", f"{where} does not parse as one SQL expression: {first}"
        return
    if len(statements) != 1 or not isinstance(statements[0], (exp.Condition, exp.Interval)):
        kind = statements[0].key.upper() if len(statements) == 1 else \
            f"{len(statements)} statements"
        yield "not-a-query", f"{where} must be one SQL expression, not {kind}"
        return
    node = statements[0]
    for problem in function_problems(node):
        yield problem.rule, f"{where}: {problem.message}"
    for _ in node.find_all(exp.Table):
        yield "unsafe-table", f"{where} reads a table: config expressions read only the " \
            "model's columns (target./source. in merges)"
        break


class _GuardRule(ModelRule):
    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        syntax = ctx.syntax
        if syntax is not None and syntax.rule == self.id:  # found on tokens: lint cannot read it
            line, column, note = ctx.source_position(syntax.line, syntax.column)
            yield Violation(self.id, "error", ctx.model.path, line, column,
                            syntax.message + note, syntax.hint)
        for problem in model_problems(ctx):
            if problem.rule == self.id:
                yield self.at(ctx, problem.node, problem.message, problem.hint)
        for where, text in fragments(ctx):
            for rule, message in _fragment_problems(where, text):
                if rule == self.id:
                    yield self.at_config(ctx, message)


class NotAQuery(_GuardRule):
    """A model is a query (SELECT, WITH ... SELECT, UNION ...), never a command, DDL or DML;
    each SQL fragment of its config is one expression."""

    id = "not-a-query"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.syntax is None and ctx.statements and not isinstance(ctx.statements[0], exp.Query):
            kind = ctx.statements[0].key.upper()
            yield self.at(ctx, ctx.statements[0], f"a model is one SELECT query, not {kind}",
                          "a model is the SELECT whose rows the runner writes to its table")
        yield from super().check(ctx)


class UnsafeFunction(_GuardRule):
    """Functions are Spark SQL built-ins on the allowlist: no Java calls (reflect, java_method),
    no script transformation (TRANSFORM ... USING), no readers of files, no unbounded range()."""

    id = "unsafe-function"


class UnsafeTable(_GuardRule):
    """Tables are read through ref() or source(), never by path (text.`/path`), catalog name
    or IDENTIFIER(...)."""

    id = "unsafe-table"


class UnknownTable(_GuardRule):
    """Tables are parsed_events, models read through {{ ref('name') }}, or CTEs."""

    id = "unknown-table"
