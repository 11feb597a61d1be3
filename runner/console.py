"""All printing: violations (text | json | github), errors, the stream's events (as text or
JSON lines: :mod:`runner.events`) and summaries."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any, Literal

import click

from runner.errors import Violation
from runner.events import (
    BackfillProgress,
    BackfillResumes,
    BatchDone,
    BatchFacts,
    DefinitionChanged,
    EngineChosen,
    Event,
    FullRefreshDone,
    KafkaStartUnknown,
    MaintenanceFailed,
    MaintenanceProblem,
    MaintenanceRan,
    MaintenanceSkipped,
    ModelAbsent,
    ModelJoining,
    ModelParked,
    ModelRebuilding,
    ModelRetired,
    ModelStaysParked,
    NameNotRegistered,
    OffsetsSkipped,
    PipelineStarted,
    ReplayWithoutOffsets,
    SchemaChanged,
    SeedChanged,
    StopRequested,
    TableRegistered,
    event_type,
)
from runner.project.secrets import mask_secrets

if TYPE_CHECKING:
    from runner.runtime.start.stream import StreamSummary
    from runner.sinks.tables import TableInfo

__all__ = ["Console", "Format", "backfill_doc", "batch_doc", "event_doc", "plural", "render",
           "summary_doc"]

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
    def event(self, e: Event) -> None:
        """One line per event: batches and backfill batches plain, the others dimmed."""
        text = render(e)
        self._echo(text if isinstance(e, (BatchDone, BackfillProgress))
                   else click.style(text, dim=True))

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


def summary_doc(s: StreamSummary) -> dict[str, Any]:
    return {"batches": s.batches, "input_rows": s.input_rows, "dead_letters": s.dead_letters,
            "rows": s.rows_by_model, "skipped_sinks": s.skipped_sinks,
            "seconds": round(s.seconds, 3), "stopped_by_signal": s.stopped_by_signal,
            "parked": {m: {"batch_id": p.batch_id, "error_class": p.error_class,
                           "error": p.text, "path": p.path} for m, p in s.parked.items()}}


def _history(start: int, committed: int | None) -> str:
    if committed is None or start > committed:
        return "the next batch (no batch was committed before it)"
    return f"batches {start}..{committed} of the checkpoint's history"


def _batch_line(r: BatchFacts) -> str:
    def model(w: Any) -> str:
        text = f"{w.model} {'skipped' if w.skipped else f'{w.rows:,}'}"
        hits = {n: c for n, c in r.expectations.get(w.model, {}).items() if c}
        if hits:  # rows that broke an expectation (dropped, quarantined)
            text += " [" + ", ".join(f"{n} {c:,}" for n, c in hits.items()) + "]"
        return text

    models = "  ".join(model(w) for w in r.writes)
    return (f"batch {r.batch_id}: in {r.input_rows:,}  dead {r.dead_letters:,}  "
            f"{models}  ({r.seconds:.2f}s)")


def _backfill_line(p: BackfillProgress) -> str:
    rows = "  ".join(f"{m} {n:,}" for m, n in p.rows_by_model.items())
    if p.done:
        return (f"backfill done: {', '.join(p.models)}: {p.batches} batch"
                f"{'es' * (p.batches != 1)} through {p.through}, {p.input_rows:,} "
                f"records read, rows written: {rows or 'none'} ({p.seconds:.1f}s)")
    skipped = f"  skipped {', '.join(p.skipped)}" if p.skipped else ""
    return (f"backfill batch {p.batch_id}/{p.through}: in {p.input_rows:,}  {rows}"
            f"{skipped}  ({p.seconds:.2f}s)")


def _joining_line(e: ModelJoining) -> str:
    what = {"new": "is new to this checkpoint",
            "legacy": f"holds batches up to {e.start - 1} in its table (the model registry "
                      "rebuilt from the tables)",
            "back": "is back", "parked": f"was parked at batch {e.start} ({e.error})"}[e.status]
    if e.action == "rebuild":
        return f"model {e.model} {what}: its rebuild goes on from {_history(0, e.committed)}"
    if e.action == "live":
        return (f"model {e.model} {what}; it missed no committed batch" if e.status == "parked"
                else f"model {e.model} is back; it missed no batch")
    if e.action == "no_backfill":
        return (f"model {e.model} {what}: backfill=false, so it starts at batch {e.next_batch} "
                f"without batches {e.start}..{e.committed}")
    return (f"model {e.model} {what}: backfilling {_history(e.start, e.committed)} "
            "before the stream goes on")


def _held(left_at: int) -> str:
    return f"batches up to {left_at - 1}" if left_at else "no batch"


def render(e: Event) -> str:
    """The line a user reads for ``e`` (``runner stream --progress text``).

    >>> render(TableRegistered(model="sessions", relation="web.sessions"))
    'table sessions registered as web.sessions'
    """
    match e:
        case BatchDone(result=r):
            return _batch_line(r)
        case BackfillProgress():
            return _backfill_line(e)
        case EngineChosen(engine=engine, reason=reason, missing_jars=jars):
            return f"delta engine {engine}: {reason}" + (f"; {jars}" if jars else "")
        case FullRefreshDone():
            return "full refresh: checkpoint reset, tables dropped"
        case PipelineStarted():
            return (f"pipeline {e.project}: {len(e.models)} models ({', '.join(e.models)}), "
                    f"engine {e.engine}, source {e.source}, checkpoint {e.checkpoint}")
        case SchemaChanged(model=model, columns=columns):
            cols = ", ".join(f"{name} {kind}" for name, kind in columns)
            return (f"schema change: {model} gains column(s) {cols} "
                    "(on_schema_change=append_new_columns; earlier rows read null)")
        case DefinitionChanged(model=m, what=what):
            if e.action == "rebuild":
                return (f"{m}: definition changed since batch {e.last_batch} "
                        f"({'; '.join(what)}): rebuilding its table from the history "
                        "(on_definition_change='rebuild')")
            return (f"{m}: definition changed ({'; '.join(what)}): batches up to "
                    f"{e.last_batch} were written with the old one, batches from {e.since} "
                    "with the new one, in one table (on_definition_change='warn'; rebuild "
                    f"with `runner stream --full-refresh --select {m}`)")
        case SeedChanged():
            return (f"seed {e.seed} changed since batches {e.first_batch}..{e.last_batch} first "
                    "ran: they are computed again with the content each of them recorded "
                    f"(replays stay exact), not the edited {e.location}, which applies from the "
                    "next new batch. To apply it to past batches too, rebuild every table from "
                    "the retained history on a new checkpoint: `runner stream --full-refresh`")
        case ReplayWithoutOffsets(batch_id=batch_id, losses=losses):
            lines = "\n".join(f"  - {loss}" for loss in losses)
            return (f"batch {batch_id} is replayed without offsets the brokers no longer hold "
                    "(fail_on_data_loss is false): tables that had not committed it lack "
                    f"them\n{lines}")
        case KafkaStartUnknown(verb=verb, models=models, partitions=partitions):
            return (f"{verb} {', '.join(models)}: where batch 0 started is unknown for "
                    f"{', '.join(partitions)}; replaying from the earliest offset the brokers "
                    "still have (fail_on_data_loss is false)")
    line = _decision_line(e) or _upkeep_line(e)
    if line is None:
        raise TypeError(f"no text for the event {type(e).__name__}")
    return line


def _decision_line(e: Event) -> str | None:
    """The start-up's decisions about the model set (:func:`runner.runtime.start.backfill.decide`).
    """
    match e:
        case ModelRebuilding(model=model, committed=committed):
            return (f"model {model}: --full-refresh: its table is dropped and rebuilt from "
                    + _history(0, committed))
        case ModelJoining():
            return _joining_line(e)
        case BackfillResumes():
            return (f"model {e.model}: its {'rebuild' if e.rebuild else 'backfill'} goes on "
                    f"({_history(e.start, e.committed)})")
        case ModelRetired(model=model, topic=str(topic), left_at=left_at):
            return (f"model {model} is retired (its SQL file is gone): the records in its "
                    f"{topic} stay ({_held(left_at)})")
        case ModelRetired(model=model, table=None):
            return f"model {model} is retired (its SQL file is gone) and has no table"
        case ModelRetired(model=model, table=table, left_at=left_at):
            return (f"model {model} is retired (its SQL file is gone): its table {table} is "
                    f"left in place ({_held(left_at)}); delete it by hand when it is no longer "
                    "needed")
        case ModelStaysParked(model=model, batch_id=batch_id, error=error):
            return f"model {model} is parked since batch {batch_id} ({error}) and not in this run"
        case ModelAbsent(model=model, left_at=left_at, topic=topic):
            what = f"what it produces to its {topic}" if topic else "its table"
            return (f"model {model} is not in this run (enabled=false or not selected): {what} "
                    f"stops at {_held(left_at)}; it catches up from batch {left_at} when it is "
                    "back")
    return None


def _upkeep_line(e: Event) -> str | None:
    """Parking, skipped offsets, stops, names and maintenance while the stream runs."""
    match e:
        case ModelParked(model=model, batch_id=batch_id, error=error, path=path):
            where = f" ({path})" if path else ""
            return (f"model {model}{where} parked from batch {batch_id}: {error}; its table "
                    "stays at its last good batch; fix the SQL and restart: it catches up from "
                    f"batch {batch_id}")
        case OffsetsSkipped(batch_id=batch_id, losses=losses):
            lines = "\n".join(f"  - {loss}" for loss in losses)
            return (f"batch {batch_id}: offsets no longer in Kafka, skipped "
                    f"(fail_on_data_loss is false):\n{lines}")
        case StopRequested(at="before"):
            return "stop requested before the first batch"
        case StopRequested(at="in_flight"):
            return "stop requested: finishing the batch in flight (Ctrl-C again to stop at once)"
        case StopRequested(batch_id=batch_id):
            return (f"stop requested: backfill stopped after batch {batch_id}; the next "
                    "start-up resumes it")
        case TableRegistered(model=model, relation=relation):
            return f"table {model} registered as {relation}"
        case NameNotRegistered(error=error):
            return f"{error}; the stream goes on, and the next start registers the name"
        case MaintenanceRan(tables=tables, seconds=seconds):
            return "maintenance: " + "; ".join(
                f"{name} {before}->{after} files" for name, before, after in tables
            ) + f" ({seconds:.1f}s)"
        case MaintenanceProblem(table=table, problems=problems):
            return f"maintenance of {table}: {'; '.join(problems)}"
        case MaintenanceSkipped(holder=holder):
            return f"maintenance skipped: another one is running ({holder})"
        case MaintenanceFailed(error=error):
            return f"maintenance failed (tried again at its next turn): {error}"
    return None


def batch_doc(r: BatchFacts) -> dict[str, Any]:
    """A batch as a JSON-lines progress record (the keys before ``type`` existed)."""
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


def event_doc(e: Event) -> dict[str, Any]:
    """``e`` as one ``--progress json`` record (docs/COMMANDS.md#progress-json): its fields,
    then its ``type``. A batch has the keys of :func:`batch_doc`, a backfill batch those of
    :func:`backfill_doc` (as before ``type`` existed: a line still starts ``{"batch_id"`` or
    ``{"backfill"``); every other event also carries its text as ``event``.

    >>> event_doc(StopRequested(at="before"))
    {'at': 'before', 'batch_id': None, 'event': 'stop requested before the first batch', \
'type': 'stop_requested'}
    """
    tail = {"type": event_type(e)}
    if isinstance(e, BatchDone):
        return batch_doc(e.result) | tail
    if isinstance(e, BackfillProgress):
        return backfill_doc(e) | tail
    assert dataclasses.is_dataclass(e)
    fields = {f.name: getattr(e, f.name) for f in dataclasses.fields(e)}
    return fields | {"event": render(e)} | tail
