"""Fixtures of the catalog tests (issue 31): one real Hive metastore thrift server per test
run (``tests/support/metastore.py``), on a free loopback port with its own Derby folder."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.metastore import HiveMetastore


@pytest.fixture(scope="session")
def hive_metastore() -> Iterator[HiveMetastore]:
    """The run's Hive metastore; tests keep apart by using schemas of their own."""
    metastore = None
    for attempt in range(3):  # a free port can be taken between probe and bind
        try:
            metastore = HiveMetastore().start()
            break
        except RuntimeError:
            if attempt == 2:
                raise
    assert metastore is not None
    try:
        yield metastore
    finally:
        metastore.stop()
