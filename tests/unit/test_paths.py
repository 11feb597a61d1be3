"""Paths that could destroy data are refused when the project loads.

``--full-refresh`` deletes the checkpoint's contents and every table folder, a rebuild one
table folder: a checkpoint, warehouse or source folder that is, contains or lies inside
another, the project or its files, the root or a home directory is refused (exit 2) by
``compile`` and by every command that loads the project, before anything is touched. Remote
URIs are refused by name, never joined onto the project directory. No Spark: the refusal
comes before any session starts.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from runner.cli import cli
from runner.project.loader import load_project
from tests.support.projects import BASE_YML, write_project

MODEL = {"models/a.sql": "SELECT eventId FROM parsed_events"}
KAFKA = BASE_YML.replace("  type: files\n  path: incoming\n",
                         "  type: kafka\n  bootstrap_servers: localhost:9092\n  topic: events\n")


def _yml(*, warehouse: str = "wh", checkpoint: str = "cp", source: str = "incoming",
         base: str = BASE_YML) -> str:
    return (base.replace("warehouse: wh\n", f"warehouse: '{warehouse}'\n")
            .replace("checkpoint: cp\n", f"checkpoint: '{checkpoint}'\n")
            .replace("  path: incoming\n", f"  path: '{source}'\n"))


def _run(root: Path, *args: str):
    return CliRunner().invoke(cli, [*args, "--project-dir", str(root)], catch_exceptions=False)


def _refused(root: Path, expected: str, command: str = "compile") -> None:
    result = _run(root, command)
    assert result.exit_code == 2, result.output
    assert expected in result.output, result.output
    assert "Traceback" not in result.output
    # names the file that set the key: project.yml (with its line) or the target's profile
    assert "project.yml:" in result.output or "profiles.yml: " in result.output


@pytest.mark.parametrize("kwargs, expected", [
    ({"checkpoint": "."}, "checkpoint: {root} is the project directory"),
    ({"checkpoint": ".."}, "checkpoint: {parent} contains the project directory"),
    ({"warehouse": "."}, "warehouse: {root} is the project directory"),
    ({"warehouse": ".."}, "warehouse: {parent} contains the project directory"),
    ({"source": "."}, "source.path: {root} is the project directory"),
    ({"warehouse": "/"}, "warehouse: / is the filesystem root"),
    ({"checkpoint": "/"}, "checkpoint: / is the filesystem root"),
    ({"warehouse": "/home"}, "warehouse: /home is the folder of every user's home directory"),
    ({"warehouse": "/home/alice"}, "/home/alice is a home directory"),
    ({"checkpoint": "/root"}, "/root is a home directory"),
    ({"warehouse": "models"}, "warehouse: {root}/models is the project's models"),
    ({"warehouse": "models/tables"}, "lies inside the project's models"),
    ({"checkpoint": ".git"}, "checkpoint: {root}/.git is the project's .git"),
    ({"source": "macros"}, "is the project's macros"),
    ({"checkpoint": "wh/cp"}, "checkpoint: {root}/wh/cp lies inside warehouse {root}/wh"),
    ({"warehouse": "cp"}, "checkpoint: {root}/cp is warehouse {root}/cp"),
    ({"source": "wh/in"}, "warehouse: {root}/wh contains source.path {root}/wh/in"),
    ({"source": "cp"}, "checkpoint: {root}/cp is source.path"),
])
def test_overlapping_or_dangerous_locations_are_refused(tmp_path, kwargs, expected) -> None:
    root = write_project(tmp_path / "proj", MODEL, project_yml=_yml(**kwargs))
    _refused(root, expected.format(root=root, parent=tmp_path))


def test_home_directory_by_tilde_and_by_home_is_refused(tmp_path, monkeypatch) -> None:
    home = tmp_path / "alice"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    root = write_project(tmp_path / "proj", MODEL, project_yml=_yml(warehouse="~"))
    _refused(root, f"warehouse: {home} is a home directory ($HOME)")
    write_project(root, {}, project_yml=_yml(checkpoint=str(home)))
    _refused(root, f"checkpoint: {home} is a home directory ($HOME)")
    write_project(root, {}, project_yml=_yml(warehouse=str(tmp_path)))  # holds $HOME
    _refused(root, f"warehouse: {tmp_path} is a folder containing the home directory {home}")
    write_project(root, {}, project_yml=_yml(warehouse="~/tables"))  # inside $HOME: fine
    assert _run(root, "compile").exit_code == 0
    assert load_project(root).warehouse == home / "tables"


def test_full_refresh_with_the_checkpoint_at_the_project_is_refused_before_deleting(
        tmp_path) -> None:
    """Before the fix this deleted project.yml, models/ and .git."""
    root = write_project(tmp_path / "proj", {**MODEL, ".git/HEAD": "ref: refs/heads/main\n"},
                         project_yml=_yml(checkpoint="."))
    (root / "incoming").mkdir()
    result = _run(root, "stream", "--available-now", "--full-refresh")
    assert result.exit_code == 2, result.output
    assert "checkpoint:" in result.output and "is the project directory" in result.output
    assert (root / "project.yml").is_file() and (root / "models" / "a.sql").is_file()
    assert (root / ".git" / "HEAD").is_file()


@pytest.mark.parametrize("command", ["stream", "status", "snapshot", "maintain", "test", "docs"])
def test_every_command_that_loads_the_project_refuses(tmp_path, command) -> None:
    root = write_project(tmp_path / "proj", MODEL, project_yml=_yml(warehouse="."))
    _refused(root, "is the project directory", command)


def test_a_table_over_a_home_directory_is_refused(tmp_path, monkeypatch) -> None:
    """``warehouse: /`` with a model named ``home`` would have removed ``/home``; a warehouse
    whose model folder would be $HOME contains $HOME, refused as such."""
    root = write_project(tmp_path / "proj", {"models/home.sql": MODEL["models/a.sql"]},
                         project_yml=_yml(warehouse="/"))
    _refused(root, "warehouse: / is the filesystem root")
    fake = tmp_path / "users"
    (fake / "home").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(fake / "home"))
    write_project(root, {}, project_yml=_yml(warehouse=str(fake)))
    _refused(root, f"warehouse: {fake} is a folder containing the home directory {fake}/home")


@pytest.mark.parametrize("existing, refused", [
    ({"a/notes.txt": "mine"}, "holds files that are not a Delta table's (notes.txt)"),
    ({"a": "a file"}, "is a file"),
    ({"a/_delta_log/00000000000000000000.json": "{}"}, None),
    # a first write that crashed before its Delta commit: data files only; the replay heals it
    ({"a/part-00000-x.snappy.parquet": "", "a/.part-00000-x.snappy.parquet.crc": "",
      "a/batches/app/0/part-0.parquet": "", "a/country=DE/part-1.parquet": ""}, None),
])
def test_a_table_folder_holding_something_else_is_never_dropped(tmp_path, existing,
                                                                 refused) -> None:
    """The sinks own what a table folder may hold; a --full-refresh checks every folder it
    would delete before it deletes anything (before the JVM starts, too)."""
    from runner.sinks.tables import not_a_table

    root = write_project(tmp_path / "proj", MODEL, project_yml=_yml(warehouse="../data"))
    for rel, text in existing.items():
        path = tmp_path / "data" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert not_a_table(tmp_path / "data" / "a") == refused
    if refused is not None:
        (root / "cp").mkdir()
        (root / "cp" / "metadata").write_text('{"id": "q"}\n')
        result = _run(root, "stream", "--available-now", "--full-refresh")
        assert result.exit_code == 2, result.output
        assert f"model a would be dropped at {tmp_path / 'data' / 'a'}, which {refused}" \
            in result.output
        assert (root / "cp" / "metadata").is_file()  # nothing reset, nothing deleted
        assert all((tmp_path / "data" / rel).exists() for rel in existing)


@pytest.mark.parametrize("uri", ["dbfs:/mnt/wh", "hdfs://nn:8020/wh", "ftp://host/wh"])
def test_other_uris_are_refused_not_joined_onto_the_project(tmp_path, uri) -> None:
    """Before the fix ``hdfs://nn/wh`` silently became ``<project>/hdfs:/nn/wh``."""
    root = write_project(tmp_path / "proj", MODEL, project_yml=_yml(warehouse=uri))
    scheme = uri.split(":", 1)[0]
    _refused(root, f"warehouse: '{uri}' is a {scheme}: URI; the runner's storage layer speaks")
    assert not (root / f"{scheme}:").exists() and not (root / "target").exists()
    for key in ("checkpoint", "source"):
        write_project(root, {}, project_yml=_yml(**{key: uri}))
        _refused(root, f"'{uri}' is a {scheme}: URI")


