"""What a model reads, found at compile (``Step.reads``): the persist policy and the metadata
columns' cache depend on it, so it must be conservative."""

from __future__ import annotations

from runner.compile.plan import Plan, Step
from runner.compile.reads import reads_of
from runner.project.config import ModelConfig
from runner.runtime.batches.batch import should_persist

SCHEMA = "eventId STRING NOT NULL, a INT"


def step(name: str, sql: str) -> Step:
    return Step(name=name, path=f"models/{name}.sql", sql=sql, config=ModelConfig(),
                depends_on=(), columns=(), reads=reads_of(sql))


def test_parsed_event_reads_and_persist_policy() -> None:
    assert reads_of("SELECT a FROM parsed_events WHERE b > 1").parsed_events == 1
    assert reads_of(
        "SELECT * FROM parsed_events a JOIN parsed_events b ON a.id = b.id").parsed_events == 2
    assert reads_of("SELECT x FROM base_model").parsed_events == 0
    assert reads_of("SELECT FROM WHERE (((").parsed_events == 1  # unparseable: assume a read
    one = Plan("p", "files", SCHEMA, "_dead", (step("m", "SELECT 1 AS x"),), ())
    assert not should_persist(one)  # no reader: only the dead-letter write
    two = Plan("p", "files", SCHEMA, "_dead",
               (step("m", "SELECT eventId FROM parsed_events"),), ("eventId",))
    assert should_persist(two)  # one model + the dead-letter write


def test_metadata_reads_are_conservative() -> None:
    meta = frozenset({"_source_file"})
    assert not reads_of("SELECT eventId, request.endpoint FROM parsed_events").may_read(meta)
    assert reads_of("SELECT upper(_Source_File) AS f FROM parsed_events").may_read(meta)
    assert reads_of("SELECT p.* FROM parsed_events p").may_read(meta)
    assert reads_of("SELECT a.eventId FROM parsed_events a "
                    "JOIN parsed_events b USING (_source_file)").may_read(meta)
    assert reads_of("SELECT to_json(struct(*)) AS j FROM parsed_events").may_read(meta)
    assert reads_of("SELECT FROM WHERE (((").may_read(meta)  # unparseable: assume a read


def test_compile_carries_the_reads_on_each_step(tmp_path) -> None:
    from runner.build import compile_project
    from runner.project.loader import load_project
    from tests.support.projects import write_project

    root = write_project(tmp_path, {"models/m.sql": "SELECT eventId, _source_file AS f "
                                                    "FROM parsed_events"})
    plan = compile_project(load_project(root)).plan
    reads = plan.step("m").reads
    assert reads.parsed_events == 1 and reads.may_read({"_source_file"})
