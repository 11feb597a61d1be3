"""The checkpoint's lease in an object store (moto on loopback): who holds it, exactly, and
that a holder whose lease is lost, or not renewed in time, commits nothing more.

- A holder in another PID namespace (a container with the same host name) is never provably
  gone: the lease waits for its expiry (``unshare``; skipped where it cannot run).
- A lease overwritten by another runner, or whose store stops answering, makes the next
  commit (a Delta commit through delta-rs, a ledger entry, the registry) raise
  :class:`LeaseLostError` before the lease's expiry, and nothing is committed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from runner.checkpoint.holders import identity, provably_gone
from runner.checkpoint.lease import ObjectLease, read_lease
from runner.checkpoint.ledger import Ledger, LedgerEntry
from runner.checkpoint.lock import checkpoint_lock
from runner.checkpoint.registry import Entry, load_registry, save_registry
from runner.errors import LeaseLostError
from runner.sinks.base import SinkSpec
from runner.sinks.rs import RsWriter
from runner.storage.objects import ObjectPath, object_path
from runner.storage.ops import delta_options, read_versioned, write_if
from tests.support.object_store import MotoServer, start_server

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def s3_env(s3_bucket, monkeypatch):
    for key, value in s3_bucket.env.items():
        monkeypatch.setenv(key, value)
    return s3_bucket


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(done.stdout)


def test_a_holder_is_provably_gone_only_in_this_boot_and_pid_namespace() -> None:
    me = identity()
    if me["boot"] is None or me["pid_ns"] is None:
        pytest.skip("no /proc boot id or PID namespace here: nothing is provable")
    dead = dict(me, pid=_dead_pid())
    assert provably_gone(dead)  # this host, boot and namespace, and no such process
    assert not provably_gone(dict(dead, pid_ns="pid:[1]"))  # another container
    assert not provably_gone(dict(dead, boot="another-boot"))  # another machine, or rebooted
    assert not provably_gone(dict(dead, host="elsewhere"))
    assert not provably_gone({"host": me["host"], "pid": dead["pid"]})  # an older runner's
    assert not provably_gone(dict(me))  # this very process: alive


def _unshare_or_skip() -> str:
    binary = shutil.which("unshare")
    if binary is None:
        pytest.skip("no unshare (util-linux) to start a process in its own PID namespace")
    probe = subprocess.run([binary, "--pid", "--fork", "--mount-proc", "true"],
                           capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"unshare --pid --fork --mount-proc cannot run here (needs root or "
                    f"CAP_SYS_ADMIN): {probe.stderr.strip()}")
    return binary


#: Takes the lease, says so, and holds it until its stdin closes; then dies without releasing.
HOLDER = """
import os, sys
from runner.checkpoint.lock import checkpoint_lock
from runner.storage.ops import as_location
checkpoint_lock(as_location(sys.argv[1])).acquire()
print("held", flush=True)
sys.stdin.read()
os._exit(0)
"""

#: Reports whether the holder's pid is alive in its own namespace, then tries to take it.
TAKER = """
import json, os, sys, time
from runner.checkpoint.holders import pid_alive
from runner.checkpoint.lease import read_lease
from runner.checkpoint.lock import checkpoint_lock
from runner.errors import CheckpointBusyError
from runner.storage.ops import as_location
cp = as_location(sys.argv[1])
doc = read_lease(cp / "runner.lock")[0]
out = {"holder_alive_here": pid_alive(doc["pid"]), "expires": doc["expires"]}
started = time.time()
try:
    checkpoint_lock(cp).acquire(wait=float(sys.argv[2]))
    out["taken_at"], out["waited"] = time.time(), time.time() - started
except CheckpointBusyError as e:
    out["busy"] = str(e)
