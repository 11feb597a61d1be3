"""A store that fails makes the read-only commands (status, snapshot, show) end in one clear
message naming the location and the cause, with exit code 74 (``StorageError``: docs/
COMMANDS.md), never "internal error" (exit 3): moto's S3 server on loopback with the project's
bucket missing, and an endpoint where no server listens.

The commands run in this process through the CLI (no Spark: they read with obstore and
delta-rs); each test names a bucket of its own, so no store cached by an earlier test answers.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from runner.cli import cli
from runner.sinks.inspect import table_state
from tests.support.brokers import _free_port
from tests.support.object_store import MotoServer, unique_name
from tests.support.projects import BASE_YML, write_project

COMMANDS = (("status",), ("status", "--format", "json"), ("snapshot",), ("show",))


def _project(tmp_path, bucket_uri: str):
    yml = (BASE_YML.replace("warehouse: wh\n", f"warehouse: {bucket_uri}/wh\n")
           .replace("checkpoint: cp\n", f"checkpoint: {bucket_uri}/cp\n"))
    return write_project(tmp_path / "proj", {"models/m.sql": "SELECT eventId FROM parsed_events"},
                         project_yml=yml)


def _run(root, *args: str):
    return CliRunner().invoke(cli, [*args, "--project-dir", str(root)])


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_missing_bucket_is_a_storage_error(tmp_path, moto_server: MotoServer, monkeypatch,
                                             command) -> None:
    for key, value in moto_server.env().items():
        monkeypatch.setenv(key, value)
    uri = f"s3://{unique_name('missing')}"  # never created
    result = _run(_project(tmp_path, uri), *command)
    assert result.exit_code == 74, (result.exit_code, result.output)
    assert "internal error" not in result.output
    assert f"{uri}/" in result.output and "404" in result.output, result.output
    assert "hint: check the location" in result.output


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_an_unreachable_store_is_a_storage_error(tmp_path, monkeypatch, command) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{_free_port()}")  # nobody there
    for key, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                       ("AWS_REGION", "us-east-1"), ("AWS_ALLOW_HTTP", "true")):
        monkeypatch.setenv(key, value)
    uri = f"s3://{unique_name('down')}"
    result = _run(_project(tmp_path, uri), *command)
    assert result.exit_code == 74, (result.exit_code, result.output)
    assert "internal error" not in result.output
    assert f"{uri}/" in result.output and "error sending request" in result.output, result.output


def test_a_table_in_a_failing_store_is_a_problem_of_that_table(moto_server: MotoServer,
                                                               monkeypatch) -> None:
    """``runner status`` shows what it can of every table: a table whose store fails is
    reported with the cause, not raised."""
    for key, value in moto_server.env().items():
        monkeypatch.setenv(key, value)
    path = f"s3://{unique_name('missing')}/wh/orders"
    state = table_state(path, None)
    assert state.error is not None and path in state.error and "404" in state.error, state
