"""Lint building blocks: a :class:`Violation`, and :class:`Rule`, whose docstring is its message.

A rule is a small class with one ``check`` method returning violations; severity comes from
project.yml (``lint: rules: {<rule id>: error|warn|off}``) over the rule's default. The linter
returns violations; the console prints them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Iterable, Literal

if TYPE_CHECKING:
    from .context import ModelContext

__all__ = ["Rule", "Violation", "Level"]

Level = Literal["error", "warn"]


@dataclass(frozen=True)
class Violation:
    """One finding: rule id, severity, where, what, and how to fix it."""

    rule: str
    severity: Level
    path: str
    line: int | None
    column: int | None
    message: str
    hint: str | None = None

    def location(self) -> str:
        where = self.path
        if self.line:
            where += f":{self.line}"
            if self.column:
                where += f":{self.column}"
        return where

    def to_dict(self) -> dict[str, object]:
        return {"rule": self.rule, "severity": self.severity, "path": self.path,
                "line": self.line, "column": self.column, "message": self.message,
                "hint": self.hint}


class Rule:
    """Base class of lint rules. Subclasses set ``id`` and ``default_severity``."""

    id: ClassVar[str]
    default_severity: ClassVar[Level | Literal["off"]] = "error"

    @property
    def description(self) -> str:
        return " ".join((self.__doc__ or "").split())

    def check(self, ctx: "ModelContext") -> Iterable[Violation]:  # pragma: no cover - abstract
        raise NotImplementedError
