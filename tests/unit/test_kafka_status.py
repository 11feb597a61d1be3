"""A Kafka model (``materialized='kafka'``) in the batch ledger, ``runner snapshot`` and
``runner status``, without Spark or a broker: it is its topic and the last batch committed in
Kafka for it, never a Delta table at ``<warehouse>/<model>``.

The tables are written by the real delta-rs writer and the entries by the real Bookkeeper
(tests/support/fake_stream.py); the Kafka writer is a stand-in that says which batch its marker
holds, as the real one knows after each transaction. Brokers that do not answer are a port
nothing listens on. The same through a real stream and broker:
tests/kafka/test_kafka_outputs_catch_up.py.
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass, field, replace
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

import runner.ops.status as status_module
from runner.checkpoint.ledger import Ledger, LedgerEntry, TopicCut
from runner.checkpoint.registry import Entry, save_registry
from runner.cli import cli
from runner.ops.snapshot import snapshot_lines, snapshot_of
from runner.ops.status import collect_status, status_lines
from runner.project.loader import load_project
from runner.runtime.after_batch import Bookkeeper
from runner.runtime.batches.parking import ParkedError
from runner.runtime.start.restate import restate
from runner.sinks.base import SinkSpec, app_id
from runner.sinks.outputs import Outputs
from tests.support.fake_stream import APPENDS, FakeStream, make_project

KAFKA_SQL = """{{ config(materialized='kafka', topic='orders-out') }}
SELECT eventId AS key, eventId FROM parsed_events
"""


@dataclass
class _Marker:
    """The Kafka writer as the Bookkeeper sees it: which batch each model's marker holds."""

    batches: dict[str, int | None] = field(default_factory=dict)

    def last_batches(self) -> dict[str, int | None]:
        return dict(self.batches)

    def close(self) -> None:
        pass


def _stream(tmp_path, brokers: str | None = None) -> tuple[FakeStream, SinkSpec, _Marker]:
    project = make_project(tmp_path / "proj", models={"models/orders_out.sql": KAFKA_SQL},
                           target={"kafka_outputs": {"bootstrap_servers": brokers}})
    s = FakeStream(project)
    spec = SinkSpec(model="orders_out", path=str(s.project.table_path("orders_out")),
                    app_id=app_id(s.project.config.name, "orders_out", s.query_id),
                    materialized="kafka", topic="orders-out")
    marker = _Marker()
    plan = SimpleNamespace(sinks={**s.sinks, "orders_out": spec}, dead_letter=s.dead,
                           writer=Outputs(s.writer, marker))  # type: ignore[arg-type]
    s.keeper = Bookkeeper(s.project, plan, query_id=s.query_id)  # type: ignore[arg-type]
    return s, spec, marker


def _batch(s: FakeStream, marker: _Marker, spec: SinkSpec, batch_id: int, *,
           parked: bool = False) -> None:
    """One batch; the Kafka model's transaction commits it, or it is parked at it."""
    if not parked:
        marker.batches[spec.app_id] = batch_id
    keeper = s.keeper
    s.keeper = SimpleNamespace(after_batch=lambda r: None)  # type: ignore[assignment]
    s.batch(batch_id)
    s.keeper = keeper
    why = {"orders_out": ParkedError("orders_out", batch_id, "KAFKA_UNKNOWN_TOPIC_OR_PART",
                                     "the topic does not exist")} if parked else {}
    keeper.after_batch(SimpleNamespace(batch_id=batch_id, parked=why))  # type: ignore[arg-type]


def test_the_ledger_names_a_kafka_model_by_its_topic_and_batch_not_a_table(tmp_path) -> None:
    s, spec, marker = _stream(tmp_path)
    for n in range(2):
        _batch(s, marker, spec, n)
    entry = Ledger(s.project.checkpoint).latest()
    assert entry is not None and "orders_out" not in entry.tables
    assert entry.kafka == {"orders_out": TopicCut("orders-out", 1)}
    assert LedgerEntry.from_json(entry.to_json()) == entry and \
        LedgerEntry.from_json(entry.to_json()).kafka == entry.kafka
    assert not s.project.table_path("orders_out").exists()  # nothing probed or made there

    doc = snapshot_of(s.project).to_dict()
    assert doc["batch_id"] == 1 and "orders_out" not in doc["tables"]
    assert doc["topics"] == {"orders_out": {"topic": "orders-out", "batch": 1}}
    assert set(doc["tables"]) >= set(APPENDS)
    text = "\n".join(snapshot_lines(snapshot_of(s.project)))
    assert "orders_out" in text and "batch 1" in text and "kafka topic orders-out" in text
    with pytest.raises(Exception, match="is a Kafka model"):
        snapshot_of(s.project).delta_table("orders_out")


