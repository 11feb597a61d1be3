"""The object-store behaviour the runner's storage layer relies on, on real servers (moto's
S3, Azurite's Blob): obstore's create-if-absent and compare-and-swap, list, delete, and
delta-rs tables, each reached with the settings of :mod:`runner.storage.settings` alone.

Measured here (obstore 0.12, moto 5.2.5, Azurite 3.35):

- ``put(mode="create")`` on an existing key raises ``obstore.exceptions.AlreadyExistsError``.
- ``put(mode={"e_tag": stale})`` raises ``obstore.exceptions.PreconditionError``; so does an
  update of a key that does not exist. ``version`` is None on both servers (no versioning):
  pass ``{"e_tag": ...}`` alone (``"version": None`` is a TypeError).
- ``get``/``head`` of a missing key raise the builtin ``FileNotFoundError``.
- ``delete`` of a missing key: nothing on S3, ``FileNotFoundError`` on Azure.
- Both exception classes derive from ``obstore.exceptions.BaseError``, not from each other.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.object_store import Bucket


@pytest.fixture(params=["s3", "azure"])
def bucket(request: pytest.FixtureRequest) -> Bucket:
    """An empty S3 bucket (moto) or Azure container (Azurite)."""
    fixture = {"s3": "s3_bucket", "azure": "azure_container"}[request.param]
    return request.getfixturevalue(fixture)  # type: ignore[no-any-return]


def test_create_if_absent(bucket: Bucket) -> None:
    import obstore
    from obstore.exceptions import AlreadyExistsError, BaseError

    store = bucket.store("cp")
    first = obstore.put(store, "lease.json", b"one", mode="create")
    assert first["e_tag"]
    with pytest.raises(AlreadyExistsError) as e:
        obstore.put(store, "lease.json", b"two", mode="create")
    assert isinstance(e.value, BaseError)
    assert obstore.get(store, "lease.json").bytes() == b"one"


def test_compare_and_swap_on_the_etag(bucket: Bucket) -> None:
    import obstore
    from obstore.exceptions import PreconditionError

    store = bucket.store()
    first = obstore.put(store, "k", b"1", mode="create")
    assert first["version"] is None  # no versioning on either server: the ETag is the token
    second = obstore.put(store, "k", b"2", mode={"e_tag": first["e_tag"]})
    assert second["e_tag"] != first["e_tag"]
    assert obstore.head(store, "k")["e_tag"] == second["e_tag"]
    with pytest.raises(PreconditionError):  # stale ETag: another writer won
        obstore.put(store, "k", b"3", mode={"e_tag": first["e_tag"]})
    with pytest.raises(PreconditionError):  # an update of a key that is not there
        obstore.put(store, "absent", b"3", mode={"e_tag": first["e_tag"]})
    assert obstore.get(store, "k").bytes() == b"2"


def test_list_get_and_delete(bucket: Bucket) -> None:
    import obstore

    store = bucket.store("root")
    for key in ("a/1", "a/2", "ab/3", "b/4"):
        obstore.put(store, key, key.encode())
    listed = sorted(m["path"] for batch in obstore.list(store, prefix="a") for m in batch)
    assert listed == ["a/1", "a/2"]  # a prefix is a folder, not a string prefix
    top = obstore.list_with_delimiter(store)
    assert sorted(top["common_prefixes"]) == ["a", "ab", "b"]
    with pytest.raises(FileNotFoundError):
        obstore.get(store, "a/none")
    with pytest.raises(FileNotFoundError):
        obstore.head(store, "a/none")
    obstore.delete(store, ["a/1", "a/2"])
    assert sorted(m["path"] for b in obstore.list(store) for m in b) == ["ab/3", "b/4"]


def test_delete_of_a_missing_key(s3_bucket: Bucket, azure_container: Bucket) -> None:
    import obstore

    obstore.delete(s3_bucket.store(), "never-written")  # S3: no error
    with pytest.raises(FileNotFoundError):
        obstore.delete(azure_container.store(), "never-written")  # Azure: 404


def _rows(uri: str, options: dict[str, str]) -> list[dict[str, Any]]:
    from deltalake import DeltaTable

    table = DeltaTable(uri, storage_options=options).to_pyarrow_dataset().to_table(
        use_threads=False)
    return sorted(table.to_pylist(), key=lambda r: r["id"])


def test_delta_rs_table(bucket: Bucket) -> None:
    import obstore
    import pyarrow as pa
    from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

    settings = bucket.settings("wh/events")
    uri, options = settings.location.uri(), settings.storage_options
    write_deltalake(uri, pa.table({"id": [1, 2]}), storage_options=options,
                    commit_properties=CommitProperties(
                        app_transactions=[Transaction("q1", 0)]))
    write_deltalake(uri, pa.table({"id": [3]}), mode="append", storage_options=options,
                    commit_properties=CommitProperties(
                        app_transactions=[Transaction("q1", 1)]))
    assert [r["id"] for r in _rows(uri, options)] == [1, 2, 3]
    table = DeltaTable(uri, storage_options=options)
    assert table.version() == 1 and table.transaction_version("q1") == 1
    logs = [m["path"] for b in obstore.list(bucket.store("wh/events/_delta_log")) for m in b]
    assert "00000000000000000001.json" in {p.rsplit("/", 1)[-1] for p in logs}
