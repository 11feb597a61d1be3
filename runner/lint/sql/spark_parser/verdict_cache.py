"""Spark's parser's verdicts kept on disk between processes, so a ``runner`` command does not
load the grammar (about 0.3 s) and warm its prediction tables for models it has parsed before.

Where: ``$RUNNER_CACHE_DIR`` (empty: no disk cache), else ``$XDG_CACHE_HOME/runner``, else
``~/.cache/runner``; under it ``spark-parser/<digest of the grammar and this package's code>/``,
one small JSON file per SQL digest, written atomically (:func:`runner.storage.ops.write_atomic`),
so processes running at once never read half a file. A new grammar (another Spark release) or
a changed post-parse check starts an empty folder. A
cache that cannot be read or written is no cache: the parser runs.

A verdict only decides the syntax tier of ``runner compile``; Spark's own parser reads every
model again before anything runs (the stream's start-up analysis, the run-time guard). So an
entry written by someone else can at worst let compile pass a model that ``stream`` refuses.
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import cache
from importlib import resources
from pathlib import Path

from runner.storage.ops import write_atomic

__all__ = ["load", "store"]

#: A verdict as stored: None (accepted) or (message, line, column).
Verdict = tuple[str, int, int] | None


@cache
def _folder() -> Path | None:
    configured = os.environ.get("RUNNER_CACHE_DIR")
    if configured is not None:
        if not configured:
            return None
        root = Path(configured)
    else:
        root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "runner"
    return root / "spark-parser" / _code_digest()


def _code_digest() -> str:
    """What decides a verdict: the grammar and this package's code (its post-parse checks),
    so a changed check never reads the verdicts an older one wrote."""
    digest = hashlib.blake2b(digest_size=8)
    package = resources.files(__package__)
    for entry in sorted(package.iterdir(), key=lambda e: e.name):
        if entry.name == "spark_grammar.json" or entry.name.endswith(".py"):
            digest.update(entry.name.encode() + b"\0" + entry.read_bytes() + b"\0")
    return digest.hexdigest()


def _path(key: bytes) -> Path | None:
    folder = _folder()
    return None if folder is None else folder / key.hex()[:2] / f"{key.hex()}.json"


def load(key: bytes) -> tuple[bool, Verdict]:
    """(found, verdict) for the SQL digest ``key``; found is False without a usable entry."""
    path = _path(key)
    if path is None:
        return False, None
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # absent, unreadable or cut short: parse instead
        return False, None
    if value is None:
        return True, None
    if (isinstance(value, list) and len(value) == 3 and isinstance(value[0], str)
            and all(isinstance(v, int) for v in value[1:])):
        return True, (value[0], value[1], value[2])
    return False, None


def store(key: bytes, verdict: Verdict) -> None:
    """Keep ``verdict`` for ``key``; a folder that cannot be written is left without it."""
    path = _path(key)
    if path is None:
        return
    try:
        write_atomic(path, json.dumps(None if verdict is None else list(verdict)))
    except OSError:  # a read-only or full disk: the verdict is simply not kept
        return
