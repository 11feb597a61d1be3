"""The project's own error hierarchy.

Every error a user can cause is a :class:`RunnerError`; the CLI turns it into one clear message
and an exit code (``exit_code``), never a traceback (``--debug`` shows one).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "Level",
    "Violation",
    "did_you_mean",
    "RunnerError",
    "ConfigError",
    "TemplateError",
    "ExecutionError",
    "CheckpointBusyError",
    "SparkServerLostError",
    "LeaseLostError",
    "SinkError",
    "DuplicateKeyError",
    "KafkaRecordError",
    "NullSequenceError",
    "SourceError",
    "StorageError",
]


class RunnerError(Exception):
    """Base class of every error the runner reports to a user."""

    exit_code: int = 1

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 column: int | None = None, hint: str | None = None,
                 also: Sequence[RunnerError] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.line = line
        self.column = column
        self.hint = hint
        self.also = tuple(also)

    def each(self) -> tuple[RunnerError, ...]:
        """This error and the ones found with it (``also``: e.g. every bad key of a file,
        each at its own line)."""
        return (self, *self.also)

    def violations(self, rule: str) -> list[Violation]:
        """Every error of :meth:`each` as a diagnostic, for ``--format json|github``."""
        return [Violation(rule, "error", e.path or "", e.line, e.column, e.message, e.hint)
                for e in self.each()]

    def __str__(self) -> str:
        if self.also:
            return "\n".join(RunnerError.__str__(e) for e in
                             (RunnerError(self.message, path=self.path, line=self.line,
                                          column=self.column, hint=self.hint), *self.also))
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


class ExecutionError(RunnerError):
    """A micro-batch failed at run time (a model, a source or a sink)."""


class CheckpointBusyError(ExecutionError):
    """Another runner holds the pipeline's checkpoint (exit code 75, sysexits' EX_TEMPFAIL:
    nothing is wrong with the project or the data; try again when that runner stops)."""

    exit_code = 75


class SparkServerLostError(ExecutionError):
    """The Spark Connect server cannot be reached, at start or while the stream runs (exit code
    69, sysexits' EX_UNAVAILABLE). The batch in flight was not committed: the next start
    replays it, and the tables' application transactions skip what it had written."""

    exit_code = 69


class LeaseLostError(ExecutionError):
    """This process may no longer write under its checkpoint: its lease in an object store was
    taken by another runner, or was not renewed in time (:mod:`runner.checkpoint.lease`).
    Nothing was committed by the write that raised it; a restart replays the batch."""


class SinkError(ExecutionError):
    """A Delta sink could not be written (names the model and table)."""


class DuplicateKeyError(SinkError):
    """A merge model's batch has two rows for one ``unique_key``: the model's own fault, found
    by its sink before anything is written (parked like a model's run-time error)."""


class KafkaRecordError(SinkError):
    """A Kafka model's records cannot reach their topic for a reason of the model's own (the
    topic does not exist, the client may not write it, a record is too large): its batch's
    transaction is aborted, nothing of it is visible, and the model is parked like a model's
    run-time error (:mod:`runner.sinks.kafka_out`)."""

    def __init__(self, message: str, *, error_class: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.error_class = error_class


class NullSequenceError(DuplicateKeyError):
    """A change-data-capture model yielded a change whose ``sequence_by`` value is NULL: the
    model's own fault, found by its sink before anything is written (parked likewise)."""


class SourceError(ExecutionError):
    """The source could not be read (bad path, unreachable broker...)."""


class StorageError(RunnerError, OSError):
    """A location could not be read or written: the object store did not answer, its bucket
    is missing, access was denied (exit code 74, sysexits' EX_IOERR: the project may be right
    and the store wrong). Also an ``OSError``, so code that handles a failed read of a local
    file handles a failed read of an object the same way; ``strerror`` is the message without
    the hint, for a caller that quotes it in its own error.

    >>> e = StorageError("s3://b/cp/ledger: Generic S3 error", location="s3://b/cp/ledger")
    >>> isinstance(e, OSError), e.exit_code, e.strerror
    (True, 74, 's3://b/cp/ledger: Generic S3 error')
    """

    exit_code = 74
    #: What to check, whatever the location: said once, in every storage error's hint.
    HINT = ("check the location, the storage settings that reach it (endpoint, region, "
            "credentials) and that the store answers")

    def __init__(self, message: str, *, location: str | None = None,
                 hint: str | None = None) -> None:
        RunnerError.__init__(self, message, hint=hint if hint is not None else self.HINT)
        self.strerror = message
        self.filename = location


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


def did_you_mean(name: str, candidates: Any) -> str:
    """``" (did you mean 'x'?)"`` for the closest candidate, or ``""``.

    Close spellings first; else the shortest candidate that the name begins (``perf`` ->
    ``performance``), for abbreviations, which spelling distance misses.

    >>> did_you_mean("perf", ["requests", "performance"])
    " (did you mean 'performance'?)"
    """
    names = [str(c) for c in candidates]
    close = difflib.get_close_matches(str(name), names, n=1, cutoff=0.6)
    if not close and len(str(name)) >= 3:
        low = str(name).lower()
        close = sorted((c for c in names if c.lower().startswith(low)), key=len)[:1]
    return f" (did you mean '{close[0]}'?)" if close else ""
