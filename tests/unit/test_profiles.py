"""The deployment's profile (runner/project/profile.py) and what project.yml may no longer hold
(runner/project/boundary.py).

The findings this answers, each reproduced before with `runner compile` exiting 0: a
``storage:`` Hadoop credential provider that ran a command, Kafka ``plugin.library.paths``
loading a library from the pull request, ``AWS_ENDPOINT_URL`` / ``azure_authority_host`` /
an OAuth endpoint sending the deployment's credentials to a host the pull request named. Each
is now a configuration error (exit 2) before anything connects; a real HTTP listener on
loopback checks that nothing reached it. No Spark.
"""

from __future__ import annotations

import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from runner.cli import cli
from runner.errors import ConfigError
from runner.project.loader import load_project
from runner.project.profile import PROFILES_DIR_ENV, TARGET_ENV
from tests.support.projects import BASE_YML, write_project

MODEL = {"models/m.sql": "SELECT eventId FROM parsed_events"}
KAFKA_YML = BASE_YML.replace("  type: files\n  path: incoming\n",
                             "  type: kafka\n  topic: events\n")


def _run(root: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [*args, "--project-dir", str(root)], env=env)
    return result.exit_code, result.output


def _raw(root: Path, yml: str) -> Path:
    """project.yml exactly as written (the tests' writer would move deployment keys out)."""
    write_project(root, MODEL)
    (root / "project.yml").write_text(yml)
    return root