@pytest.mark.parametrize("uri", ["az://container/wh", "azure://container/wh"])
def test_azure_object_store_spelling_needs_an_account(tmp_path, uri, monkeypatch) -> None:
    """``az://`` is object_store's spelling; Spark's ABFS connector names the account in the
    URI, so without one the streaming query could not start: refused at load, naming both
    ways out."""
    for name in ("AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_USE_EMULATOR",
                 "AZURE_STORAGE_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    root = write_project(tmp_path / "proj", MODEL, project_yml=_yml(warehouse=uri))
    result = _run(root, "compile")
    assert result.exit_code == 2, result.output
    assert "no account is set" in result.output
    assert "AZURE_STORAGE_ACCOUNT_NAME" in result.output
    assert "abfss://container@<account>.dfs.core.windows.net/wh" in result.output
    write_project(root, {}, project_yml=_yml(warehouse="az:///wh"))
    _refused(root, "names no container")


def test_azure_object_store_spelling_is_loaded_as_abfs(tmp_path, monkeypatch) -> None:
    """With the account from the environment or project.yml's ``storage:``, every ``az://``
    location (checkpoint, warehouse, files source, a source table's path) is the ABFS URI
    Spark, delta-rs and the runner's own files all take."""
    monkeypatch.delenv("AZURE_STORAGE_USE_EMULATOR", raising=False)
    monkeypatch.delenv("AZURE_STORAGE_ENDPOINT", raising=False)
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_NAME", "fromenv")
    yml = _yml(warehouse="az://data/wh", checkpoint="azure://data/cp", source="az://in/events")
    dim = {"models/src.yml": "sources:\n  - name: ref\n    tables:\n      - name: dim\n"
                             "        path: az://dims/dim\n"}
    root = write_project(tmp_path / "proj", {**MODEL, **dim}, project_yml=yml)
    assert _run(root, "compile").exit_code == 0
    project = load_project(root)
    assert str(project.warehouse) == "abfss://data@fromenv.dfs.core.windows.net/wh"
    assert str(project.checkpoint) == "abfss://data@fromenv.dfs.core.windows.net/cp"
    assert str(project.resolve(project.config.source.path)) == (
        "abfss://in@fromenv.dfs.core.windows.net/events")
    assert [t.location for t in project.sources] == ["abfss://dims@fromenv.dfs.core.windows.net/dim"]
    # project.yml's storage: wins over the environment
    write_project(root, {}, project_yml=yml + "storage:\n  azure_storage_account_name: acct\n")
    project = load_project(root)
    assert str(project.warehouse) == "abfss://data@acct.dfs.core.windows.net/wh"
    assert project.sources[0].location == "abfss://dims@acct.dfs.core.windows.net/dim"
    # the path rules see one location, whichever spelling: overlap is still refused
    write_project(root, {}, project_yml=_yml(
        warehouse="az://data/wh", checkpoint="abfss://data@fromenv.dfs.core.windows.net/wh/cp",
        source="az://in/events"))
    _refused(root, "lies inside")


@pytest.mark.parametrize("uri", ["s3://bucket/wh", "s3a://bucket/wh", "abfss://c@acct.dfs/wh",
                                 "gs://bucket/wh"])
def test_object_store_uris_are_locations_not_project_paths(tmp_path, uri) -> None:
    """An object-store URI is a location of its own (compile needs no store), never joined
    onto the project directory; a bucket's root is refused as the checkpoint."""
    root = write_project(tmp_path / "proj", MODEL, project_yml=_yml(warehouse=uri))
    assert _run(root, "compile").exit_code == 0
    assert not any(p.name.endswith(":") for p in root.iterdir())
    bucket_root = uri.rsplit("/", 1)[0]
    write_project(root, {}, project_yml=_yml(checkpoint=bucket_root))
    _refused(root, "is the root of bucket")


def test_file_uris_are_local_paths(tmp_path) -> None:
    root = write_project(tmp_path / "proj", MODEL, project_yml=_yml(
        warehouse=f"file://{tmp_path}/data", checkpoint=f"file:{tmp_path}/state",
        source=f"file://localhost{tmp_path}/in%20box"))
    assert _run(root, "compile").exit_code == 0
    project = load_project(root)
    assert project.warehouse == tmp_path / "data"
    assert project.checkpoint == tmp_path / "state"
    assert project.resolve(project.config.source.path) == tmp_path / "in box"  # type: ignore
    write_project(root, {}, project_yml=_yml(warehouse="file://otherhost/data"))
    _refused(root, "is not a local file: URI")
    write_project(root, {}, project_yml=_yml(warehouse=f"file://{root}"))
    _refused(root, "is the project directory")


def test_the_default_layout_and_a_kafka_project_pass(tmp_path) -> None:
    """The warehouse and checkpoint may live inside the project (``_warehouse`` does)."""
    root = write_project(tmp_path / "proj", MODEL, project_yml=_yml(
        warehouse="_warehouse", checkpoint="_checkpoint", source="data/incoming"))
    assert _run(root, "compile").exit_code == 0
    kafka = write_project(tmp_path / "k", MODEL, project_yml=_yml(base=KAFKA, warehouse="."))
    _refused(kafka, "warehouse: ")
    write_project(kafka, {}, project_yml=KAFKA)
    assert _run(kafka, "compile").exit_code == 0


@pytest.mark.parametrize(("checkpoint", "warehouse", "refused"), [
    ("s3://b/p/cp", "s3://b/p/cp/wh", "checkpoint: s3://b/p/cp contains warehouse s3://b/p/cp/wh"),
    ("s3a://b/p", "s3://b/p", "checkpoint: s3a://b/p is warehouse s3://b/p"),
    ("s3://b/p/cp", "s3://b/p/wh", None),
    ("s3://b/p", "s3://other/p", None),
])
def test_object_store_locations_may_not_overlap(tmp_path, checkpoint, warehouse,
                                                refused) -> None:
    """The path-safety rules hold for URIs: bucket + prefix, ``s3a://`` the same as ``s3://``."""
    root = write_project(tmp_path / "proj", MODEL,
                         project_yml=_yml(warehouse=warehouse, checkpoint=checkpoint))
    if refused is None:
        assert _run(root, "compile").exit_code == 0
    else:
        _refused(root, refused)


def test_an_unknown_storage_option_is_named_not_taken_for_a_missing_account(tmp_path) -> None:
    yml = _yml(warehouse="az://data/wh") + "storage:\n  acount_name: acct\n"
    root = write_project(tmp_path / "proj", MODEL, project_yml=yml)
    result = _run(root, "compile")
    assert result.exit_code == 2, result.output
    assert "unknown option 'acount_name'" in result.output
    assert "no account is set" not in result.output


@pytest.mark.parametrize("account", ["evil.example.com/x", "a@b", "UPPER", "ab"])
def test_an_azure_account_that_is_no_name_is_refused(tmp_path, account, monkeypatch) -> None:
    """The account becomes the ABFS URI's host part: a pull request's ``storage:`` may not
    put a host, a path or credentials there."""
    monkeypatch.delenv("AZURE_STORAGE_ACCOUNT_NAME", raising=False)
    yml = _yml(warehouse="az://data/wh") + f"storage:\n  azure_storage_account_name: '{account}'\n"
    root = write_project(tmp_path / "proj", MODEL, project_yml=yml)
    _refused(root, "is not an Azure storage account name")
