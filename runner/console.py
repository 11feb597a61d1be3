"""All printing: violations (text | json | github), errors, batch progress and summaries."""

from __future__ import annotations

import json
import sys
from typing import IO, TYPE_CHECKING, Any, Literal, Sequence

import click

from .lint.base import Violation

if TYPE_CHECKING:
    from .engine.batch import BatchResult
    from .engine.stream import StreamSummary
    from .sinks import WriteResult
    from .tables import TableInfo

__all__ = ["Console", "Format", "batch_doc", "summary_doc"]

Format = Literal["text", "json", "github"]


def _github_escape(text: str, *, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


class Console:
    """Writes to stdout (results) and stderr (errors); colour only on a terminal."""

    def __init__(self, *, out: IO[str] | None = None, err: IO[str] | None = None) -> None:
        self.out = out or sys.stdout
        self.err = err or sys.stderr

    def _echo(self, text: str, *, err: bool = False) -> None:
        click.echo(text, file=self.err if err else self.out)

    # -- compile ---------------------------------------------------------------------
    def violations(self, violations: Sequence[Violation], *, fmt: Format,
                   models: int, target: str | None, extra: dict[str, Any] | None = None) -> None:
        errors = sum(v.severity == "error" for v in violations)
        warnings = len(violations) - errors
        if fmt == "json":
            doc = {"ok": errors == 0, "models": models, "errors": errors, "warnings": warnings,
                   "target": target, "violations": [v.to_dict() for v in violations]}
            doc.update(extra or {})
            self._echo(json.dumps(doc, indent=2))
            return
        for v in violations:
            if fmt == "github":
                level = "error" if v.severity == "error" else "warning"
                props = [f"file={_github_escape(v.path, prop=True)}"]
                if v.line:
                    props.append(f"line={v.line}")
                if v.column:
                    props.append(f"col={v.column}")
                props.append(f"title={_github_escape(v.rule, prop=True)}")
                message = v.message + (f"\n{v.hint}" if v.hint else "")
                self._echo(f"::{level} {','.join(props)}::{_github_escape(message)}")
            else:
                colour = "red" if v.severity == "error" else "yellow"
                label = click.style(v.severity, fg=colour, bold=True)
                self._echo(f"{v.location()}: {label} [{v.rule}] {v.message}")
                if v.hint:
                    self._echo(f"    hint: {v.hint}")
        where = f" -> {target}" if target and errors == 0 else ""
        self._echo(f"compiled {models} model{'s' * (models != 1)}: {errors} error"
                   f"{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}{where}")

    # -- stream ----------------------------------------------------------------------
    def batch(self, r: "BatchResult") -> None:
        """One progress line per batch."""
        def model(w: "WriteResult") -> str:
            text = f"{w.model} {'skipped' if w.skipped else f'{w.rows:,}'}"
            hits = {n: c for n, c in r.expectations.get(w.model, {}).items() if c}
            if hits:  # rows that broke an expectation (dropped, quarantined)
                text += " [" + ", ".join(f"{n} {c:,}" for n, c in hits.items()) + "]"
            return text

        models = "  ".join(model(w) for w in r.writes)
        self._echo(f"batch {r.batch_id}: in {r.input_rows:,}  dead {r.dead_letters:,}  "
                   f"{models}  ({r.seconds:.2f}s)")

    def event(self, message: str) -> None:
        self._echo(click.style(message, dim=True))

    def summary(self, s: "StreamSummary") -> None:
        models = ", ".join(f"{m} {n:,}" for m, n in sorted(s.rows_by_model.items()))
        why = " (stopped by signal)" if s.stopped_by_signal else ""
        self._echo(f"done{why}: {s.batches} batch{'es' * (s.batches != 1)}, "
                   f"{s.input_rows:,} records in, {s.dead_letters:,} dead letters, "
                   f"rows written: {models or 'none'}; {s.skipped_sinks} sink writes skipped "
                   f"as already committed; {s.seconds:.1f}s")

    def tables(self, infos: Sequence["TableInfo"]) -> None:
        for t in infos:
            if not t.exists:
                self._echo(f"{t.name}: no table yet at {t.path}")
                continue
            self._echo(click.style(f"{t.name}", bold=True) +
                       f": {t.rows:,} rows, version {t.version}  ({t.path})")
            for row in t.sample:
                self._echo("    " + json.dumps(row, default=str, ensure_ascii=False)[:300])

    # -- errors ----------------------------------------------------------------------
    def error(self, message: str) -> None:
        self._echo(click.style("error: ", fg="red", bold=True) + message, err=True)

    def info(self, message: str) -> None:
        self._echo(message)

    def json_line(self, doc: dict[str, Any]) -> None:
        self._echo(json.dumps(doc, separators=(",", ":"), default=str))


def batch_doc(r: "BatchResult") -> dict[str, Any]:
    """A batch as a JSON-lines progress record."""
    return {"batch_id": r.batch_id, "input_rows": r.input_rows, "dead_letters": r.dead_letters,
            "rows": r.rows_by_model, "skipped": list(r.skipped),
            "expectations": {m: dict(c) for m, c in r.expectations.items()},
            "seconds": round(r.seconds, 3)}


def summary_doc(s: "StreamSummary") -> dict[str, Any]:
    return {"batches": s.batches, "input_rows": s.input_rows, "dead_letters": s.dead_letters,
            "rows": s.rows_by_model, "skipped_sinks": s.skipped_sinks,
            "seconds": round(s.seconds, 3), "stopped_by_signal": s.stopped_by_signal}
