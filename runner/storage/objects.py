"""A location in an object store (S3, Azure Blob / ADLS, GCS) that reads like a ``pathlib.Path``.

The runner's own files (registry, ledger, pins, run record, Kafka offsets, input records, the
lease) live under the checkpoint, which may be a bucket prefix. :class:`ObjectPath` gives the
part of ``pathlib.Path`` those modules use (``/``, ``name``, ``parent``, ``read_text``,
``exists``, ``iterdir``, ``unlink``, ``stat`` ...), so one module serves a local folder and a
bucket alike; the writes that need more than a path offers (atomic replace, create-if-absent,
compare-and-swap, delete a prefix) are the functions of :mod:`runner.storage.ops`.

Objects are written whole by one PUT, so a reader sees the old content or the new, never a
part: nothing depends on a rename. Folders do not exist in an object store: ``mkdir`` does
nothing and a "folder" exists while some key lies under it.

The stores are obstore's (the object_store library delta-rs uses), built once per bucket and
options, with the standard environment variables read by obstore itself and the explicit
options (the profile target's ``storage:``) over them.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

__all__ = ["SCHEMES", "ObjectPath", "ObjectStat", "as_os_errors", "object_path", "split_uri"]

#: URI scheme -> the scheme the store is opened with (``s3a`` is S3 under Hadoop's name).
SCHEMES = {"s3": "s3", "s3a": "s3", "gs": "gs", "gcs": "gs", "az": "az", "azure": "az",
           "abfs": "abfss", "abfss": "abfss"}
_STORES: dict[tuple[str, str, tuple[tuple[str, str], ...]], Any] = {}
_STORES_LOCK = threading.Lock()
#: (scheme, bucket) -> the explicit options a project gave for it: a URI met later as a
#: plain string (a table path in a sink spec) opens with the same options.
_BUCKET_OPTIONS: dict[tuple[str, str], dict[str, str]] = {}


def split_uri(uri: str) -> tuple[str, str, str]:
    """``(scheme, bucket, key)`` of an object-store URI; the scheme as written, lower case.

    >>> split_uri("s3a://logs/pipeline/checkpoint/")
    ('s3a', 'logs', 'pipeline/checkpoint')
    >>> split_uri("abfss://data@acct.dfs.core.windows.net/wh")
    ('abfss', 'data@acct.dfs.core.windows.net', 'wh')
    """
    scheme, _, rest = uri.partition("://")
    bucket, _, key = rest.partition("/")
    return scheme.lower(), bucket, "/".join(p for p in key.split("/") if p)


def _open_store(scheme: str, bucket: str, options: tuple[tuple[str, str], ...]) -> Any:
    from obstore.store import from_url

    from runner.storage.settings import storage_settings

    uri = f"{SCHEMES[scheme]}://{bucket}"
    parts = storage_settings(uri, dict(options)).obstore()
    # bounded: an unreachable store fails a call within about a minute, not three
    retry = {"max_retries": 4, "retry_timeout": timedelta(seconds=60)}
    open_url: Any = from_url  # its overloads are per cloud; the options are the user's
    extra = {}
    profile = parts["profile"]
    if profile is not None:
        extra["credential_provider"] = _profile_credentials(profile)
    return open_url(uri, config=parts["config"] or None,
                    client_options=parts["client_options"] or None, retry_config=retry, **extra)


def _profile_credentials(profile: str) -> Any:
    """obstore's ``credential_provider`` for an AWS named profile: object_store reads no
    profile itself; boto3 resolves it (:func:`runner.storage.settings.profile_credentials`)
    and refreshes temporary credentials."""
    from obstore.auth.boto3 import Boto3CredentialProvider

    from runner.storage.aws_profile import profile_credentials, profile_session

    profile_credentials(profile)  # an unknown profile: OSError naming it, now
    return Boto3CredentialProvider(profile_session(profile))


def store_for(scheme: str, bucket: str, options: Mapping[str, str]) -> Any:
    """The obstore store of one bucket and options (cached: stores keep connections)."""
    frozen = tuple(sorted((str(k), str(v)) for k, v in options.items()))
    key = (SCHEMES[scheme], bucket, frozen)
    with _STORES_LOCK:
        if key not in _STORES:
            _STORES[key] = _open_store(scheme, bucket, frozen)
        return _STORES[key]


@contextmanager
def as_os_errors(where: object) -> Iterator[None]:
    """obstore's errors as ``OSError`` naming the location and the store's first line (a
    missing key stays ``FileNotFoundError``; unreachable, denied, misconfigured, a missing
    bucket: :class:`~runner.errors.StorageError`, an ``OSError`` that the CLI reports as one
    clear message with its own exit code), so callers handle one family of errors for both
    kinds of location."""
    from obstore.exceptions import BaseError, NotFoundError

    from runner.errors import StorageError

    try:
        yield
    except NotFoundError as e:
        raise FileNotFoundError(2, "no such object", str(where)) from e
    except BaseError as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0][:500]
        raise StorageError(f"the object store failed at {where}: {first}",
                           location=str(where)) from e


@dataclass(frozen=True)
class ObjectStat:
    """What ``stat()`` gives for an object: ``st_ino`` stands for its ETag (a new object, or
    new content, has another), so code comparing (inode, size, mtime) works unchanged."""

    st_size: int
    st_mtime: float
    e_tag: str | None

    @property
    def st_mtime_ns(self) -> int:
        return int(self.st_mtime * 1e9)

    @property
    def st_ino(self) -> int:
        return zlib.crc32((self.e_tag or "").encode())


class ObjectPath:
    """A key (or key prefix) in one bucket, with ``pathlib.Path``'s reading methods."""

    __slots__ = ("scheme", "bucket", "key", "options")

    def __init__(self, scheme: str, bucket: str, key: str,
                 options: Mapping[str, str] | None = None) -> None:
        self.scheme = scheme
        self.bucket = bucket
        self.key = key.strip("/")
        self.options: Mapping[str, str] = dict(options or {})

    # -- naming ---------------------------------------------------------------------------
    def __str__(self) -> str:
        return f"{self.scheme}://{self.bucket}/{self.key}" if self.key else \
            f"{self.scheme}://{self.bucket}"

    def __repr__(self) -> str:
        return f"ObjectPath({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ObjectPath) and (SCHEMES[self.scheme], self.bucket,
                                                  self.key) == (SCHEMES[other.scheme],
                                                                other.bucket, other.key)

    def __hash__(self) -> int:
        return hash((SCHEMES[self.scheme], self.bucket, self.key))

    def __truediv__(self, name: str) -> ObjectPath:
        key = "/".join(p for p in f"{self.key}/{name}".split("/") if p)
        return ObjectPath(self.scheme, self.bucket, key, self.options)

    @property
    def name(self) -> str:
        return self.key.rsplit("/", 1)[-1]

    @property
    def parent(self) -> ObjectPath:
        return ObjectPath(self.scheme, self.bucket, self.key.rpartition("/")[0], self.options)

    @property
    def parents(self) -> list[ObjectPath]:
        out, p = [], self
        while p.key:
            p = p.parent
            out.append(p)
        return out

    @property
    def suffix(self) -> str:
        name = self.name
        return name[name.rfind("."):] if "." in name.lstrip(".") else ""

    def with_name(self, name: str) -> ObjectPath:
        return self.parent / name

    def is_absolute(self) -> bool:
        return True

    def expanduser(self) -> ObjectPath:
        return self

    def resolve(self) -> ObjectPath:
        return self

    @property
    def store(self) -> Any:
        return store_for(self.scheme, self.bucket, self.options)

    # -- reading --------------------------------------------------------------------------
    def read_bytes(self) -> bytes:
        import obstore

        with as_os_errors(self):
            return bytes(obstore.get(self.store, self.key).bytes())

    def read_text(self, encoding: str = "utf-8") -> str:
        return self.read_bytes().decode(encoding)

    def stat(self) -> ObjectStat:
        import obstore

        with as_os_errors(self):
            meta = obstore.head(self.store, self.key)
        return ObjectStat(int(meta["size"]), meta["last_modified"].timestamp(), meta["e_tag"])

    def is_file(self) -> bool:
        try:
            self.stat()
        except FileNotFoundError:
            return False
        return True

    def is_dir(self) -> bool:
        import obstore

        with as_os_errors(self):
            listing = obstore.list_with_delimiter(self.store, self.key or None)
        return bool(listing["objects"] or listing["common_prefixes"])

    def exists(self) -> bool:
        return self.is_file() or self.is_dir()

    def iterdir(self) -> Iterator[ObjectPath]:
        """The keys and "folders" right under this prefix (one listing)."""
        import obstore

        with as_os_errors(self):
            listing = obstore.list_with_delimiter(self.store, self.key or None)
        names = [p.rsplit("/", 1)[-1] for p in listing["common_prefixes"]]
        names += [o["path"].rsplit("/", 1)[-1] for o in listing["objects"]]
        for name in sorted(set(names)):
            yield self / name

    def walk_keys(self) -> Iterator[str]:
        """Every key under this prefix, relative to it (recursive listing)."""
        import obstore

        prefix = f"{self.key}/" if self.key else ""
        with as_os_errors(self):
            chunks = list(obstore.list(self.store, self.key or None))
        for chunk in chunks:
            for meta in chunk:
                yield meta["path"][len(prefix):]

    # -- changing -------------------------------------------------------------------------
    def mkdir(self, parents: bool = False, exist_ok: bool = False) -> None:
        """Nothing to do: a prefix exists once a key lies under it."""

    def unlink(self, missing_ok: bool = False) -> None:
        import obstore

        if not missing_ok and not self.is_file():
            raise FileNotFoundError(str(self))
        try:
            with as_os_errors(self):
                obstore.delete(self.store, self.key)
        except FileNotFoundError:  # Azure says so where S3 says nothing
            if not missing_ok:
                raise


def object_path(uri: str, options: Mapping[str, str] | None = None) -> ObjectPath:
    """The :class:`ObjectPath` a URI names (``s3://bucket/prefix``, ``abfss://...``).

    ``options`` (the target's ``storage:``) are remembered for the bucket; without them, the
    bucket's remembered options apply (none: the environment's settings alone)."""
    scheme, bucket, key = split_uri(uri)
    if scheme not in SCHEMES or not bucket:
        raise ValueError(f"not an object-store URI: {uri!r}")
    where = (SCHEMES[scheme], bucket)
    if options is not None:
        _BUCKET_OPTIONS[where] = dict(options)
    return ObjectPath(scheme, bucket, key, _BUCKET_OPTIONS.get(where, {}))
