"""Shared pytest fixtures.

``spark``: one local SparkSession (``local[2]``) for the whole test run, built with the
runner's own :func:`runner.engine.session.build_session` and stopped at the end. Tests that
use it carry ``@pytest.mark.spark``. Spark's log goes to a file under the run's base temp dir.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    """The test run's shared SparkSession (``local[2]``, UTC, loopback, quiet)."""
    from runner.engine.session import build_session, stop_session

    log_dir = tmp_path_factory.mktemp("spark-logs")
    session = build_session(master="local[2]", app_name="runner-tests", log_dir=str(log_dir))
    try:
        yield session
    finally:
        stop_session(session)


@pytest.fixture
def armed(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    """Arm failpoints for one test: ``armed("sink.after_commit:m@1")`` (see runner/failpoints.py;
    the variable is read once per process, so the cache is cleared on arming and after)."""
    from runner import failpoints

    def arm(value: str) -> None:
        monkeypatch.setenv("RUNNER_FAILPOINTS", value)
        failpoints._armed.cache_clear()

    yield arm
    monkeypatch.delenv("RUNNER_FAILPOINTS", raising=False)
    failpoints._armed.cache_clear()
