"""Spark's variable substitution is off in every session the runner makes: ``${env:NAME}``,
``${system:...}``, ``${spark:...}``, ``${hiveconf:...}``, ``${hivevar:...}`` and bare ``${NAME}``
in SQL text are the characters written, in every place SQL text reaches Spark (a model, a
``merge_update`` expression, a ``merge_condition``, an expectation, a unit test), and
project.yml cannot turn substitution back on (tests/unit/test_spark_conf.py).

With substitution on (Spark's default, and the runner's before it was turned off), the model
below wrote the secret into the table, the merge condition and the expectation compared it,
and a failing unit test printed it.

Both engines: what is checked is what lands in the Delta tables (a merge is delta-rs' on rs,
delta-spark's on spark; the condition and the update expressions reach each differently).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.build import compile_project
from runner.model_tests.report import result_lines
from runner.model_tests.suite import collect_suite, run_suite
from runner.project.loader import load_project
from runner.runtime.start.stream import run_stream
from runner.sinks.tables import read_table
from tests.support.projects import write_project

pytestmark = pytest.mark.spark

SECRET_VAR = "RUNNER_TEST_SUBSTITUTION_SECRET"
SECRET = "s3cr3t-value-from-the-environment"
#: Every spelling Spark's VariableSubstitution knows, each as it must stay.
SPELLINGS = {
    "env": f"${{env:{SECRET_VAR}}}",
    "system": "${system:user.home}",
    "spark": "${spark:spark.app.name}",
    "sparkconf": "${sparkconf:spark.app.name}",
    "hiveconf": "${hiveconf:spark.app.name}",
    "hivevar": "${hivevar:x}",
    "bare": "${spark.app.name}",
}
SELECT_LIST = ",\n       ".join(f"'{text}' AS {name}" for name, text in SPELLINGS.items())

FILES = {
    "models/literals.sql": f"SELECT eventId,\n       {SELECT_LIST}\nFROM parsed_events",
    # merge_update writes the text; merge_condition compares it (true only when unsubstituted);
    # the expectation quarantines every row when the text is substituted.
    "models/by_country.sql": f"""
        {{{{ config(materialized='merge', unique_key='country',
                  merge_update={{'note': "concat('${{env:{SECRET_VAR}}}', '')",
                                'n': 'target.n + source.n'}},
                  merge_condition="'${{env:{SECRET_VAR}}}' <> '{SECRET}'",
                  expectations=[{{'name': 'unsubstituted',
                                 'expr': "'${{env:{SECRET_VAR}}}' <> '{SECRET}'",
                                 'on_violation': 'quarantine'}}]) }}}}
        SELECT user.country AS country, count(*) AS n, 'first' AS note
        FROM parsed_events GROUP BY user.country
        """,
    "models/literals.yml": f"""
        unit_tests:
          - name: keeps_the_text
            given:
              events:
                - {{eventId: e1, timestamp: "2026-01-01T00:00:00Z"}}
            expect:
              rows: [{{eventId: e1, env: "{SPELLINGS['env']}", system: "{SPELLINGS['system']}"}}]
        """,
}


def _event(event_id: str) -> str:
    return json.dumps({"eventId": event_id, "timestamp": "2026-01-01T00:00:00Z",
                       "user": {"userId": "u", "country": "IE"}})


def test_sql_text_reaches_spark_unsubstituted(tmp_path: Path, spark, delta_engine: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SECRET_VAR, SECRET)
    root = write_project(tmp_path / "proj", FILES, engine=delta_engine)
    incoming = root / "incoming"
    incoming.mkdir()
    project = load_project(root)
    plan = compile_project(project).plan
    for batch in range(2):  # the second batch takes the merge's matched-update path
        (incoming / f"b{batch}.json").write_text(_event(f"e{batch}") + "\n")
        run_stream(project, plan, mode="available_now", trigger="1 second")

    literals = read_table(str(project.table_path("literals"))).to_pylist()
    assert len(literals) == 2
    for row in literals:
        assert {name: row[name] for name in SPELLINGS} == SPELLINGS

    merged = read_table(str(project.table_path("by_country"))).to_pylist()
    assert merged == [{"country": "IE", "n": 2, "note": SPELLINGS["env"]}]
    # The expectation held (its text was not the secret): no row quarantined (the spark
    # engine creates the empty dead-letter table at start; rs at its first row).
    dead_path = project.table_path(project.config.dead_letter)
    assert not dead_path.exists() or read_table(str(dead_path)).num_rows == 0

    summary = run_suite(collect_suite(project, plan, kind="unit"), spark=spark)
    report = "\n".join(line for r in summary.results for line in result_lines(r))
    assert summary.ok, report
    assert SECRET not in report
