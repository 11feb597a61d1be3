"""Test results as text lines (the CLI echoes them; nothing here prints)."""

from __future__ import annotations

import click

from runner.model_tests.result import TestResult, TestSummary

__all__ = ["result_lines", "summary_line"]

_STYLE = {"pass": ("PASS", "green"), "fail": ("FAIL", "red"), "warn": ("WARN", "yellow"),
          "error": ("ERROR", "red")}


def result_lines(r: TestResult) -> list[str]:
    """``PASS unit request_logs.classifies_status (0.84s)`` plus, unless it passed, where it
    is declared, what went wrong and the details (a row diff, sample rows)."""
    label, colour = _STYLE[r.status]
    name = f"{r.model}.{r.name}" if r.kind == "unit" else f"{r.model}: {r.name}"
    head = (click.style(f"{label:<5}", fg=colour, bold=True)
            + f" {r.kind:<4} {name}  ({r.seconds:.2f}s)")
    if r.status == "pass":
        return [head]
    lines = [head, f"      {r.where}: {r.message}" if r.where else f"      {r.message}"]
    lines += ["        " + d for d in r.details]
    return lines


def summary_line(s: TestSummary) -> str:
    parts = [f"{s.count('pass')} passed", f"{s.count('fail')} failed"]
    if s.count("error"):
        parts.append(f"{s.count('error')} errored")
    if s.count("warn"):
        parts.append(f"{s.count('warn')} warned")
    n = len(s.results)
    return f"{n} test{'s' * (n != 1)}: {', '.join(parts)} ({s.seconds:.1f}s)"
