"""Every event of runner/events.py renders as a text line and as one ``--progress json``
record (generic over the classes: a new event without a sample, a text or a record fails)."""

from __future__ import annotations

import dataclasses
import io
import json

import pytest

from runner.console import Console, event_doc, render
from runner.events import (
    BackfillProgress,
    BackfillResumes,
    BatchDone,
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
    event_classes,
    event_type,
)
from runner.runtime.batches.batch import BatchResult
from runner.runtime.batches.parking import ParkedError
from runner.sinks import WriteResult

BATCH = BatchResult(batch_id=4, input_rows=1500, dead_letters=2, seconds=0.25, writes=(
    WriteResult("a", 1200, False, 7, 0.1), WriteResult("b", 0, True, None, 0.0)),
    expectations={"a": {"positive": 3}},
    parked={"c": ParkedError("c", 4, "DIVIDE_BY_ZERO", "Division by zero.")})

#: One event of each class, with the line a user reads (the wording docs/ quote).
SAMPLES: list[tuple[Event, str]] = [
    (BatchDone(BATCH), "batch 4: in 1,500  dead 2  a 1,200 [positive 3]  b skipped  (0.25s)"),
    (BackfillProgress(("m",), 3, 9, 1200, {"m": 40}, ("n",), 0.5),
     "backfill batch 3/9: in 1,200  m 40  skipped n  (0.50s)"),
    (EngineChosen("spark", "delta.engine is spark", "missing: delta-spark"),
     "delta engine spark: delta.engine is spark; missing: delta-spark"),
    (FullRefreshDone(), "full refresh: checkpoint reset, tables dropped"),
    (PipelineStarted("web", ("a", "b"), "rs", "files", "/cp"),
     "pipeline web: 2 models (a, b), engine rs, source files, checkpoint /cp"),
    (SchemaChanged("a", (("x", "int"), ("y", "string"))),
     "schema change: a gains column(s) x int, y string (on_schema_change=append_new_columns; "
     "earlier rows read null)"),
    (DefinitionChanged("revenue", 4, 5, ("var vat_rate: 0.2 -> 0.1",), "warn"),
     "revenue: definition changed (var vat_rate: 0.2 -> 0.1): batches up to 4 were written "
     "with the old one, batches from 5 with the new one, in one table "
     "(on_definition_change='warn'; rebuild with `runner stream --full-refresh --select "
     "revenue`)"),
    (DefinitionChanged("revenue", 4, 5, ("its SQL (models/revenue.sql)",), "rebuild"),
     "revenue: definition changed since batch 4 (its SQL (models/revenue.sql)): rebuilding its "
     "table from the history (on_definition_change='rebuild')"),
    (SeedChanged("countries", 2, 5, "seeds/countries.csv"),
     "seed countries changed since batches 2..5 first ran: they are computed again with the "
     "content each of them recorded (replays stay exact), not the edited seeds/countries.csv, "
     "which applies from the next new batch. To apply it to past batches too, rebuild every "
     "table from the retained history on a new checkpoint: `runner stream --full-refresh`"),
    (ReplayWithoutOffsets(7, ("events[0]: offsets 4..9 are no longer available",)),
     "batch 7 is replayed without offsets the brokers no longer hold (fail_on_data_loss is "
     "false): tables that had not committed it lack them\n"
     "  - events[0]: offsets 4..9 are no longer available"),
    (KafkaStartUnknown("rebuild", ("b",), ("events[0]",)),
     "rebuild b: where batch 0 started is unknown for events[0]; replaying from the earliest "
     "offset the brokers still have (fail_on_data_loss is false)"),
    (ModelRebuilding("b", 4),
     "model b: --full-refresh: its table is dropped and rebuilt from batches 0..4 of the "
     "checkpoint's history"),
    (ModelJoining("c", "new", "backfill", start=0, committed=4, next_batch=5),
     "model c is new to this checkpoint: backfilling batches 0..4 of the checkpoint's history "
     "before the stream goes on"),
    (BackfillResumes("c", False, 2, 4),
     "model c: its backfill goes on (batches 2..4 of the checkpoint's history)"),
    (ModelRetired("gone", "wh/gone", 7),
     "model gone is retired (its SQL file is gone): its table wh/gone is left in place "
     "(batches up to 6); delete it by hand when it is no longer needed"),
    (ModelStaysParked("p", 3, "[X] x"),
     "model p is parked since batch 3 ([X] x) and not in this run"),
    (ModelAbsent("off", 0),
     "model off is not in this run (enabled=false or not selected): its table stops at no "
     "batch; it catches up from batch 0 when it is back"),
    (ModelParked("a", 3, "DIVIDE_BY_ZERO", "[DIVIDE_BY_ZERO] x", "models/a.sql"),
     "model a (models/a.sql) parked from batch 3: [DIVIDE_BY_ZERO] x; its table stays at its "
     "last good batch; fix the SQL and restart: it catches up from batch 3"),
    (OffsetsSkipped(2, ("events[1]: offsets 0..3 are no longer available",)),
     "batch 2: offsets no longer in Kafka, skipped (fail_on_data_loss is false):\n"
     "  - events[1]: offsets 0..3 are no longer available"),
    (StopRequested("in_flight"),
     "stop requested: finishing the batch in flight (Ctrl-C again to stop at once)"),
    (TableRegistered("a", "web.a"), "table a registered as web.a"),
    (NameNotRegistered("model a: cannot register web.a"),
     "model a: cannot register web.a; the stream goes on, and the next start registers the "
     "name"),
    (MaintenanceRan((("a", 10, 1),), 1.25), "maintenance: a 10->1 files (1.2s)"),
    (MaintenanceProblem("a", ("vacuum failed",)), "maintenance of a: vacuum failed"),
    (MaintenanceSkipped("pid 7"), "maintenance skipped: another one is running (pid 7)"),
    (MaintenanceFailed("disk full"), "maintenance failed (tried again at its next turn): disk full"),
]


