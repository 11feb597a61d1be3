"""`runner stream` from real Kafka brokers (Apache Kafka, Tansu) into the example tables,
through both readers (Spark's Kafka source and the runner's Python reader).

Every run goes through :func:`runner.runtime.start.stream.run_stream` (the real pipeline: one query,
one checkpoint, the repo's models and macros); tables are read back with delta-rs. The
reference for every check is computed here, in plain Python, from what was produced: which
record went to which partition at which offset.
"""

from __future__ import annotations

import json
import socket
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from runner.build import compile_project
from runner.demo import POISON, event_lines
from runner.errors import ExecutionError
from runner.project.loader import Project, load_project
from runner.runtime.batches.batch import BatchResult
from runner.runtime.start.stream import StreamSummary, run_stream
from runner.sinks.tables import read_table
from tests.support.brokers import create_topic, produce
from tests.support.events import Recorder
from tests.support.projects import ENDPOINT_COUNTS, EVENT_SCHEMA, EXAMPLE_FILES, write_project

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

# Not an example model: exposes the Kafka metadata of parsed_events, so the checks can see
# exactly which offsets each batch read.
EVENT_OFFSETS = """
SELECT eventId, _topic, _partition, _offset, _kafka_timestamp, _key, _batch_id
FROM parsed_events
"""
SECRET = "hunter2-not-for-logs"


@dataclass(frozen=True)
class Record:
    partition: int
    offset: int
    value: str
    key: str

    @property
    def poison(self) -> bool:
        return self.value in POISON


@dataclass
class Topic:
    """A topic and everything produced to it, in order (the test's reference)."""

    bootstrap: str
    name: str
    partitions: int
    records: list[Record] = field(default_factory=list)

    @classmethod
    def create(cls, bootstrap: str, partitions: int = 3) -> Topic:
        name = f"events_{uuid.uuid4().hex[:8]}"
        create_topic(bootstrap, name, partitions)
        return cls(bootstrap, name, partitions)

    def send(self, count: int, *, poison_every: int = 50) -> list[Record]:
        """Produce ``count`` demo events round-robin over the partitions (ids continue)."""
        start = len(self.records)
        next_offset = Counter(r.partition for r in self.records)
        sent = []
        for i, value in enumerate(event_lines(count, start_id=start, poison_every=poison_every)):
            partition = (start + i) % self.partitions
            sent.append(Record(partition, next_offset[partition], value, f"k{start + i}"))
            next_offset[partition] += 1
        produce(self.bootstrap, self.name, [(r.partition, r.value, r.key) for r in sent])
        self.records += sent
        return sent


def _project(root: Path, topic: Topic, *, source_extra: str = "", models: dict[str, str]
             | None = None, bootstrap: str | None = None, reader: str = "auto",
             engine: str = "rs", master: str = "local[2]", spark_extra: str = "",
             target: dict[str, Any] | None = None) -> Project:
    yml = f"""\
name: kafka_pipeline
source:
  type: kafka
  bootstrap_servers: {bootstrap or topic.bootstrap}
  topic: {topic.name}
  starting_offsets: earliest
  reader: {reader}
{source_extra}schema: >-
  {EVENT_SCHEMA}
warehouse: wh
checkpoint: cp
delta:
  engine: {engine}
spark:
  master: {master}
{spark_extra}parallelism: 4
vars:
  slow_request_ms: 1000
"""
    write_project(root, {**EXAMPLE_FILES, **(models or {})}, project_yml=yml, target=target)
    return load_project(root)


def _run(project: Project, report: Recorder | None = None,
         **kw: Any) -> tuple[StreamSummary, list[BatchResult]]:
    events = Recorder() if report is None else report
    summary = run_stream(project, compile_project(project).plan, mode="available_now",
                         trigger="1 second", report=events, **kw)
    return summary, events.batches


def _rows(project: Project, name: str) -> list[dict[str, Any]]:
    path = project.table_path(name)
    return read_table(str(path)).to_pylist() if path.exists() else []


