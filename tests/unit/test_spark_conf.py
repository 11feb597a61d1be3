"""project.yml's ``spark.conf`` is an allowlist (runner/project/spark_conf.py): what it lists
is accepted, everything else needs the deployment's opt-in, and the runner's own keys
(variable substitution) take no opt-in at all. No Spark here: the refusal comes before any
session starts; tests/spark/test_spark_conf_allowlist.py holds the list against Spark's own
configuration registry."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from runner.cli import cli
from runner.project.spark_conf import ALLOWED, FORCED, allowed, guarded_reason
from tests.support.projects import BASE_YML, write_project

MODEL = {"models/m.sql": "SELECT eventId FROM parsed_events"}


def _with_conf(tmp_path: Path, conf: dict[str, str]) -> Path:
    lines = "".join(f"    {k}: '{v}'\n" for k, v in conf.items())
    yml = BASE_YML + f"spark:\n  conf:\n{lines}"
    assert yml != BASE_YML
    root = write_project(tmp_path, MODEL)
    (root / "project.yml").write_text(yml)  # as written: nothing moved to a profile
    return root


#: Settings that load code or run programs and are not named in any prefix of the old
#: denylist: each must be refused now (the first is the reviewed finding).
CODE_LOADING = [
    "spark.driver.resource.gpu.discoveryScript",
    "spark.executor.resource.fpga.discoveryScript",
    "spark.resources.discoveryPlugin",
    "spark.sql.sources.commitProtocolClass",
    "spark.sql.parquet.output.committer.class",
    "spark.sql.streaming.stateStore.providerClass",
    "spark.sql.streaming.checkpointFileManagerClass",
    "spark.sql.cache.serializer",
    "spark.serializer",
    "spark.io.compression.codec",  # takes a class name
    "spark.shuffle.sort.io.plugin.class",
    "spark.shuffle.manager",
    "spark.sql.execution.pyspark.python",
    "spark.sql.adaptive.customCostEvaluatorClass",
    "spark.hadoop.fs.s3a.aws.credentials.provider",
    "spark.hadoop.fs.s3a.impl",
    "spark.hadoop.fs.azure.account.oauth.provider.type.acct.dfs.core.windows.net",
    "spark.delta.logStore.class",
    "spark.ui.filters",
    "spark.eventLog.dir",
    "spark.sql.warehouse.dir",
    "spark.sql.session.timeZone",  # not code, but the runner's own (UTC): needs an opt-in too
]


@pytest.mark.parametrize("key", CODE_LOADING)
def test_settings_off_the_list_need_an_opt_in(tmp_path: Path, key: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RUNNER_ALLOW_SPARK_CONF", raising=False)
    assert not allowed(key) and guarded_reason(key)
    root = _with_conf(tmp_path, {key: "x"})
    refused = CliRunner().invoke(cli, ["compile", "--project-dir", str(root)])
    assert refused.exit_code == 2, refused.output
    assert f"spark.conf.{key}:" in refused.output
    assert f"--allow-spark-conf {key}" in refused.output  # the way out, for the deployment
    accepted = CliRunner().invoke(cli, ["compile", "--project-dir", str(root),
                                        "--allow-spark-conf", key])
    assert accepted.exit_code == 0, accepted.output


def test_a_discovery_script_never_runs_under_stream_or_test(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """The finding: a GPU amount plus a discovery script in project.yml ran the script under
    ``runner stream`` and ``runner test --kind unit``. Both now stop at project.yml."""
    monkeypatch.delenv("RUNNER_ALLOW_SPARK_CONF", raising=False)
    marker = tmp_path / "ran"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\nenv > {marker}\necho '{{\"name\":\"gpu\",\"addresses\":[]}}'\n")
    script.chmod(0o755)
    root = _with_conf(tmp_path / "proj", {"spark.driver.resource.gpu.amount": "1",
                                          "spark.driver.resource.gpu.discoveryScript":
                                              str(script)})
    for args in (["stream", "--available-now"], ["test", "--kind", "unit"]):
        result = CliRunner().invoke(cli, [*args, "--project-dir", str(root)])
        assert result.exit_code == 2, result.output
        assert "spark.conf.spark.driver.resource.gpu.amount:" in result.output
        assert "discovery scripts" in result.output
    assert not marker.exists()


def test_variable_substitution_takes_no_opt_in(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    key = "spark.sql.variable.substitute"
    assert key in FORCED
    monkeypatch.setenv("RUNNER_ALLOW_SPARK_CONF", key)
    root = _with_conf(tmp_path, {key: "true"})
    result = CliRunner().invoke(cli, ["compile", "--project-dir", str(root),
                                      "--allow-spark-conf", key])
    assert result.exit_code == 2, result.output
    assert f"spark.conf.{key}:" in result.output and "variable substitution" in result.output
    assert "no opt-in sets it" in result.output


def test_the_listed_settings_need_no_opt_in(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RUNNER_ALLOW_SPARK_CONF", raising=False)
    listed = {key.replace("*", "acct.dfs.core.windows.net"): "1"
              for keys in ALLOWED.values() for key in keys}
    assert len(listed) > 50
    root = _with_conf(tmp_path, listed)
    result = CliRunner().invoke(cli, ["compile", "--project-dir", str(root)])
    assert result.exit_code == 0, result.output


def test_every_refused_key_is_named_with_its_line(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RUNNER_ALLOW_SPARK_CONF", raising=False)
    root = _with_conf(tmp_path, {"spark.sql.shuffle.partitions": "4",
                                 "spark.made.up.setting": "x",
                                 "spark.serializer": "org.example.Evil"})
    result = CliRunner().invoke(cli, ["compile", "--project-dir", str(root)])
    assert result.exit_code == 2, result.output
    text = (root / "project.yml").read_text().splitlines()
    for key in ("spark.made.up.setting", "spark.serializer"):
        line = next(i for i, t in enumerate(text, 1) if t.strip().startswith(key + ":"))
        assert f"project.yml:{line}: spark.conf.{key}:" in result.output, result.output
    assert "spark.sql.shuffle.partitions" not in result.output
