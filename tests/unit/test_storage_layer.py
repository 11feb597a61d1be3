"""The storage layer on local disk and on an S3 API server (moto, loopback): the same calls,
the same results; the checkpoint's files and its lease on both."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from runner.checkpoint.lease import ObjectLease
from runner.checkpoint.ledger import Ledger, LedgerEntry
from runner.checkpoint.lock import checkpoint_lock, lock_holder
from runner.checkpoint.query_id import reset_checkpoint, write_query_id
from runner.checkpoint.registry import Entry, load_registry, save_registry
from runner.errors import CheckpointBusyError, ExecutionError
from runner.storage.objects import object_path
from runner.storage.ops import (
    file_sizes,
    names,
    read_range,
    read_versioned,
    rmtree,
    write_atomic,
    write_if,
    write_once,
)


@pytest.fixture
def s3_env(s3_bucket, monkeypatch):
    for key, value in s3_bucket.env.items():
        monkeypatch.setenv(key, value)
    return s3_bucket


@pytest.fixture(params=["local", "s3", "azure"])
def root(request, tmp_path, monkeypatch):
    """A fresh folder: on local disk, or a prefix in a new S3 bucket or Azure container."""
    if request.param == "local":
        return tmp_path / "loc"
    bucket = request.getfixturevalue({"s3": "s3_bucket", "azure": "azure_container"}[
        request.param])
    for key, value in bucket.env.items():
        monkeypatch.setenv(key, value)
    return object_path(f"{bucket.uri}/loc")


def test_reads_and_writes_agree_on_both(root) -> None:
    assert not root.exists() and names(root) == []
    root.mkdir(parents=True, exist_ok=True)
    write_atomic(root / "a.json", '{"x": 1}')
    write_atomic(root / "sub" / "b.json", b"bytes")
    assert json.loads((root / "a.json").read_text()) == {"x": 1}
    assert names(root) == ["a.json", "sub"] and root.is_dir() and (root / "a.json").is_file()
    assert (root / "a.json").stat().st_size == 8
    assert read_range(root / "sub" / "b.json", 1, 3) == b"yt"
    write_atomic(root / "a.json", "{}")  # replaced whole
    assert (root / "a.json").read_text() == "{}"
    assert write_once(root / "once", "first") and not write_once(root / "once", "second")
    assert (root / "once").read_text() == "first"
    with pytest.raises(FileNotFoundError):
        (root / "missing").read_text()
    (root / "once").unlink()
    (root / "once").unlink(missing_ok=True)
    assert not (root / "once").exists()
    rmtree(root / "sub")
    assert names(root) == ["a.json"]
    rmtree(root)
    assert not root.exists()


def test_compare_and_swap_lets_one_writer_win(root) -> None:
    root.mkdir(parents=True, exist_ok=True)
    doc = root / "lease.json"
    assert write_if(doc, "a", None) and not write_if(doc, "b", None)
    data, version = read_versioned(doc)  # type: ignore[misc]
    assert data == b"a"
    assert write_if(doc, "c", version)  # the first writer on this version wins
    assert not write_if(doc, "d", version)  # the second saw a stale version
    assert doc.read_text() == "c" and read_versioned(root / "absent") is None


def test_checkpoint_files_round_trip(root) -> None:
    """Registry, ledger, query id and the reset of --full-refresh, through one layer."""
    save_registry(root, {"a": Entry("live", since=3)})
    assert load_registry(root) == {"a": Entry("live", since=3)}
    write_query_id(root, "q-1")
    ledger = Ledger(root)
    entry = LedgerEntry(4, {"a": 2}, query_id="q-1")
    assert ledger.record(entry) and not ledger.record(LedgerEntry(4, {"a": 9}))
    assert ledger.batch_ids() == [4] and ledger.get(4) == entry
    write_atomic(root / "runner.lock", "kept")
    reset_checkpoint(root)
    assert names(root) == ["runner.lock"]


def test_a_tables_log_size_leaves_its_sub_folders_out(root) -> None:
    """delta-spark 4.4 makes ``_delta_log/_staged_commits/``: in a bucket a prefix, which a
    HEAD finds absent (``runner status`` on such a table failed with FileNotFoundError)."""
    from runner.sinks.maintenance import log_size

    log = root / "t" / "_delta_log"
    write_atomic(log / "00000000000000000000.json", b"{}\n{}\n")
    write_atomic(log / "_staged_commits" / "00000000000000000001.uuid.json", b"{}")
    assert file_sizes(log) == {"00000000000000000000.json": 6}
    assert log_size(root / "t") == (1, 6)
    assert log_size(root / "absent") == (0, 0)


def test_a_second_holder_is_refused_and_named(s3_env, monkeypatch) -> None:
    monkeypatch.setenv("RUNNER_LEASE_SECONDS", "30")
    checkpoint = object_path(f"{s3_env.uri}/cp")
    first = checkpoint_lock(checkpoint)
    assert isinstance(first, ObjectLease)
    first.acquire()
    try:
        with pytest.raises(CheckpointBusyError, match=f"in use by pid {os.getpid()} on "):
            checkpoint_lock(checkpoint).acquire(wait=0.5)
        holder = lock_holder(checkpoint)
        assert holder is not None and holder.held and holder.pid == os.getpid()
        first.check()  # still ours
    finally:
        first.release()
    assert lock_holder(checkpoint) is None  # released: the lease is gone
    with checkpoint_lock(checkpoint):  # and can be taken again
        pass


def test_an_expired_lease_is_taken_over_and_its_holder_stops(s3_env, monkeypatch) -> None:
    """A holder that stopped renewing (paused, cut off) loses the lease after its time to
    live; its own check fails before that, so it never writes beside the new holder."""
    monkeypatch.setenv("RUNNER_LEASE_SECONDS", "1.5")
    checkpoint = object_path(f"{s3_env.uri}/cp")
    stale = ObjectLease(checkpoint / "runner.lock")
    stale.acquire()
    stale._stop.set()  # its renewals stop, as when the process is frozen or partitioned
    time.sleep(1.2)
    with pytest.raises(ExecutionError, match="last renewed"):
        stale.check()  # 2/3 of the time to live passed: it stops writing
    newer = ObjectLease(checkpoint / "runner.lock")
    newer.acquire(wait=3)  # taken once expired
    try:
        stale._stop.clear()
        stale._renew_once()
        with pytest.raises(ExecutionError, match="was taken by pid"):
            stale.check()
        time.sleep(1.0)
        newer.check()  # kept alive by its renewals
    finally:
        newer.release()
        stale.release()


def test_a_dead_holder_on_this_host_is_taken_over_at_once(s3_env, monkeypatch) -> None:
    monkeypatch.setenv("RUNNER_LEASE_SECONDS", "300")
    checkpoint = f"{s3_env.uri}/cp"
    code = ("import os; from runner.checkpoint.lock import checkpoint_lock; "
            "from runner.storage.ops import as_location; "
            f"checkpoint_lock(as_location({checkpoint!r})).acquire(); os._exit(9)")
    died = subprocess.run([sys.executable, "-c", code], env={**os.environ}, timeout=60)
    assert died.returncode == 9  # killed holding a 300 s lease
    holder = lock_holder(object_path(checkpoint))
    assert holder is not None and holder.held is False
    started = time.monotonic()
    with checkpoint_lock(object_path(checkpoint)):
        assert time.monotonic() - started < 5


def test_replay_guard_sees_a_file_gone_or_rewritten_in_a_bucket(s3_env) -> None:
    """What a files batch read is recorded by size, time and a sample of each end; in a
    bucket as on disk, a replay finds the file gone, truncated or rewritten."""
    from runner.sources.same_input import file_changes, stat_files

    base = f"{s3_env.uri}/incoming"
    write_atomic(object_path(f"{base}/a.json"), b"x" * 10_000)
    write_atomic(object_path(f"{base}/b.json"), b"y" * 10_000)
    write_atomic(object_path(f"{base}/c.json"), b"z" * 10_000)
    uris = [f"{base}/{n}.json".replace("s3://", "s3a://") for n in "abc"]  # as Spark logs them
    first = stat_files(uris)
    assert all(first[u] is not None and first[u].size == 10_000 for u in uris)
    object_path(f"{base}/a.json").unlink()
    write_atomic(object_path(f"{base}/b.json"), b"y" * 9_000)
    write_atomic(object_path(f"{base}/c.json"), b"z" * 9_999 + b"!")
    changes = file_changes(first, stat_files(uris))
    assert [c.split(" ")[0].rsplit("/", 1)[1] for c in changes] == ["a.json", "b.json",
                                                                     "c.json"], changes
    assert "gone" in changes[0] and "truncated" in changes[1] and "rewritten" in changes[2]


def test_a_rebuild_sees_input_gone_from_a_bucket_or_a_store_it_cannot_reach(s3_env,
                                                                            monkeypatch) -> None:
    from runner.runtime.start.history_check import missing_files
    from runner.sources.history import PastBatch

    write_atomic(object_path(f"{s3_env.uri}/in/here.json"), "{}\n")
    here, gone = f"{s3_env.uri}/in/here.json", f"{s3_env.uri}/in/gone.json"
    assert missing_files([PastBatch(0, 0, (here, gone))], since=0) == [(0, gone)]
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    elsewhere = "s3://another-bucket/in/x.json"  # a store opened with these settings
    [(batch, why)] = missing_files([PastBatch(3, 3, (elsewhere,))], since=0)
    assert batch == 3 and why.startswith(f"{elsewhere} (cannot be checked: ")


def test_an_aws_named_profile_gives_the_credentials(s3_bucket, moto_server, tmp_path,
                                                   monkeypatch) -> None:
    """``AWS_PROFILE`` alone (no keys in the environment): the runner's own files are read and
    written with the profile's credentials, as delta-rs and Spark take them; an unknown profile
    is an error naming it."""
    import deltalake
    import pyarrow as pa

    other = moto_server.bucket().uri  # a store is opened once per bucket, with the environment
    (tmp_path / "credentials").write_text(
        "[runner-test]\naws_access_key_id = testing\naws_secret_access_key = testing\n")
    (tmp_path / "config").write_text("[profile runner-test]\nregion = us-east-1\n")
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(key, raising=False)
    for key, value in s3_bucket.env.items():
        if key not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            monkeypatch.setenv(key, value)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance role to fall back on
    monkeypatch.setenv("AWS_PROFILE", "runner-test")
    target = object_path(f"{s3_bucket.uri}/profiled/runner.json")
    write_atomic(target, b'{"ok": 1}')
    assert json.loads(target.read_text()) == {"ok": 1}
    table = f"{s3_bucket.uri}/profiled/table"
    from runner.storage.ops import delta_options

    options = delta_options(table)  # what the sinks give delta-rs: the profile's keys
    assert options is not None and options["aws_access_key_id"] == "testing"
    assert "aws_profile" not in options
    deltalake.write_deltalake(table, pa.table({"n": [1, 2]}), storage_options=options)
    assert deltalake.DeltaTable(table, storage_options=options).to_pyarrow_table().num_rows == 2
    monkeypatch.setenv("AWS_PROFILE", "no-such-profile")
    with pytest.raises(OSError, match="no-such-profile"):
        write_atomic(object_path(f"{other}/runner.json"), b"{}")
