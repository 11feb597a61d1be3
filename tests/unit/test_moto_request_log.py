"""Request counts from moto's (werkzeug's) access log (tests.support.object_store, which
bench.s3 uses)."""

from __future__ import annotations

from tests.support.object_store import count_requests

LOG = """\
127.0.0.1 - - [26/Nov/2026 20:42:09] "GET /moto-api/ HTTP/1.1" 200 -
127.0.0.1 - - [26/Nov/2026 20:42:10] "PUT /b/cp/commits/1 HTTP/1.1" 200 -
127.0.0.1 - - [26/Nov/2026 20:42:10] "\x1b[35m\x1b[1mDELETE /b/cp/commits/.1.tmp HTTP/1.1\x1b[0m" 204 -
127.0.0.1 - - [26/Nov/2026 20:42:10] "\x1b[33mHEAD /b/cp/offsets/2 HTTP/1.1\x1b[0m" 404 -
127.0.0.1 - - [26/Nov/2026 20:42:10] "\x1b[31m\x1b[1mPUT /b/cp/runner.lock HTTP/1.1\x1b[0m" 412 -
127.0.0.1 - - [26/Nov/2026 20:42:10] "GET /b?delimiter=/&list-type=2&prefix=cp/ HTTP/1.1" 200 -
127.0.0.1 - - [26/Nov/2026 20:42:10] "\x1b[36mGET /b/wh/t/part-0.parquet HTTP/1.1\x1b[0m" 206 -
127.0.0.1 - - [26/Nov/2026 20:42:10] "POST /b?delete HTTP/1.1" 200 -
WARNING: This is a development server.
"""


def test_counts_every_request_by_kind_coloured_or_not() -> None:
    assert count_requests(LOG.splitlines()) == {
        "GET": 1, "LIST": 1, "HEAD": 1, "PUT": 2, "POST": 1, "DELETE": 1, "total": 7,
        "status_412": 1, "status_404": 1}
