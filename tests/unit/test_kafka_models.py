"""``materialized='kafka'`` models at compile time: the config's keys and the record columns'
types (runner/lint/checks/kafka.py), each problem named at the model's line, as for tables."""

from __future__ import annotations

import pytest

from runner.build import compile_project
from runner.errors import ConfigError
from runner.project.loader import load_project
from tests.support.projects import write_project


def _violations(tmp_path, sql: str) -> list[str]:
    root = write_project(tmp_path, {"models/out.sql": sql})
    result = compile_project(load_project(root))
    return [f"{v.rule}:{v.line}:{v.message}" for v in result.violations
            if v.path.endswith("out.sql") and v.severity == "error"]


def test_a_kafka_model_with_a_topic_and_record_columns_compiles_clean(tmp_path) -> None:
    sql = """
    {{ config(materialized='kafka', topic='orders-enriched') }}
    SELECT eventId AS key, to_json(named_struct('id', eventId)) AS value,
           array(named_struct('key', 'src', 'value', CAST('x' AS BINARY))) AS headers
    FROM parsed_events
    """
    assert _violations(tmp_path, sql) == []


@pytest.mark.parametrize(("sql", "expected"), [
    ("{{ config(materialized='kafka') }}\nSELECT eventId AS key FROM parsed_events",
     "kafka-columns:1:a materialized='kafka' model needs a topic"),
    ("{{ config(materialized='kafka', topic='t') }}\n"
     "SELECT eventId, 'x' AS topic FROM parsed_events",
     "kafka-columns:2:both config(topic=...) and a topic column"),
    ("{{ config(materialized='kafka', topic='t') }}\n"
     "SELECT eventId,\n  request.latency_ms AS key FROM parsed_events",
     "kafka-columns:3:Kafka record column `key` is INT; it must be STRING or BINARY"),
    ("{{ config(materialized='kafka', topic='t') }}\n"
     "SELECT eventId, 'p' AS partition FROM parsed_events",
     "kafka-columns:2:Kafka record column `partition` is STRING; it must be an integer"),
    ("{{ config(materialized='kafka', topic='t') }}\n"
     "SELECT eventId, array('a') AS headers FROM parsed_events",
     "kafka-columns:2:Kafka record column `headers` is ARRAY<STRING>"),
])
def test_compile_names_a_kafka_model_s_problem_at_its_line(tmp_path, sql, expected) -> None:
    found = _violations(tmp_path, sql)
    assert any(v.startswith(expected) for v in found), found


def test_table_keys_on_a_kafka_model_are_a_model_error(tmp_path) -> None:
    sql = ("{{ config(materialized='kafka', topic='t', partition_by=['eventId']) }}\n"
           "SELECT eventId FROM parsed_events")
    root = write_project(tmp_path, {"models/out.sql": sql})
    result = compile_project(load_project(root))
    assert any("partition_by is a table's key" in v.message for v in result.violations), \
        [v.message for v in result.violations]


def test_project_yml_cannot_name_the_kafka_outputs_connection(tmp_path) -> None:
    from runner.project.boundary import check_boundary

    text = "name: p\nkafka_outputs:\n  bootstrap_servers: evil:9092\n"
    with pytest.raises(ConfigError, match="kafka_outputs: the brokers"):
        check_boundary({"name": "p", "kafka_outputs": {"bootstrap_servers": "evil:9092"}},
                       text=text)