def test_every_event_class_has_a_sample() -> None:
    assert sorted({type(e).__name__ for e, _ in SAMPLES}) == \
        [c.__name__ for c in event_classes()]


@pytest.mark.parametrize(("event", "text"), SAMPLES, ids=lambda v: type(v).__name__)
def test_every_event_renders_as_text_and_json(event: Event, text: str) -> None:
    assert dataclasses.is_dataclass(event) and event.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert render(event) == text
    out = io.StringIO()
    Console(out=out).event(event)
    assert out.getvalue() == text + "\n"  # no terminal: no colour
    record = json.loads(json.dumps(event_doc(event)))
    assert record["type"] == event_type(event)
    if isinstance(event, BatchDone):  # the keys of the batch record from before events
        assert {k: record[k] for k in ("batch_id", "input_rows", "dead_letters", "rows",
                                       "skipped", "expectations", "parked", "seconds")} == {
            "batch_id": 4, "input_rows": 1500, "dead_letters": 2, "rows": {"a": 1200, "b": 0},
            "skipped": ["b"], "expectations": {"a": {"positive": 3}},
            "parked": {"c": "[DIVIDE_BY_ZERO] Division by zero."}, "seconds": 0.25}
    elif isinstance(event, BackfillProgress):
        assert record["backfill"]["rows"] == {"m": 40} and record["backfill"]["batch_id"] == 3
    else:
        fields = {f.name: getattr(event, f.name) for f in dataclasses.fields(event)}
        assert {k: record[k] for k in fields} == json.loads(json.dumps(fields))
        assert record["event"] == text


def test_the_wording_of_each_joining_model() -> None:
    """The sentences ``runner stream`` said for each decision before events (decide's)."""
    def joining(status: str, action: str, **kw: object) -> str:
        base: dict[str, object] = {"start": 4, "committed": 9, "next_batch": 10}
        return render(ModelJoining("m", status, action, **(base | kw)))  # type: ignore[arg-type]

    assert joining("legacy", "backfill") == (
        "model m holds batches up to 3 in its table (the model registry rebuilt from the "
        "tables): backfilling batches 4..9 of the checkpoint's history before the stream goes on")
    assert joining("parked", "live", error="[X] x", start=10) == \
        "model m was parked at batch 10 ([X] x); it missed no committed batch"
    assert joining("back", "live", start=10) == "model m is back; it missed no batch"
    assert joining("back", "no_backfill") == \
        "model m is back: backfill=false, so it starts at batch 10 without batches 4..9"
    assert joining("new", "rebuild", committed=None) == (
        "model m is new to this checkpoint: its rebuild goes on from the next batch (no batch "
        "was committed before it)")
    assert render(ModelRetired("m", None, 0)) == \
        "model m is retired (its SQL file is gone) and has no table"
    assert render(StopRequested("before")) == "stop requested before the first batch"
    assert render(StopRequested("backfill", 6)) == \
        "stop requested: backfill stopped after batch 6; the next start-up resumes it"
    assert render(BackfillProgress(("m", "n"), 9, 9, 12000, {"m": 400}, (), 5.25, batches=10,
                                   done=True)) == (
        "backfill done: m, n: 10 batches through 9, 12,000 records read, rows written: m 400 "
        "(5.2s)")