def _check_tables(project: Project, topic: Topic, *, merge: bool = False) -> None:
    """Every example table holds exactly the rows the produced records call for."""
    good = [(r, json.loads(r.value)) for r in topic.records if not r.poison]
    events = [e for _, e in good]
    assert sorted(r["eventId"] for r in _rows(project, "request_logs")) == \
        sorted(e["eventId"] for e in events)
    assert sorted((r["eventId"], r["errorCode"]) for r in _rows(project, "error_events")) == \
        sorted((e["eventId"], err["errorCode"]) for e in events for err in e["errors"])
    perf = _rows(project, "performance_metrics")
    assert sorted((r["eventId"], r["latency_ms"], r["is_slow"]) for r in perf) == sorted(
        (e["eventId"], e["request"]["latency_ms"], e["request"]["latency_ms"] >= 1000)
        for e in events)
    # Each valid record landed once, from its own topic, partition and offset: no gap, no
    # re-read.
    offsets = _rows(project, "event_offsets")
    assert sorted((r["_topic"], r["_partition"], r["_offset"], r["eventId"], r["_key"])
                  for r in offsets) == sorted(
        (topic.name, rec.partition, rec.offset, e["eventId"], rec.key) for rec, e in good)
    assert all(r["_kafka_timestamp"] is not None for r in offsets)
    # Poison messages are dead letters that say where to find them in the topic.
    dead = _rows(project, "_dead_letter")
    assert sorted((d["raw"], d["_topic"], d["_partition"], d["_offset"], d["_key"])
                  for d in dead) == sorted(
        (r.value, topic.name, r.partition, r.offset, r.key) for r in topic.records if r.poison)
    assert all(d["reason"] for d in dead)
    if merge:
        expected: dict[str, list[int]] = {}
        for e in events:
            c = expected.setdefault(e["request"]["endpoint"], [0, 0])
            c[0] += 1
            c[1] += e["request"]["status_code"] >= 500
        assert {r["endpoint"]: [r["requests"], r["errors"]]
                for r in _rows(project, "endpoint_counts")} == expected


def _per_batch_partitions(project: Project) -> dict[int, Counter[int]]:
    """Records read per batch and partition (valid rows and dead letters together)."""
    seen: dict[int, Counter[int]] = {}
    for r in _rows(project, "event_offsets") + _rows(project, "_dead_letter"):
        seen.setdefault(r["_batch_id"], Counter())[r["_partition"]] += 1
    return seen


#: (broker, reader, Delta engine) of the pipeline test: the production path (Spark's Kafka
#: source on Apache Kafka, delta-spark), the Python reader on Apache Kafka, and the embedded
#: path (the Python reader on Tansu, delta-rs).
BROKER_READERS = [("apache", "spark", "spark"), ("apache", "python", "rs"),
                  ("tansu", "python", "rs")]


@pytest.mark.parametrize(("bootstrap", "reader", "engine"), BROKER_READERS,
                         indirect=["bootstrap"], ids=[f"{b}-{r}-{e}" for b, r, e in BROKER_READERS])
def test_topic_to_tables_rate_limit_restart_and_crash_replay(
        bootstrap: str, reader: str, engine: str, spark: Any, tmp_path: Path,
        armed: Callable[[str], None]) -> None:
    """One topic, one pipeline, four runs: each run starts where the last one stopped."""
    topic = Topic.create(bootstrap, partitions=3)
    topic.send(300, poison_every=50)  # 100 records per partition, 6 poison
    project = _project(tmp_path / "p", topic, source_extra="  max_offsets_per_trigger: 120\n",
                       models={"models/event_offsets.sql": EVENT_OFFSETS,
                               "models/endpoint_counts.sql": ENDPOINT_COUNTS}, reader=reader,
                       engine=engine)

    # 1. The rate limit splits the 300-record backlog into batches of at most 120, each
    # taken in proportion from the three partitions.
    summary, batches = _run(project)
    assert [b.input_rows for b in batches] == [120, 120, 60]
    assert summary.dead_letters == 6
    assert _per_batch_partitions(project) == {0: Counter({0: 40, 1: 40, 2: 40}),
                                              1: Counter({0: 40, 1: 40, 2: 40}),
                                              2: Counter({0: 20, 1: 20, 2: 20})}
    _check_tables(project, topic, merge=True)
    assert any(d["reason"] == "invalid JSON" for d in _rows(project, "_dead_letter"))

    # 2. Stop (the run ended), produce more, restart: exactly the new records, nothing twice.
    topic.send(90, poison_every=50)
    _, batches = _run(project)
    assert [(b.batch_id, b.input_rows) for b in batches] == [(3, 90)]
    _check_tables(project, topic, merge=True)

    # 3. Batch 4 fails right after the accumulating merge committed (the other sinks run in
    # parallel and may or may not have committed).
    topic.send(90, poison_every=50)
    armed("sink.after_commit:endpoint_counts@4")
    with pytest.raises(ExecutionError, match="failpoint sink.after_commit:endpoint_counts"):
        _run(project)
    armed("")

    # 4. Records that arrive meanwhile are not folded into the replay: batch 4 is replayed
    # with its original offsets (the committed merge is skipped, not applied twice), then
    # batch 5 reads the rest.
    topic.send(30, poison_every=50)
    _, replay = _run(project)
    assert [(b.batch_id, b.input_rows) for b in replay] == [(4, 90), (5, 30)]
    assert "endpoint_counts" in replay[0].skipped
    _check_tables(project, topic, merge=True)
    assert _run(project)[0].batches == 0  # nothing new: no batch, no commit