def test_a_parked_kafka_model_is_marked_and_the_cut_stays_right(tmp_path) -> None:
    s, spec, marker = _stream(tmp_path)
    _batch(s, marker, spec, 0)
    _batch(s, marker, spec, 1, parked=True)
    save_registry(s.project.checkpoint, {
        **{m: Entry("live") for m in (*APPENDS, "endpoint_counts")},
        "orders_out": Entry("parked", left_at=1, error="KAFKA_UNKNOWN_TOPIC_OR_PART: the "
                                                       "topic does not exist")})
    _batch(s, marker, spec, 2, parked=True)
    entry = Ledger(s.project.checkpoint).latest()
    assert entry is not None and entry.kafka["orders_out"] == TopicCut("orders-out", 0)
    assert entry.parked == {"orders_out": 1}
    doc = snapshot_of(s.project).to_dict()
    topic = doc["topics"]["orders_out"]
    assert topic["batch"] == 0 and topic["parked_since"] == 1
    assert topic["lag"].startswith("parked: KAFKA_UNKNOWN_TOPIC_OR_PART")
    assert not any("lag" in t for t in doc["tables"].values())  # the tables hold batch 2

    # the catch-up restates the entries it covers: the topic then holds each entry's batch
    marker.batches[spec.app_id] = 2
    restate(s.project.checkpoint, {}, starts={"orders_out": 1}, through=2,
            topics={"orders_out": TopicCut("orders-out", 2)})
    save_registry(s.project.checkpoint, {
        **{m: Entry("live") for m in (*APPENDS, "endpoint_counts")},
        "orders_out": Entry("live", since=3)})
    for b in (1, 2):
        doc = snapshot_of(s.project, batch=b).to_dict()
        assert doc["topics"]["orders_out"] == {"topic": "orders-out", "batch": b}


def test_a_kafka_cut_short_of_its_batch_is_never_listed_unmarked(tmp_path) -> None:
    s, spec, marker = _stream(tmp_path)
    _batch(s, marker, spec, 0)
    ledger = Ledger(s.project.checkpoint)
    entry = ledger.get(0)
    assert entry is not None
    ledger.record(replace(entry, batch_id=1))  # batch 1 in the ledger, the marker at 0
    topic = snapshot_of(s.project).to_dict()["topics"]["orders_out"]
    assert topic["batch"] == 0 and "does not hold" in topic["lag"]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_status_shows_a_kafka_model_and_says_when_its_brokers_do_not_answer(
        tmp_path, monkeypatch) -> None:
    brokers = f"127.0.0.1:{_closed_port()}"
    s, spec, marker = _stream(tmp_path, brokers)
    for n in range(2):
        _batch(s, marker, spec, n)
    monkeypatch.setattr(status_module, "KAFKA_TIMEOUT", 1.0)
    project = load_project(s.project.root)
    status = collect_status(project)
    doc = status.to_dict()
    assert "orders_out" not in doc["tables"]
    topic = doc["topics"]["orders_out"]
    assert topic["topic"] == "orders-out" and topic["snapshot_batch"] == 1
    assert topic["last_batch"] is None and f"Kafka at {brokers} did not answer" in topic["error"]
    text = "\n".join(status_lines(status))
    line = next(x for x in text.splitlines() if x.strip().startswith("orders_out "))
    assert "kafka topic orders-out, last batch in Kafka unknown: Kafka at" in line, text
    assert doc["tables"]["request_logs"]["last_batch"] == 1  # the tables as ever

    result = CliRunner().invoke(cli, ["status", "--project-dir", str(project.root)])
    assert result.exit_code == 0, result.output
    assert "did not answer" in result.output and "internal error" not in result.output
    result = CliRunner().invoke(cli, ["status", "--project-dir", str(project.root),
                                      "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["topics"]["orders_out"]["snapshot_batch"] == 1


def test_status_of_a_kafka_model_without_brokers_is_one_line(tmp_path) -> None:
    s, spec, marker = _stream(tmp_path)
    _batch(s, marker, spec, 0)
    status = collect_status(s.project)
    text = "\n".join(status_lines(status))
    assert "last batch in Kafka unknown: a materialized='kafka' model needs brokers" in text

