"""All printing: violations (text | json | github), errors, batch progress and summaries."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any, Literal

import click

from runner.errors import Violation
from runner.project.secrets import mask_secrets

if TYPE_CHECKING:
    from runner.runtime.backfill import BackfillProgress
    from runner.runtime.batch import BatchResult
    from runner.runtime.stream import StreamSummary
    from runner.sinks import WriteResult
    from runner.sinks.tables import TableInfo

__all__ = ["Console", "Format", "backfill_doc", "batch_doc", "plural", "summary_doc"]

Format = Literal["text", "json", "github"]


def plural(count: int, singular: str, many: str | None = None) -> str:
    """``"1 row"``, ``"2 rows"``, ``"1,500 rows"`` (``many``: an irregular plural).

    >>> plural(1, "batch", "batches"), plural(2, "batch", "batches")
    ('1 batch', '2 batches')
    """
    return f"{count:,} {singular if count == 1 else many or singular + 's'}"


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
        # The one place output leaves the runner: project.yml's secrets never pass it.
        click.echo(mask_secrets(text), file=self.err if err else self.out)

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

    def config_errors(self, violations: Sequence[Violation], *, fmt: Format) -> None:
        """Configuration errors (project.yml, the command line) as ``fmt``: the JSON document
        compile prints, or one annotation each (with a file only when there is one)."""
        if fmt != "github":
            self.violations(violations, fmt=fmt, models=0, target=None)
            return
        for v in violations:
            props = [f"file={_github_escape(v.path, prop=True)}"] if v.path else []
            props += [f"line={v.line}"] if v.path and v.line else []
            props.append(f"title={_github_escape(v.rule, prop=True)}")
            message = v.message + (f"\n{v.hint}" if v.hint else "")
            self._echo(f"::error {','.join(props)}::{_github_escape(message)}")

    # -- stream ----------------------------------------------------------------------
    def batch(self, r: BatchResult) -> None:
        """One progress line per batch."""
        def model(w: WriteResult) -> str:
            text = f"{w.model} {'skipped' if w.skipped else f'{w.rows:,}'}"
            hits = {n: c for n, c in r.expectations.get(w.model, {}).items() if c}
            if hits:  # rows that broke an expectation (dropped, quarantined)
                text += " [" + ", ".join(f"{n} {c:,}" for n, c in hits.items()) + "]"
            return text

        models = "  ".join(model(w) for w in r.writes)
        self._echo(f"batch {r.batch_id}: in {r.input_rows:,}  dead {r.dead_letters:,}  "
                   f"{models}  ({r.seconds:.2f}s)")

    def backfill(self, p: BackfillProgress) -> None:
        """One line per backfill batch, and one for the whole backfill."""
        rows = "  ".join(f"{m} {n:,}" for m, n in p.rows_by_model.items())
        if p.done:
            self._echo(f"backfill done: {', '.join(p.models)}: {p.batches} batch"
                       f"{'es' * (p.batches != 1)} through {p.through}, {p.input_rows:,} "
                       f"records read, rows written: {rows or 'none'} ({p.seconds:.1f}s)")
            return
        skipped = f"  skipped {', '.join(p.skipped)}" if p.skipped else ""
        self._echo(f"backfill batch {p.batch_id}/{p.through}: in {p.input_rows:,}  {rows}"
                   f"{skipped}  ({p.seconds:.2f}s)")

    def event(self, message: str) -> None:
        self._echo(click.style(message, dim=True))

    def summary(self, s: StreamSummary) -> None:
        models = ", ".join(f"{m} {n:,}" for m, n in sorted(s.rows_by_model.items()))
        why = " (stopped by signal)" if s.stopped_by_signal else ""
        self._echo(f"done{why}: {plural(s.batches, 'batch', 'batches')}, "
                   f"{plural(s.input_rows, 'record')} in, "
                   f"{plural(s.dead_letters, 'dead letter')}, "
                   f"rows written: {models or 'none'}; "
                   f"{plural(s.skipped_sinks, 'sink write')} skipped as already committed; "
                   f"{s.seconds:.1f}s"
                   + (f"; parked: {', '.join(sorted(s.parked))}" if s.parked else ""))

    def tables(self, infos: Sequence[TableInfo]) -> None:
        for t in infos:
            if not t.exists:
                self._echo(f"{t.name}: no table yet at {t.path}")
                continue
            self._echo(click.style(f"{t.name}", bold=True) +
                       f": {plural(t.rows, 'row')}, version {t.version}  ({t.path})")
            for row in t.sample:
                self._echo("    " + json.dumps(row, default=str, ensure_ascii=False)[:300])

    # -- errors ----------------------------------------------------------------------
    def error(self, message: str) -> None:
        self._echo(click.style("error: ", fg="red", bold=True) + message, err=True)

    def info(self, message: str) -> None:
        self._echo(message)

    def json_line(self, doc: dict[str, Any]) -> None:
        self._echo(json.dumps(doc, separators=(",", ":"), default=str))


def batch_doc(r: BatchResult) -> dict[str, Any]:
    """A batch as a JSON-lines progress record."""
    return {"batch_id": r.batch_id, "input_rows": r.input_rows, "dead_letters": r.dead_letters,
            "rows": r.rows_by_model, "skipped": list(r.skipped),
            "expectations": {m: dict(c) for m, c in r.expectations.items()},
            "parked": {m: p.text for m, p in r.parked.items()},
            "seconds": round(r.seconds, 3)}


def backfill_doc(p: BackfillProgress) -> dict[str, Any]:
    """A backfill batch (or, ``done``, the backfill's totals) as a JSON-lines record."""
    return {"backfill": {"models": list(p.models), "batch_id": p.batch_id, "through": p.through,
                         "input_rows": p.input_rows, "rows": dict(p.rows_by_model),
                         "skipped": list(p.skipped), "batches": p.batches, "done": p.done,
                         "seconds": round(p.seconds, 3)}}


def summary_doc(s: StreamSummary) -> dict[str, Any]:
    return {"batches": s.batches, "input_rows": s.input_rows, "dead_letters": s.dead_letters,
            "rows": s.rows_by_model, "skipped_sinks": s.skipped_sinks,
            "seconds": round(s.seconds, 3), "stopped_by_signal": s.stopped_by_signal,
            "parked": {m: {"batch_id": p.batch_id, "error_class": p.error_class,
                           "error": p.text, "path": p.path} for m, p in s.parked.items()}}
