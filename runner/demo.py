"""Realistic app events for the example project (request logs with users, endpoints, latencies
and errors), with a few poison lines.

>>> lines = list(event_lines(3, seed=1, poison_every=0))
>>> import json; sorted(json.loads(lines[0]))
['errors', 'eventId', 'request', 'timestamp', 'user']
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from runner.storage.ops import write_atomic

__all__ = ["DemoResult", "event_lines", "write_demo_files"]

_ENDPOINTS = ["/checkout", "/cart", "/search", "/login", "/products", "/orders", "/profile"]
_METHODS = ["GET", "GET", "GET", "POST", "PUT"]
_COUNTRIES = ["IE", "DE", "FR", "US", "BR", "JP", "IN", "NG"]
_ERRORS = [("DB_TIMEOUT", "critical"), ("PAYMENT_DECLINED", "warning"),
           ("UPSTREAM_5XX", "critical"), ("VALIDATION", "info"), ("RATE_LIMITED", "warning")]
# Lines a real stream delivers now and then; each must land in the dead-letter table.
POISON = [
    "this is not json",
    '{"eventId": "evt_truncated", "timestamp": "2026-03-12T10:12:00Z", "user": {',
    '[{"eventId": "evt_in_array"}]',
    '{"timestamp": "2026-03-12T10:12:00Z", "request": {"endpoint": "/x"}}',
    '{"eventId": "evt_bad_type", "timestamp": "2026-03-12T10:12:00Z", '
    '"request": {"endpoint": "/x", "latency_ms": "abc", "status_code": 200}}',
]


def _event(rng: random.Random, n: int, start: datetime) -> dict[str, object]:
    status = rng.choices([200, 201, 204, 400, 404, 500, 503], [70, 5, 5, 6, 6, 5, 3])[0]
    errors = []
    if status >= 400 or rng.random() < 0.03:
        errors = [dict(zip(("errorCode", "severity"), rng.choice(_ERRORS)))
                  for _ in range(rng.choice([1, 1, 1, 2]))]
    ts = start + timedelta(milliseconds=n * 37 + rng.randint(0, 30))
    return {
        "eventId": f"evt_{n:09d}",
        "timestamp": ts.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "user": {"userId": f"u{rng.randint(1, 5000)}", "country": rng.choice(_COUNTRIES)},
        "request": {"endpoint": rng.choice(_ENDPOINTS), "method": rng.choice(_METHODS),
                    "latency_ms": int(rng.lognormvariate(4.8, 0.9)), "status_code": status},
        "errors": errors,
    }


def event_lines(count: int, *, seed: int = 42, start_id: int = 0,
                poison_every: int = 2000) -> Iterator[str]:
    """``count`` JSON lines; every ``poison_every``-th line is a poison line instead (0: none)."""
    rng = random.Random(seed + start_id)
    start = datetime(2026, 3, 12, 10, 0, tzinfo=UTC)
    for i in range(count):
        n = start_id + i
        if poison_every and n % poison_every == poison_every - 1:
            yield POISON[(n // poison_every) % len(POISON)]
        else:
            yield json.dumps(_event(rng, n, start), separators=(",", ":"))


@dataclass(frozen=True)
class DemoResult:
    files: int
    events: int
    poison: int
    directory: Path


def write_demo_files(directory: Path, *, events: int, files: int, seed: int = 42,
                     poison_every: int = 2000) -> DemoResult:
    """Write ``events`` lines over ``files`` new files (atomically: temp name, then rename,
    so a running stream never sees half a file)."""
    directory.mkdir(parents=True, exist_ok=True)
    existing = len(list(directory.glob("events-*.json")))
    per_file = -(-events // files)
    poison = written = 0
    for f in range(files):
        n = min(per_file, events - written)
        if n <= 0:
            break
        start_id = existing * 10_000_000 + written  # distinct ids across demo runs
        lines = list(event_lines(n, seed=seed, start_id=start_id, poison_every=poison_every))
        poison += sum(1 for line in lines if line in POISON)
        name = directory / f"events-{existing + f:05d}.json"
        write_atomic(name, "\n".join(lines) + "\n\n")  # a trailing blank line
        written += n
    return DemoResult(files=min(files, -(-events // per_file)), events=written, poison=poison,
                      directory=directory)
