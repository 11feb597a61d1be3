"""The rendered SQL's tokens, for checks that must see what was written (sqlglot's tree renames
calls, folds literal suffixes into casts and drops a unary ``+``), and violations placed at a
token's offset."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import TokenError
from sqlglot.tokens import Token

from runner.errors import Level, Violation

if TYPE_CHECKING:
    from runner.lint.reading.context import ModelContext
    from runner.lint.reading.rule import Rule

__all__ = ["tokens", "violation_at"]


@lru_cache(maxsize=8)
def tokens(sql: str) -> tuple[Token, ...]:
    """Spark SQL's tokens of ``sql`` (none when it does not tokenize: the syntax rule's)."""
    try:
        return tuple(Dialect.get_or_raise("spark").tokenizer().tokenize(sql))
    except TokenError:
        return ()


def violation_at(rule: Rule, ctx: ModelContext, offset: int, message: str,
                 hint: str | None = None) -> Violation:
    """A violation of ``rule`` at ``offset`` of the rendered SQL, placed in the model's file."""
    sql = ctx.model.sql
    line = sql.count("\n", 0, offset) + 1
    column = offset - (sql.rfind("\n", 0, offset) + 1) + 1
    line_, column_, note = ctx.source_position(line, column)
    level: Level = "warn" if rule.default_severity == "warn" else "error"
    return Violation(rule.id, level, ctx.model.path, line_, column_, message + note, hint)
