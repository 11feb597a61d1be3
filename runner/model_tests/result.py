"""What a test run reports: one :class:`TestResult` per test, and the run's summary."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = ["Status", "TestResult", "TestSummary"]

Status = Literal["pass", "fail", "warn", "error"]


@dataclass(frozen=True)
class TestResult:
    """One unit test or data test, run.

    Attributes:
        kind: ``unit`` (a test case run through the batch path) or ``data`` (a check on a
            warehouse table).
        model: the model the test is declared for.
        name: the unit test's name, or ``<column> <test>`` for a data test.
        status: ``pass``; ``fail`` (the model or data is wrong); ``warn`` (a failing data test
            with ``severity: warn``); ``error`` (the test itself could not run: bad test data,
            a missing table, a model that failed).
        message: one line saying what happened.
        details: further lines: a row diff, sample failing rows.
        where: ``path:line`` of the declaration.
        seconds: wall time.
    """

    kind: Literal["unit", "data"]
    model: str
    name: str
    status: Status
    message: str = ""
    details: tuple[str, ...] = ()
    where: str = ""
    seconds: float = 0.0


@dataclass
class TestSummary:
    results: list[TestResult] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, status: Status) -> int:
        return sum(r.status == status for r in self.results)

    @property
    def ok(self) -> bool:
        """No test failed or errored (warnings allowed)."""
        return not any(r.status in ("fail", "error") for r in self.results)
