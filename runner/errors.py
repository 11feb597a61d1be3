"""The project's own error hierarchy.

Every error a user can cause is a :class:`RunnerError`; the CLI turns it into one clear message
and an exit code (``exit_code``), never a traceback (``--debug`` shows one).
"""

from __future__ import annotations

__all__ = [
    "RunnerError",
    "ConfigError",
    "TemplateError",
    "SqlError",
    "LintError",
    "ExecutionError",
    "SinkError",
    "SourceError",
]


class RunnerError(Exception):
    """Base class of every error the runner reports to a user."""

    exit_code: int = 1

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 column: int | None = None, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.line = line
        self.column = column
        self.hint = hint

    def __str__(self) -> str:
        where = ""
        if self.path:
            where = self.path
            if self.line:
                where += f":{self.line}"
                if self.column:
                    where += f":{self.column}"
            where += ": "
        text = f"{where}{self.message}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class ConfigError(RunnerError):
    """project.yml or the command line is wrong (exit code 2)."""

    exit_code = 2


class TemplateError(RunnerError):
    """A model or macro failed to render (exit code 1)."""


class SqlError(RunnerError):
    """A model's SQL does not parse or is not a single SELECT (exit code 1)."""


class LintError(RunnerError):
    """Lint found violations at error level (exit code 1)."""


class ExecutionError(RunnerError):
    """A micro-batch failed at run time (a model, a source or a sink)."""


class SinkError(ExecutionError):
    """A Delta sink could not be written (names the model and table)."""


class SourceError(ExecutionError):
    """The source could not be read (bad path, unreachable broker...)."""
