"""The permit a process other than the lock's holder checks on its behalf (over Spark Connect:
the server's Python worker, which commits the batch; runner.checkpoint.lock.RemotePermit).

It must pass exactly while the client holds the checkpoint, through the storage layer alone:
an ``flock`` on local disk (refused once another runner took it, or once its holder died), and
a lease in an object store (moto on loopback: refused once taken, or once not renewed within
the commit window). It pickles (it travels with the batch function).
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runner.checkpoint.lease import ObjectLease
from runner.checkpoint.lock import CheckpointLock, RemotePermit, checkpoint_lock, remote_permit
from runner.errors import LeaseLostError
from runner.storage.objects import object_path
from runner.storage.ops import read_versioned, write_if

REPO = Path(__file__).resolve().parents[2]

#: Takes the checkpoint's flock, prints the line it wrote, holds it until killed.
HOLDER = """
import sys, time
from pathlib import Path
from runner.checkpoint.lock import CheckpointLock
lock = CheckpointLock(Path(sys.argv[1]))
lock.acquire()
print(lock.line, flush=True)
time.sleep(600)
"""


def test_an_flock_permit_passes_while_its_holder_lives_then_is_refused(tmp_path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)], cwd=REPO,
                              stdout=subprocess.PIPE, text=True)
    try:
        line = holder.stdout.readline().strip() if holder.stdout else ""
        permit = RemotePermit(tmp_path / "runner.lock", line, None)
        pickle.loads(pickle.dumps(permit)).check()  # the holder lives: commits go on
    finally:
        holder.kill()
        holder.wait()
    with pytest.raises(LeaseLostError, match=r"no longer holds .* \(it ended or was killed\)"):
        permit.check()  # the kernel dropped its flock: its query's worker stops
    with CheckpointLock(tmp_path) as taken:  # the next runner took it
        with pytest.raises(LeaseLostError, match=f"held by {taken.line} now"):
            permit.check()
        remote_permit(taken).check()
    (tmp_path / "runner.lock").unlink()
    with pytest.raises(LeaseLostError, match="is gone"):
        permit.check()


@pytest.fixture
def s3_env(s3_bucket, monkeypatch):
    for key, value in s3_bucket.env.items():
        monkeypatch.setenv(key, value)
    return s3_bucket


def test_a_lease_permit_is_refused_once_taken_or_not_renewed_in_time(s3_env,
                                                                    monkeypatch) -> None:
    ttl = 3.0
    monkeypatch.setenv("RUNNER_LEASE_SECONDS", str(ttl))
    lease = checkpoint_lock(object_path(f"{s3_env.uri}/cp"))
    assert isinstance(lease, ObjectLease)
    lease.acquire()
    try:
        permit = pickle.loads(pickle.dumps(remote_permit(lease)))
        started = time.monotonic()
        while time.monotonic() - started < ttl / 2:  # a renewal (at ttl/3) keeps it passing
            permit.check()
            time.sleep(0.25)
        lease._stop.set()  # the client stops renewing (ended, killed, cut off)
        lease._thread.join()  # type: ignore[union-attr]
        doc = json.loads(read_versioned(lease.path)[0])  # type: ignore[index]
        renewed = doc["expires"] - ttl
        while time.time() - renewed < ttl * 2 / 3 - 0.2:
            permit.check()
            time.sleep(0.05)
        time.sleep(0.4)
        with pytest.raises(LeaseLostError, match="was last renewed"):
            permit.check()  # before the lease's expiry: nobody could have taken it yet
        assert time.time() < doc["expires"]

        data, version = read_versioned(lease.path)  # type: ignore[misc]
        theirs = dict(json.loads(data), token="another", expires=time.time() + ttl,
                      holder="pid 1 on elsewhere since now")
        assert write_if(lease.path, json.dumps(theirs), version, fenced=False)
        with pytest.raises(LeaseLostError, match="was taken by pid 1 on elsewhere"):
            permit.check()
    finally:
        lease.release()