def _unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("reader", ["spark", "python"])
def test_bad_bootstrap_address_fails_fast_with_one_clear_error(
        reader: str, spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Refused at start (exit 2, before any table or checkpoint is written) after
    ``source.connect_timeout``; secrets stay out of the message. More failures (a checkpoint
    from a good broker, unknown topics, TLS mismatches): tests/kafka/test_kafka_failures.py."""
    from click.testing import CliRunner

    from runner.cli import cli

    address = f"127.0.0.1:{_unused_port()}"
    monkeypatch.setenv("KAFKA_TEST_PASSWORD", SECRET)
    topic = Topic(address, "events", 1)
    project = _project(tmp_path / "p", topic, reader=reader, source_extra=(
        "  connect_timeout: 3 seconds\n"
        "  options:\n"
        "    timeout_ms: \"2000\"\n"  # a source setting among the client's (default 5000)
        "    sasl.username: runner\n"
        "    sasl.password: \"{{ env_var('KAFKA_TEST_PASSWORD') }}\"\n"))

    # Production's mode (a processing-time trigger): refused at start, it does not wait.
    started = time.monotonic()
    result = CliRunner().invoke(cli, ["stream", "--project-dir", str(project.root),
                                      "--trigger", "1 second"])
    elapsed = time.monotonic() - started
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(
        f"error: cannot reach the Kafka brokers at {address} within 3 s: {address}: "
        "connection refused"), result.stderr
    assert "check source.bootstrap_servers" in result.stderr
    assert "Traceback" not in result.output and "\tat " not in result.output
    assert SECRET not in result.output
    assert elapsed < 30, f"took {elapsed:.1f} s"
    assert not (project.root / "wh" / "request_logs").exists()


def _delete_records(bootstrap: str, topic: str, before: dict[int, int]) -> None:
    """Delete each partition's records below the given offset (Kafka's DeleteRecords; Apache
    Kafka only, Tansu does not implement it)."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.delete_records([TopicPartition(topic, p, o) for p, o in before.items()],
                                   request_timeout=10)
    for future in futures.values():
        future.result(timeout=15)


@pytest.mark.parametrize("reader", ["spark", "python"])
def test_records_deleted_before_they_were_read(apache_kafka: str, reader: str, spark: Any,
                                               tmp_path: Path) -> None:
    """fail_on_data_loss: true stops with a message naming the lost range; false skips the
    deleted records and reads on, on both readers."""
    topic = Topic.create(apache_kafka, partitions=1)
    topic.send(40, poison_every=0)
    strict = _project(tmp_path / "strict", topic, reader=reader,
                      models={"models/event_offsets.sql": EVENT_OFFSETS})
    lenient = _project(tmp_path / "lenient", topic, reader=reader,
                       source_extra="  fail_on_data_loss: false\n",
                       models={"models/event_offsets.sql": EVENT_OFFSETS})
    assert _run(strict)[1][0].input_rows == 40
    assert _run(lenient)[1][0].input_rows == 40
    topic.send(40, poison_every=0)  # offsets 40..79, then 40..59 are deleted unread
    _delete_records(apache_kafka, topic.name, {0: 60})
    with pytest.raises(ExecutionError) as failed:
        _run(strict)
    message = str(failed.value).lower()
    assert "lost" in message or "data loss" in message or "out of range" in message, message
    _, batches = _run(lenient)
    assert sum(b.input_rows for b in batches) == 20
    offsets = sorted(r["_offset"] for r in _rows(lenient, "event_offsets"))
    assert offsets == list(range(40)) + list(range(60, 80))


def test_switching_readers_on_one_checkpoint(apache_kafka: str, spark: Any,
                                             tmp_path: Path) -> None:
    """Both readers keep the same offsets in the checkpoint: a pipeline moved from one to the
    other reads on from where the last batch ended, nothing twice, nothing skipped."""
    topic = Topic.create(apache_kafka, partitions=3)
    models = {"models/event_offsets.sql": EVENT_OFFSETS}
    for step, reader in enumerate(("python", "spark", "python")):
        topic.send(60, poison_every=25)
        project = _project(tmp_path / "p", topic, reader=reader, models=models)
        _, batches = _run(project)
        assert [b.input_rows for b in batches] == [60], (step, reader)
        _check_tables(project, topic)
