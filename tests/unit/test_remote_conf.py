"""The settings a Spark Connect client gives its session (runner.runtime.client.remote), with a
stand-in session: no Spark."""

from __future__ import annotations

from typing import Any

from runner.runtime.client.remote import _apply, run_time_hadoop


class _Conf:
    def __init__(self, server: dict[str, str]) -> None:
        self.values = dict(server)
        self.set_keys: list[str] = []

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def set(self, key: str, value: str) -> None:
        self.set_keys.append(key)
        self.values[key] = value


class _Session:
    def __init__(self, server: dict[str, str]) -> None:
        self.conf = _Conf(server)


def test_hadoop_settings_reach_a_live_session_as_bare_keys() -> None:
    conf = {"spark.hadoop.fs.s3a.bucket.b.endpoint": "http://127.0.0.1:9000",
            "spark.hadoop.hive.metastore.uris": "thrift://m:9083", "spark.sql.x": "1"}
    assert run_time_hadoop(conf) == {**conf, "fs.s3a.bucket.b.endpoint": "http://127.0.0.1:9000"}


def test_a_metastore_uri_counts_as_static_on_the_server() -> None:
    uri = "spark.hadoop.hive.metastore.uris"
    same = _Session({uri: "thrift://m:9083"})
    assert _apply(same, {uri: "thrift://m:9083"}) == {}  # type: ignore[arg-type]
    other = _Session({uri: "thrift://m:9083"})
    assert _apply(other, {uri: "thrift://x:9083"}) == {uri: "thrift://m:9083"}  # type: ignore[arg-type]
    none = _Session({})
    assert _apply(none, {uri: "thrift://x:9083", "fs.a": "1"}) == {uri: None}  # type: ignore[arg-type]
    assert none.conf.set_keys == ["fs.a"]  # never set: the server would ignore it
