"""Lint building blocks: :class:`Rule`, whose docstring is its message (the :class:`Violation`
it returns is :mod:`runner.errors`'s, shared by every compile stage).

A rule is a small class with one ``check`` method returning violations; severity comes from
project.yml (``lint: rules: {<rule id>: error|warn|off}``) over the rule's default. The linter
returns violations; the console prints them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, ClassVar, Literal

from runner.errors import Level, Violation

if TYPE_CHECKING:
    from runner.lint.reading.context import ModelContext

__all__ = ["Rule", "Violation", "Level"]  # Violation and Level are re-exported from runner.errors

class Rule:
    """Base class of lint rules. Subclasses set ``id`` and ``default_severity``."""

    id: ClassVar[str]
    default_severity: ClassVar[Level | Literal["off"]] = "error"

    @property
    def description(self) -> str:
        return " ".join((self.__doc__ or "").split())

    def check(self, ctx: ModelContext) -> Iterable[Violation]:  # pragma: no cover - abstract
        raise NotImplementedError
