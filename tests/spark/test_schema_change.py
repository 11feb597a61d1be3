"""Schema change over time, end to end on the shared SparkSession (docs/RELIABILITY.md).

- new fields in events are ignored until the schema declares them;
- a model that gains an output column: refused at start-up under ``on_schema_change='fail'``
  (the default), added to the table under ``'append_new_columns'`` (earlier rows read null);
- a type change or a removed column: always refused, whatever the policy;
- a model added to a running pipeline with ``backfill=false`` starts with the next batch; a
  model removed leaves its table alone (backfills: ``tests/spark/test_backfill.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.build import compile_project
from runner.compile.plan import Column, Step
from runner.errors import ExecutionError
from runner.events import SchemaChanged
from runner.project.loader import load_project
from runner.runtime.start.evolution import plan_schema_changes
from runner.runtime.start.stream import run_stream
from runner.sinks.tables import read_table
from tests.support.events import Recorder, results_into
from tests.support.projects import BASE_YML, EVENT_SCHEMA, EXAMPLE_FILES, write_project

pytestmark = pytest.mark.spark

MODELS = dict(EXAMPLE_FILES)  # models, macros and the seed
YML = BASE_YML.replace("vars:\n  slow_ms: 1000\n", "vars:\n  slow_request_ms: 1000\n")
REQUEST_LOGS = MODELS["models/request_logs.sql"]


def _project(root: Path, files: dict[str, str], *, yml: str = YML, engine: str):
    write_project(root, files, project_yml=yml, engine=engine)
    (root / "incoming").mkdir(exist_ok=True)
    return load_project(root)


def _run(project, **kw):
    return run_stream(project, compile_project(project).plan, mode="available_now",
                      trigger="1 second", **kw)


def _rows(project, name: str) -> list[dict]:
    return read_table(str(project.table_path(name))).to_pylist()


def _version(project, name: str) -> int:
    from deltalake import DeltaTable

    return DeltaTable(str(project.table_path(name))).version()


def _event_file(project, name: str, events: list[dict]) -> None:
    path = project.root / "incoming" / name
    tmp = path.with_name("." + path.name + ".tmp")
    tmp.write_text("".join(json.dumps(e) + "\n" for e in events))
    tmp.replace(path)


def _events(prefix: str, n: int, **extra) -> list[dict]:
    return [{"eventId": f"{prefix}{i}", "timestamp": "2026-03-12T10:00:00Z",
             "user": {"userId": f"u{i}", "country": "IE"},
             "request": {"endpoint": "/a", "method": "GET", "latency_ms": 5 + i,
                         "status_code": 200},
             "errors": [], **extra} for i in range(n)]


def test_new_fields_ignored_until_declared_new_model_starts_next_batch(tmp_path, delta_engine) -> None:
    root = tmp_path / "p"
    project = _project(root, MODELS, engine=delta_engine)
    # Batch 0: events carry an undeclared field; it is ignored (no column, no dead letter).
    _event_file(project, "a.json", _events("a", 5, experiment={"arm": "b"}))
    _run(project)
    logs = _rows(project, "request_logs")
    assert len(logs) == 5 and "experiment" not in logs[0]
    assert not project.table_path("_dead_letter").exists()

    # Declare the field and add a model that reads it, on the same checkpoint, with
    # backfill=false: the new model starts with the next batch; the events of batch 0 are not
    # backfilled into it.
    yml = YML.replace(EVENT_SCHEMA, EVENT_SCHEMA + ", experiment STRUCT<arm: STRING>")
    project = _project(root, {"models/experiment_arms.sql": """
        {{ config(backfill=false) }}
        SELECT eventId, experiment.arm AS arm FROM parsed_events
    """}, yml=yml, engine=delta_engine)
    _event_file(project, "b.json", _events("b", 3, experiment={"arm": "a"}))
    batches = []
    _run(project, report=results_into(batches))
    assert [b.batch_id for b in batches] == [1]
    arms = _rows(project, "experiment_arms")
    assert sorted((r["eventId"], r["arm"]) for r in arms) == [("b0", "a"), ("b1", "a"),
                                                               ("b2", "a")]
    assert len(_rows(project, "request_logs")) == 8


def test_removed_model_leaves_its_table_alone(tmp_path, delta_engine) -> None:
    root = tmp_path / "p"
    project = _project(root, MODELS, engine=delta_engine)
    events = _events("a", 4)
    events[0]["errors"] = [{"errorCode": "E1", "severity": "critical"}]
    _event_file(project, "a.json", events)
    _run(project)
    version = _version(project, "error_events")
    # error_events is removed: its table is neither dropped nor written any more.
    (root / "models" / "error_events.sql").unlink()
    project = load_project(root)
    more = _events("b", 4)
    more[0]["errors"] = [{"errorCode": "E2", "severity": "info"}]
    _event_file(project, "b.json", more)
    _run(project)
    assert _version(project, "error_events") == version
    assert [r["errorCode"] for r in _rows(project, "error_events")] == ["E1"]
    assert len(_rows(project, "request_logs")) == 8
    # Put back with backfill=false, it resumes from the next batch: what ran while it was away
    # is not caught up on (by default it would be: tests/spark/test_backfill.py).
    write_project(root, {"models/error_events.sql": "{{ config(backfill=false) }}\n"
                         + MODELS["models/error_events.sql"]}, project_yml=YML,
                  engine=delta_engine)
    project = load_project(root)
    last = _events("c", 2)
    last[0]["errors"] = [{"errorCode": "E3", "severity": "info"}]
    _event_file(project, "c.json", last)
    _run(project)
    assert sorted(r["errorCode"] for r in _rows(project, "error_events")) == ["E1", "E3"]


def test_gained_column_refused_by_default_then_appended(tmp_path, delta_engine) -> None:
    root = tmp_path / "p"
    project = _project(root, MODELS, engine=delta_engine)
    _event_file(project, "a.json", _events("a", 3))
    _run(project)
    before = {m: _version(project, m) for m in ("request_logs", "performance_metrics")}

    gained = REQUEST_LOGS.replace("request.endpoint AS endpoint,",
                                  "request.endpoint AS endpoint,\n  request.method AS method,")
    assert gained != REQUEST_LOGS
    project = _project(root, {"models/request_logs.sql": gained}, engine=delta_engine)
    _event_file(project, "b.json", _events("b", 2))
    with pytest.raises(ExecutionError) as refused:
        _run(project)
    message = str(refused.value)
    for part in ("model request_logs", "models/request_logs.sql", "new column(s)",
                 "method (STRING)", "append_new_columns", "--full-refresh"):
        assert part in message, message
    # Refused before the query started: no table changed, no batch ran.
    assert before == {m: _version(project, m) for m in before}
    assert not (project.checkpoint / "commits" / "1").exists()

    config = "{{ config(materialized='append', tags=['requests'], " \
             "on_schema_change='append_new_columns') }}"
    appended = gained.replace("{{ config(materialized='append', tags=['requests']) }}", config)
    assert appended != gained
    project = _project(root, {"models/request_logs.sql": appended}, engine=delta_engine)
    events = Recorder()
    _run(project, report=events)
    assert SchemaChanged("request_logs", (("method", "STRING"),)) in events, events
    rows = {r["eventId"]: r for r in _rows(project, "request_logs")}
    assert len(rows) == 5
    assert [rows[f"a{i}"]["method"] for i in range(3)] == [None] * 3  # written before
    assert [rows[f"b{i}"]["method"] for i in range(2)] == ["GET"] * 2
    # The unchanged models went on as before, exactly once.
    assert len(_rows(project, "performance_metrics")) == 5


@pytest.mark.parametrize("policy", ["fail", "append_new_columns"])
def test_type_change_and_removed_column_are_always_refused(tmp_path, policy, delta_engine) -> None:
    root = tmp_path / "p"
    project = _project(root, MODELS, engine=delta_engine)
    _event_file(project, "a.json", _events("a", 2))
    _run(project)
    version = _version(project, "request_logs")
    config = f"{{{{ config(materialized='append', on_schema_change='{policy}') }}}}"
    changed = (REQUEST_LOGS
               .replace("{{ config(materialized='append', tags=['requests']) }}", config)
               .replace("request.status_code AS status_code",
                        "CAST(request.status_code AS STRING) AS status_code")
               .replace(",\n  {{ status_class('request.status_code') }} AS status_class", ""))
    assert "status_class" not in changed and "AS STRING" in changed
    project = _project(root, {"models/request_logs.sql": changed}, engine=delta_engine)
    _event_file(project, "b.json", _events("b", 2))
    with pytest.raises(ExecutionError) as refused:
        _run(project)
    message = str(refused.value)
    for part in ("model request_logs", "status_code (INT -> STRING)", "status_class (STRING)",
                 "removed", "--full-refresh"):
        assert part in message, message
    assert _version(project, "request_logs") == version
    assert len(_rows(project, "request_logs")) == 2


def test_exact_types_from_spark_no_false_refusal(tmp_path, delta_engine) -> None:
    """DECIMAL arithmetic widens precision (DECIMAL(10,2) * 2 is DECIMAL(12,2) in Spark), which
    the compile-time inference does not model: the start-up check uses Spark's analysed
    output, so an unchanged model restarts; a real type change is still refused."""
    root = tmp_path / "p"
    model = """
        SELECT eventId, CAST(request.latency_ms AS DECIMAL(10,2)) * 2 AS doubled,
               avg(CAST(request.latency_ms AS DECIMAL(10,2))) OVER () AS mean
        FROM parsed_events
    """
    project = _project(root, {**MODELS, "models/decimals.sql": model}, engine=delta_engine)
    _event_file(project, "a.json", _events("a", 3))
    _run(project)
    _event_file(project, "b.json", _events("b", 2))
    _run(project)  # a restart with the same model is not a schema change
    rows = _rows(project, "decimals")
    assert len(rows) == 5 and str(rows[0]["doubled"]).endswith(".00")
    project = _project(root, {"models/decimals.sql": model.replace("* 2", "* 2.5")}, engine=delta_engine)
    _event_file(project, "c.json", _events("c", 1))
    with pytest.raises(ExecutionError, match=r"doubled \(DECIMAL\(12,2\) -> DECIMAL\(13,3\)\)"):
        _run(project)


def test_unknown_compile_time_type_is_compared_by_name_only(tmp_path, spark) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    from runner.project.config import ModelConfig

    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"k": pa.array([1], pa.int32()), "v": ["x"]}))

    def step(*columns: Column, policy: str = "fail") -> Step:
        return Step(name="m", path="models/m.sql", sql="", depends_on=(), columns=columns,
                    config=ModelConfig(on_schema_change=policy))  # type: ignore[arg-type]

    table = lambda name: str(path)  # noqa: E731
    assert plan_schema_changes([step(Column("k", "UNKNOWN"), Column("v", "STRING"))], table) == []
    assert plan_schema_changes([step(Column("k", "INT"), Column("v", "STRING"))], table) == []
    [change] = plan_schema_changes([step(Column("k", "BIGINT"), Column("v", "STRING"))], table)
    assert change.changed == (("k", "INT", "BIGINT"),) and change.refused
    # A new column of unknown type cannot be added: the message says how to make it known.
    with pytest.raises(ExecutionError, match="(?s)new column w.*CAST"):
        plan_schema_changes([step(Column("k", "INT"), Column("v", "STRING"),
                                  Column("w", "UNKNOWN"), policy="append_new_columns")], table)
