"""A bucket for a bench: moto's S3 server on a loopback port (as the tests' ``moto_server``
fixture starts it: :class:`tests.support.object_store.MotoServer`), and what its request log
says a run asked of it.

moto is an in-memory server on loopback: a bench that puts its locations there measures the
runner's request pattern (how many round trips, of which kind), not a real S3's latency.

moto's server (werkzeug) logs one line per HTTP request (counted by
:class:`tests.support.object_store.RequestLog`)::

    127.0.0.1 - - [26/Nov/2026 20:42:10] "GET /b?delimiter=/&list-type=2&prefix=a/ HTTP/1.1" 200 -

(with terminal colour escapes around some of them: 4xx answers, range GETs, DELETEs).

``RequestLog`` counts those lines between two points of a run (byte offsets of the log),
by kind: ``GET`` (an object), ``LIST`` (a GET of the bucket itself: ``list-type``, ``prefix``,
``uploads``...), ``HEAD``, ``PUT``, ``POST`` (multi-object delete, multipart), ``DELETE``;
and the answers that were conditional-write refusals (412) or misses (404).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tests.support.object_store import KINDS, RequestLog, count_requests

__all__ = ["KINDS", "MotoBucket", "RequestLog", "count_requests"]


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
