"""Lint rendered models with sqlglot (Spark dialect): rules return violations, never print.

>>> [row[0] for row in rules_table()][:3]
['syntax', 'single-select', 'not-a-query']
"""

from __future__ import annotations

from runner.errors import Level, Violation
from runner.lint.linter import (
    BUILTIN_RULES,
    LintResult,
    check_lint_config,
    lint_models,
    rules_table,
)
from runner.lint.reading.context import ModelContext
from runner.lint.reading.rule import Rule

__all__ = [
    "BUILTIN_RULES",
    "Level",
    "LintResult",
    "ModelContext",
    "Rule",
    "Violation",
    "check_lint_config",
    "lint_models",
    "rules_table",
]
