"""A bucket for a bench: moto's S3 server on a loopback port (as the tests' ``moto_server``
fixture starts it: :class:`tests.support.object_store.MotoServer`), and what its request log
says a run asked of it.

moto is an in-memory server on loopback: a bench that puts its locations there measures the
runner's request pattern (how many round trips, of which kind), not a real S3's latency.

moto's server (werkzeug) logs one line per HTTP request::

    127.0.0.1 - - [26/Nov/2026 20:42:10] "GET /b?delimiter=/&list-type=2&prefix=a/ HTTP/1.1" 200 -

(with terminal colour escapes around some of them: 4xx answers, range GETs, DELETEs).

:class:`RequestLog` counts those lines between two points of a run (byte offsets of the log),
by kind: ``GET`` (an object), ``LIST`` (a GET of the bucket itself: ``list-type``, ``prefix``,
``uploads``...), ``HEAD``, ``PUT``, ``POST`` (multi-object delete, multipart), ``DELETE``;
and the answers that were conditional-write refusals (412) or misses (404).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

#: A werkzeug access-log line: the method, the target, the status.
REQUEST_LINE = re.compile(r'"(?P<method>[A-Z]+) (?P<target>\S+) HTTP/[\d.]+" (?P<status>\d{3})')
#: werkzeug colours some lines (4xx, 206, DELETE's 204) with terminal escapes: removed first.
ANSI = re.compile(r"\x1b\[[0-9;]*m")
KINDS = ("GET", "LIST", "HEAD", "PUT", "POST", "DELETE")


def request_kind(method: str, target: str) -> str:
    """``GET`` of an object, ``LIST`` (a GET of a bucket, i.e. a listing), else the method."""
    path = urlsplit(target).path.strip("/")
    if method == "GET" and "/" not in path:
        return "LIST"
    return method


def count_requests(lines: list[str]) -> dict[str, int]:
    """Requests by kind (:data:`KINDS`), ``total``, and ``status_412`` / ``status_404``; the
    moto-api probes of the server's own start-up are not counted."""
    counts: Counter[str] = Counter()
    for line in lines:
        m = REQUEST_LINE.search(ANSI.sub("", line))
        if m is None or m["target"].startswith("/moto-api"):
            continue
        counts[request_kind(m["method"], m["target"])] += 1
        counts["total"] += 1
        if m["status"] in ("404", "412"):
            counts[f"status_{m['status']}"] += 1
    return {k: counts.get(k, 0) for k in (*KINDS, "total", "status_412", "status_404")}


@dataclass
class RequestLog:
    """The request log of one moto server; :meth:`mark` then :meth:`since` counts a run."""

    path: Path

    def mark(self) -> int:
        """The log's current size: where the next run's requests start."""
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    def since(self, offset: int) -> dict[str, int]:
        """Requests logged after ``offset`` (see :func:`count_requests`)."""
        return self.between(offset, None)

    def between(self, start: int, end: int | None) -> dict[str, int]:
        """Requests logged from byte ``start`` up to byte ``end`` (None: the end); a line
        cut at either end is counted where it starts."""
        with open(self.path, "rb") as f:
            f.seek(start)
            data = f.read() if end is None else f.read(max(0, end - start))
        return count_requests(data.decode("utf-8", errors="replace").splitlines())


class MotoBucket:
    """moto's S3 server with one empty bucket; its variables exported to this process (every
    runner process the bench starts inherits them). Use as a context manager."""

    def __init__(self, log_dir: Path, name: str = "bench") -> None:
        self.log_dir, self.name = Path(log_dir), name
        self.server: Any = None
        self.uri = f"s3://{name}"
        self.env: dict[str, str] = {}
        self._saved: dict[str, str | None] = {}
        self.log = RequestLog(self.log_dir / "none.log")

    def __enter__(self) -> MotoBucket:
        from tests.support.object_store import MotoServer, start_server

        self.server = start_server(lambda: MotoServer(log_dir=self.log_dir))
        bucket = self.server.bucket(self.name)
        self.env = dict(bucket.env)
        self._saved = {k: os.environ.get(k) for k in self.env}
        os.environ.update(self.env)
        self.log = RequestLog(self.server.log_file)
        return self

    def __exit__(self, *exc: object) -> None:
        for key, value in self._saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if self.server is not None:
            self.server.stop()

    @property
    def pid(self) -> int:
        """The server's process id (its CPU seconds are not in a runner's process tree)."""
        return int(self.server.pid)

    def upload(self, local: Path, prefix: str) -> None:
        """Put the file ``local`` at ``<bucket>/<prefix>/<name>`` (one PUT: a reader sees
        all of it or nothing)."""
        from runner.storage.objects import object_path
        from runner.storage.ops import write_atomic

        write_atomic(object_path(f"{self.uri}/{prefix.strip('/')}/{local.name}"),
                     local.read_bytes())