@pytest.fixture
def listener() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on loopback that records every request it gets (and answers 500)."""
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def _any(self) -> None:
            seen.append(f"{self.command} {self.path} {dict(self.headers)}")
            self.send_response(500)
            self.end_headers()

        do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _any

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()


@pytest.mark.parametrize("extra, key", [
    ("storage:\n  fs.s3a.bucket.b.aws.credentials.provider: "
     "com.amazonaws.auth.profile.ProfileAWSCredentialsProvider\n"
     "  fs.s3a.bucket.b.auth.profile.file: macros/creds.ini\n", "storage"),
    ("storage:\n  azure_authority_host: http://127.0.0.1:1\n", "storage"),
    ("spark:\n  master: spark://elsewhere:7077\n", "spark.master"),
    ("spark:\n  remote: sc://elsewhere:15002\n", "spark.remote"),
    ("metrics:\n  port: 9108\n", "metrics"),
    ("spark:\n  conf:\n    spark.hadoop.fs.azure.account.oauth2.client.endpoint.acct.dfs.core."
     "windows.net: http://127.0.0.1:1/token\n",
     "spark.conf.spark.hadoop.fs.azure.account.oauth2.client.endpoint"),
    ("spark:\n  conf:\n    spark.hadoop.hive.metastore.uris: thrift://elsewhere:9083\n",
     "spark.conf.spark.hadoop.hive.metastore.uris"),
])
def test_connection_keys_in_project_yml_exit_2_naming_where_they_go(tmp_path: Path, extra: str,
                                                                    key: str) -> None:
    yml = BASE_YML + extra
    root = _raw(tmp_path, yml)
    for command in (["compile"], ["status"], ["stream", "--available-now"]):
        code, out = _run(root, *command)
        assert code == 2, (command, out)
        assert f"{key}" in out, out
        assert "profile" in out, out
    assert not (root / "cp").exists() and not (root / "wh").exists()


@pytest.mark.parametrize("source, key", [
    ("  bootstrap_servers: 127.0.0.1:9092\n", "source.bootstrap_servers"),
    ("  options:\n    plugin.library.paths: ./macros/evil.so\n", "source.options"),
])
def test_kafka_connections_in_project_yml_exit_2(tmp_path: Path, source: str, key: str) -> None:
    root = _raw(tmp_path, KAFKA_YML.replace("  topic: events\n", "  topic: events\n" + source))
    code, out = _run(root, "compile")
    assert code == 2 and "project.yml:" in out and key in out, out
    assert "outputs: <target>: " + key in out


@pytest.mark.parametrize("value, why", [
    ("/data/wh", "an absolute path"), ("s3://lake/wh", "a URI"), ("~/wh", "an absolute path"),
    ("../elsewhere", "a path outside the project"), ("file:///tmp/wh", "a URI"),
])
def test_project_yml_locations_are_relative_and_inside(tmp_path: Path, value: str,
                                                       why: str) -> None:
    root = _raw(tmp_path, BASE_YML.replace("warehouse: wh", f"warehouse: '{value}'"))
    code, out = _run(root, "compile")
    assert code == 2 and f"warehouse: {value!r} is {why}" in out, out
    # inside the project, any spelling of a relative path is fine
    _raw(tmp_path, BASE_YML.replace("warehouse: wh", "warehouse: ./a/../wh2"))
    assert _run(root, "compile")[0] == 0


def test_a_pull_requests_endpoint_gets_no_request(tmp_path: Path, listener, monkeypatch) -> None:
    """The finding: ``storage: {AWS_ENDPOINT_URL: http://...}`` made ``runner status`` send
    signed requests with the session token there. Now refused before any request."""
    url, seen = listener
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEPLOYMENT")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "deployment-secret")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "deployment-session-token")
    yml = (BASE_YML.replace("warehouse: wh", "warehouse: s3://lake/wh")
           .replace("checkpoint: cp", "checkpoint: s3://lake/cp")
           + f"storage:\n  AWS_ENDPOINT_URL: {url}\n  AWS_ALLOW_HTTP: 'true'\n")
    root = _raw(tmp_path, yml)
    for command in (["status"], ["snapshot"], ["maintain"], ["show"]):
        code, out = _run(root, *command)
        assert code == 2, (command, out)
    assert seen == []


def test_the_profile_sets_the_endpoint_the_project_cannot(tmp_path: Path, listener) -> None:
    """The same endpoint from the deployment's profile is used: the listener gets the request
    (and answers 500, which ``status`` reports as a storage error)."""
    url, seen = listener
    root = write_project(tmp_path, MODEL, target={
        "warehouse": "s3://lake/wh", "checkpoint": "s3://lake/cp",
        "storage": {"AWS_ENDPOINT_URL": url, "AWS_ALLOW_HTTP": "true",
                    "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s",
                    "AWS_REGION": "us-east-1"}})
    project = load_project(root)
    assert str(project.warehouse) == "s3://lake/wh"
    _run(root, "status")
    assert seen, "the profile's endpoint was not used"


# -- which file, which target ------------------------------------------------------------


def _profile(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "profiles.yml").write_text(text)
    return folder


PROFILE = """\
test_pipeline:
  target: dev
  outputs:
    dev:
      warehouse: dev_wh
    prod:
      warehouse: prod_wh
      spark: {master: "local[1]"}
"""


def test_target_order_flag_environment_default(tmp_path: Path, monkeypatch) -> None:
    folder = _profile(tmp_path / "deploy", PROFILE)
    root = write_project(tmp_path / "proj", MODEL)
    monkeypatch.setenv(PROFILES_DIR_ENV, str(folder))
    monkeypatch.delenv(TARGET_ENV, raising=False)
    assert load_project(root).config.warehouse == "dev_wh"  # the profile's target:
    monkeypatch.setenv(TARGET_ENV, "prod")
    project = load_project(root)
    assert (project.config.warehouse, project.config.spark.master) == ("prod_wh", "local[1]")
    assert project.target.name == "prod" and project.target.file == folder / "profiles.yml"
    assert load_project(root, target="dev").config.warehouse == "dev_wh"  # --target wins
    code, out = _run(root, "compile", "--target", "prd")
    assert code == 2 and "has no target 'prd' (did you mean 'prod'?)" in out, out
    # --profiles-dir wins over the environment's folder
    other = _profile(tmp_path / "other", PROFILE.replace("prod_wh", "other_wh"))
    assert load_project(root, profiles_dir=str(other)).config.warehouse == "other_wh"
    code, out = _run(root, "compile", "--profiles-dir", str(tmp_path / "nothing"))
    assert code == 2 and "no profiles.yml there" in out, out


def test_the_target_chooses_spark_connect(tmp_path: Path, monkeypatch) -> None:
    """``spark.remote`` is the target's (docs/CONNECT.md); with a master too it is refused; a
    URL that is not ``sc://`` is refused before any session."""
    folder = _profile(tmp_path / "deploy", PROFILE.replace(
        'spark: {master: "local[1]"}', 'spark: {remote: "sc://127.0.0.1:15002"}'))
    root = write_project(tmp_path / "proj", MODEL)
    monkeypatch.setenv(PROFILES_DIR_ENV, str(folder))
    assert load_project(root, target="prod").config.spark.remote == "sc://127.0.0.1:15002"
    assert load_project(root, target="dev").config.spark.remote is None
    _profile(folder, PROFILE.replace('spark: {master: "local[1]"}',
                                     'spark: {master: "local[1]", remote: "sc://h:1"}'))
    code, out = _run(root, "compile", "--target", "prod")
    assert code == 2 and "spark.master and spark.remote both set" in out, out
    from runner.runtime.client.remote import remote_url

    with pytest.raises(ConfigError, match="not a Spark Connect URL"):
        remote_url("http://h:1")


def test_home_folder_and_the_built_in_dev_target(tmp_path: Path, monkeypatch) -> None:
    root = write_project(tmp_path / "proj", MODEL)
    monkeypatch.delenv(PROFILES_DIR_ENV)
    monkeypatch.delenv(TARGET_ENV, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    project = load_project(root)  # no profile at all: the built-in dev target
    assert project.target.file is None and project.target.name == "dev"
    assert (project.config.warehouse, project.config.spark.master) == ("wh", "local[*]")
    code, out = _run(root, "compile", "--target", "prod",
                     env={"HOME": str(tmp_path / "home")})
    assert code == 2 and "no profiles.yml found" in out, out
    _profile(tmp_path / "home" / ".runner", PROFILE)
    assert load_project(root).config.warehouse == "dev_wh"
    # a profile without this project's entry: the built-in dev target, unless another is asked
    _profile(tmp_path / "home" / ".runner", PROFILE.replace("test_pipeline", "another"))
    assert load_project(root).config.warehouse == "wh"
    with pytest.raises(ConfigError, match="no profile 'test_pipeline'"):
        load_project(root, target="prod")


def test_a_profile_inside_the_project_is_read_only_when_named(tmp_path: Path,
                                                              monkeypatch) -> None:
    root = write_project(tmp_path / "proj", MODEL)
    _profile(root, PROFILE.replace("dev_wh", "shipped_wh"))
    code, out = _run(root, "compile")
    assert code == 2 and "is not read: a profile inside the project directory" in out, out
    assert "--profiles-dir" in out
    code, out = _run(root, "compile", "--profiles-dir", str(root))
    assert code == 0, out
    assert load_project(root, profiles_dir=str(root)).config.warehouse == "shipped_wh"
    (root / "profiles.yml").unlink()
    _profile(root / "deploy", PROFILE)
    monkeypatch.setenv(PROFILES_DIR_ENV, str(root / "deploy"))
    with pytest.raises(ConfigError, match="RUNNER_PROFILES_DIR points inside the project"):
        load_project(root)


def test_profile_name_and_source_kinds(tmp_path: Path, monkeypatch) -> None:
    folder = _profile(tmp_path / "deploy", """\
shared:
  outputs:
    dev:
      source: {bootstrap_servers: "127.0.0.1:1", options: {security.protocol: PLAINTEXT}}
files_only:
  outputs:
    dev:
      source: {path: elsewhere}
""")
    monkeypatch.setenv(PROFILES_DIR_ENV, str(folder))
    root = write_project(tmp_path / "k", MODEL, project_yml=KAFKA_YML + "profile: shared\n")
    source = load_project(root).config.source
    assert source.brokers == "127.0.0.1:1"
    assert source.options["security.protocol"].get_secret_value() == "PLAINTEXT"
    root = write_project(tmp_path / "f", MODEL, project_yml=BASE_YML + "profile: shared\n")
    with pytest.raises(ConfigError, match="source.bootstrap_servers and source.options are "
                                          "for a kafka source"):
        load_project(root)
    root = write_project(tmp_path / "kf", MODEL, project_yml=KAFKA_YML + "profile: files_only\n")
    with pytest.raises(ConfigError, match="source.path is for a files source"):
        load_project(root)
    # a Kafka project compiles with no brokers anywhere (a pull request's CI has no profile)
    root = write_project(tmp_path / "ci", MODEL, project_yml=KAFKA_YML)
    monkeypatch.delenv(PROFILES_DIR_ENV)
    monkeypatch.setenv("HOME", str(tmp_path / "nohome"))
    assert _run(root, "compile")[0] == 0
    with pytest.raises(ConfigError, match="no Kafka brokers"):
        _ = load_project(root).config.source.brokers


def test_profile_errors_name_the_file_and_line(tmp_path: Path, monkeypatch) -> None:
    folder = _profile(tmp_path / "deploy", """\
test_pipeline:
  outputs:
    dev:
      warehous: x
      metrics: {port: "{{ env_var('SECRET_PORT') }}"}
""")
    monkeypatch.setenv(PROFILES_DIR_ENV, str(folder))
    monkeypatch.setenv("SECRET_PORT", "not-a-port-hunter2")
    root = write_project(tmp_path / "proj", MODEL)
    code, out = _run(root, "compile")
    assert code == 2, out
    assert f"{folder / 'profiles.yml'}:4: " in out and "did you mean 'warehouse'" in out, out
    assert "hunter2" not in out  # a value the profile read is a secret


def test_only_the_chosen_target_is_rendered(tmp_path: Path, monkeypatch) -> None:
    """A target whose variables are unset here does not stop another (dbt's rendering)."""
    folder = _profile(tmp_path / "deploy", """\
test_pipeline:
  outputs:
    dev: {warehouse: dev_wh}
    prod: {warehouse: "{{ env_var('PROD_ONLY_UNSET') }}"}
""")
    monkeypatch.setenv(PROFILES_DIR_ENV, str(folder))
    monkeypatch.delenv("PROD_ONLY_UNSET", raising=False)
    root = write_project(tmp_path / "proj", MODEL)
    assert load_project(root).config.warehouse == "dev_wh"
    with pytest.raises(ConfigError, match="PROD_ONLY_UNSET"):
        load_project(root, target="prod")


def test_allow_spark_conf_in_the_target_and_any_key_in_its_conf(tmp_path: Path,
                                                                monkeypatch) -> None:
    monkeypatch.delenv("RUNNER_ALLOW_SPARK_CONF", raising=False)
    root = _raw(tmp_path / "proj", BASE_YML + "spark:\n  conf:\n    spark.sql.extensions: x.Y\n")
    assert _run(root, "compile")[0] == 2
    folder = _profile(tmp_path / "deploy", """\
test_pipeline:
  outputs:
    dev:
      allow_spark_conf: [spark.sql.extensions]
      spark: {conf: {spark.jars: /opt/extra.jar}}
""")
    monkeypatch.setenv(PROFILES_DIR_ENV, str(folder))
    config = load_project(root).config
    assert config.spark.conf == {"spark.sql.extensions": "x.Y", "spark.jars": "/opt/extra.jar"}
    _profile(folder, "test_pipeline:\n  outputs:\n    dev:\n      allow_spark_conf: "
                     "[spark.sql.extensions]\n      spark: {conf: "
                     "{spark.sql.variable.substitute: 'true'}}\n")
    with pytest.raises(ConfigError, match="variable.substitute"):
        load_project(root)


def test_an_environment_value_cannot_add_keys_to_project_yml(tmp_path: Path,
                                                             monkeypatch) -> None:
    """A public value with a quote and a newline spliced into project.yml would add a
    ``storage:`` key nobody wrote (and with the boundary, one that is refused: but keys the
    project may hold, such as ``vars``, would pass); it is refused naming the variable."""
    monkeypatch.setenv("PUBLIC_LABEL", 'x"\nvars: {slow_ms: 1}\nparallelism: "2')
    yml = BASE_YML.replace("vars:\n  slow_ms: 1000\n", "") + (
        "env_var_prefixes: [PUBLIC_]\nvars:\n  label: \"{{ env_var('PUBLIC_LABEL') }}\"\n")
    root = write_project(tmp_path, MODEL, project_yml=yml)
    with pytest.raises(ConfigError, match="environment variable 'PUBLIC_LABEL' changes "
                                          "project.yml's structure"):
        load_project(root)
    monkeypatch.setenv("PUBLIC_LABEL", "plain: value, with 'quotes'")
    assert load_project(root).config.vars["label"] == "plain: value, with 'quotes'"
    assert os.environ["PUBLIC_LABEL"]