print(json.dumps(out))
"""


def test_a_holder_in_another_pid_namespace_keeps_its_lease_until_expiry(s3_env,
                                                                        monkeypatch) -> None:
    """Two containers with one host name: the second does not take the lease while the
    first lives (its pid names no process in the second's namespace, which the old check
    took for a dead holder), and after the first dies, only the lease's expiry frees it."""
    unshare = _unshare_or_skip()
    ttl = 4.0
    monkeypatch.setenv("RUNNER_LEASE_SECONDS", str(ttl))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    checkpoint = f"{s3_env.uri}/cp"
    # The holder's pid in its namespace is past 300 (sh, pid 1 there, runs 300 processes
    # first), so in the taker's namespace, where the taker is pid 1 and its threads take the
    # next ids (kill(tid, 0) finds a thread too), no process has it.
    holder = subprocess.Popen(
        [unshare, "--pid", "--fork", "--mount-proc", "sh", "-c",
         'i=0; while [ $i -lt 300 ]; do /bin/true; i=$((i+1)); done; "$0" -c "$1" "$2"; :',
         sys.executable, HOLDER, checkpoint],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        doc = read_lease(object_path(checkpoint) / "runner.lock")[0]  # type: ignore[index]
        assert doc["host"] == identity()["host"] and doc["boot"] == identity()["boot"]
        assert doc["pid_ns"] and doc["pid_ns"] != identity()["pid_ns"] and doc["pid"] > 300

        def take(wait: float) -> dict:
            done = subprocess.run([unshare, "--pid", "--fork", "--mount-proc", sys.executable,
                                   "-c", TAKER, checkpoint, str(wait)],
                                  capture_output=True, text=True, env=env, timeout=60)
            assert done.returncode == 0, done.stderr
            return json.loads(done.stdout)

        alive = take(wait=2 * ttl)  # longer than the lease: renewals keep it the holder's
        assert alive["holder_alive_here"] is False  # what made the old check take it
        assert "busy" in alive and "in use by pid" in alive["busy"], alive
    finally:
        assert holder.stdin is not None
        holder.stdin.close()  # the holder dies holding the lease
        holder.wait(timeout=30)
    assert holder.returncode == 0
    gone = take(wait=3 * ttl)
    assert "taken_at" in gone, gone
    assert gone["taken_at"] >= gone["expires"]  # not at once: only when it expired
    print(f"\nthe taker, started after the holder died, waited {gone['waited']:.2f} s "
          f"for its lease to expire (lease {ttl:.0f} s)")


def _rows(n: int) -> pa.Table:
    return pa.table({"x": pa.array(range(n), pa.int64())})


def _commit_everything(checkpoint: ObjectPath, writer: RsWriter, spec: SinkSpec,
                       batch_id: int) -> None:
    """What the stream commits for one batch: the table, the ledger entry, the registry."""
    writer.write(spec, _rows(3), batch_id)
    Ledger(checkpoint).record(LedgerEntry(batch_id, {"m": batch_id}, query_id="q"))
    save_registry(checkpoint, {"m": Entry("live", since=batch_id)})


def _refused_at(lease: ObjectLease, *, within: float) -> float:
    """Wall time at which ``lease``'s permit first refuses (polled every 50 ms)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            lease.check()
        except LeaseLostError:
            return time.time()
        time.sleep(0.05)
    raise AssertionError(f"the permit still passed {within} s later")


def _nothing_more_commits(checkpoint: ObjectPath, writer: RsWriter, spec: SinkSpec) -> None:
    with pytest.raises(LeaseLostError, match="stopped writing"):
        writer.write(spec, _rows(5), 1)
    with pytest.raises(LeaseLostError):
        Ledger(checkpoint).record(LedgerEntry(1, {"m": 1}, query_id="q"))
    table = DeltaTable(spec.path, storage_options=delta_options(spec.path))
    assert table.version() == 0 and table.transaction_version(spec.app_id) == 0


def test_a_lease_taken_by_another_runner_stops_the_next_commit(s3_env, monkeypatch) -> None:
    ttl = 3.0
    monkeypatch.setenv("RUNNER_LEASE_SECONDS", str(ttl))
    checkpoint = object_path(f"{s3_env.uri}/cp")
    lease = checkpoint_lock(checkpoint)
    assert isinstance(lease, ObjectLease)
    lease.acquire()
    writer = RsWriter()
    writer.permit = lease.check
    spec = SinkSpec(model="m", path=f"{s3_env.uri}/wh/m", app_id="p.m.q")
    try:
        _commit_everything(checkpoint, writer, spec, 0)  # held: all of it commits
        while True:  # another runner overwrites the lease (conditionally: ours is its base)
            data, version = read_versioned(lease.path)  # type: ignore[misc]
            ours = json.loads(data)
            theirs = dict(ours, token="another", pid=1, holder="pid 1 on elsewhere since now")
            if write_if(lease.path, json.dumps(theirs), version, fenced=False):
                break
        taken = time.time()
        refused = _refused_at(lease, within=ttl)
        assert refused < ours["expires"]  # before our own lease could have expired
        with pytest.raises(LeaseLostError, match="was taken by pid 1 on elsewhere"):
            save_registry(checkpoint, {"m": Entry("live", since=1)})
        _nothing_more_commits(checkpoint, writer, spec)
        assert load_registry(checkpoint) == {"m": Entry("live", since=0)}
        assert Ledger(checkpoint).batch_ids() == [0]
        print(f"\nrefused {refused - taken:.2f} s after the takeover, "
              f"{ours['expires'] - refused:.2f} s before our expiry (lease {ttl:.0f} s)")
    finally:
        lease.release()
    assert read_lease(lease.path)[0]["token"] == "another"  # type: ignore[index]


def test_a_store_that_stops_answering_stops_commits_before_the_lease_expires(
        s3_env, tmp_path, monkeypatch) -> None:
    """The checkpoint's store (its own server) stops; the tables' store still answers. The
    renewals fail, and the commits to the tables stop before the lease could expire, i.e.
    before any other runner could take the checkpoint."""
    ttl = 6.0
    monkeypatch.setenv("RUNNER_LEASE_SECONDS", str(ttl))
    server = start_server(lambda: MotoServer(log_dir=tmp_path))
    try:
        bucket = server.bucket()
        checkpoint = object_path(f"{bucket.uri}/cp", {"endpoint": server.endpoint})
        lease = ObjectLease(checkpoint / "runner.lock")
        lease.acquire()
        writer = RsWriter()
        writer.permit = lease.check
        spec = SinkSpec(model="m", path=f"{s3_env.uri}/wh/m", app_id="p.m.q")
        _commit_everything(checkpoint, writer, spec, 0)
        first = read_lease(lease.path)[0]["expires"]  # type: ignore[index]
        while (last := read_lease(lease.path)[0]["expires"]) == first:  # type: ignore[index]
            time.sleep(0.05)  # a renewal has just been written: stop the store now
        server.stop()
        stopped = time.time()
        refused = _refused_at(lease, within=ttl)
        assert refused < last  # the last renewal's expiry: nobody could take it before
        _nothing_more_commits(checkpoint, writer, spec)
        print(f"\nrefused {refused - stopped:.2f} s after the store stopped, "
              f"{last - refused:.2f} s before the lease's expiry (lease {ttl:.0f} s)")
    finally:
        server.stop()
        lease.release()
