"""The files source: a directory of newline-delimited JSON files, read as a stream.

:func:`read_files_stream` returns a streaming DataFrame with one row per non-blank line:
``value`` STRING (the line) and ``_source_file`` STRING (the file's URI, from Spark's
``_metadata.file_path``, e.g. ``file:///data/incoming/part-1.json``).

Behaviour (Spark's file stream source, ``format("text")``):
    - Files that land in the directory after the query started are picked up by later
      micro-batches; files already processed are recorded in the checkpoint and never read
      again (a restart only reads new files). A file is read whole, once: write files
      atomically (write ``.name.tmp`` or ``_name`` -- Spark ignores names starting with ``.``
      or ``_`` -- then rename), never append to a file already in the directory.
    - Lines split on ``\\n``, ``\\r\\n`` or ``\\r``; UTF-8; compressed files (``.gz``, ``.bz2``)
      are decompressed by Hadoop's codecs.
    - Blank (whitespace-only) lines are not records: they are filtered out here. The query's
      ``numInputRows`` still counts them (it counts rows the source emitted, before the filter),
      so ``numInputRows - (valid + dead)`` is the number of blank lines in a batch.
    - No file is skipped for its age. Spark's source ignores a new file whose modification
      time is older than ``maxFileAge`` (default 7 days) before the newest file it has seen,
      once a batch has run (a file copied with ``cp -p`` or ``rsync -t`` was lost); the runner
      sets ``maxFileAge`` beyond any file's age (:data:`NO_MAX_FILE_AGE`). The files Spark
      remembers are the ones its checkpoint log holds anyway (restored from it on restart).
    - ``max_files_per_trigger`` bounds the files per micro-batch (also with ``availableNow``,
      which then runs several batches).
    - An unreadable file never stops the stream (a truncated ``.gz``, a file deleted or made
      unreadable after the source listed it): Spark's ``ignoreCorruptFiles`` and
      ``ignoreMissingFiles`` keep the lines read before the damage and skip the rest, and the
      batch writes one dead letter per such file naming it and the problem
      (:func:`unreadable_files`, checked at the start of the batch). Without them every
      replay of the batch failed the same way: the pipeline looped on one bad file.
    - The directory must exist: a missing path is a :class:`~runner.errors.SourceError`, unless
      ``create_missing=True``, which creates it (and says nothing): useful for a pipeline that
      starts before the first file lands. A glob pattern is passed to Spark unchecked.
"""

from __future__ import annotations

import bz2
import gzip
import os
import zlib
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, BinaryIO

from pyspark.sql import functions as F

from runner.errors import SourceError
from runner.sources.history import local_path
from runner.spark_client import is_remote

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["BLANK_CHARS", "NO_MAX_FILE_AGE", "UNREADABLE_FILE", "read_files_stream",
           "unreadable_files"]

BLANK_CHARS = " \t\r\n\f\u000b"
"""Characters that make a line blank when it holds nothing else."""

NO_MAX_FILE_AGE = "100000d"
"""Spark's ``maxFileAge`` for the runner's file source: about 270 years, older than any
modification time, so no file is skipped for its age."""


def read_files_stream(spark: SparkSession, *, path: str, max_files_per_trigger: int | None,
                      create_missing: bool = False) -> DataFrame:
    """Stream the lines of the files in ``path``.

    Args:
        spark: the session.
        path: the input directory (local path or any Hadoop file system URI).
        max_files_per_trigger: at most this many new files per micro-batch (None: no limit).
        create_missing: create ``path`` when it does not exist instead of failing.

    Returns:
        A streaming DataFrame ``value STRING, _source_file STRING``, blank lines removed.

    Raises:
        SourceError: ``path`` does not exist (and ``create_missing`` is false), is a file, or
            ``max_files_per_trigger`` is not a positive integer.
        Py4JJavaError: Hadoop's file system failed (an unknown scheme, no access).
    """
    if max_files_per_trigger is not None and (
            isinstance(max_files_per_trigger, bool) or not isinstance(max_files_per_trigger, int)
            or max_files_per_trigger < 1):
        raise SourceError(f"source.max_files_per_trigger must be a positive integer, "
                          f"got {max_files_per_trigger!r}")
    _check_directory(spark, path, create_missing=create_missing)

    reader = (spark.readStream.format("text").option("maxFileAge", NO_MAX_FILE_AGE)
              .options(**SKIP_UNREADABLE))
    if max_files_per_trigger is not None:
        reader = reader.option("maxFilesPerTrigger", str(max_files_per_trigger))
    lines = reader.load(path)
    return (
        lines.select(F.col("value"), F.col("_metadata.file_path").alias("_source_file"))
        .filter(F.btrim(F.col("value"), F.lit(BLANK_CHARS)) != "")
    )


#: Spark's options that keep a damaged or vanished file from failing the batch (and every
#: replay of it): what the damaged part held is reported by :func:`unreadable_files`.
SKIP_UNREADABLE = {"ignoreCorruptFiles": "true", "ignoreMissingFiles": "true"}

#: The start of every dead-letter reason of a file that could not be read (whole or in part).
UNREADABLE_FILE = "unreadable file"

#: Codecs the check can read to the end, by file extension (as Hadoop picks them). Files of
#: other codecs (``.zst``, ``.lz4``, ``.snappy``) are checked for presence and access only.
_OPENERS: dict[str, Callable[[str], BinaryIO]] = {
    ".gz": lambda p: gzip.GzipFile(p, "rb"),  # type: ignore[dict-item,return-value]  # a BinaryIO
    ".bz2": lambda p: bz2.BZ2File(p, "rb"),  # type: ignore[dict-item,return-value]  # a BinaryIO
}
_CHUNK = 1 << 20


def unreadable_files(uris: Iterable[str]) -> list[tuple[str, str]]:
    """``(uri, reason)`` for each local file of ``uris`` that Spark cannot read whole: gone,
    not readable, or a compressed stream that is damaged or cut short (read to its end here).
    Remote URIs are not checked. Reasons start with :data:`UNREADABLE_FILE`.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "ok.json.gz").write_bytes(gzip.compress(b'{"a": 1}\\n' * 1000))
    >>> _ = (d / "cut.json.gz").write_bytes(gzip.compress(b'{"a": 1}\\n' * 1000)[:40])
    >>> for uri, reason in unreadable_files(
    ...         [(d / n).as_uri() for n in ("ok.json.gz", "cut.json.gz", "gone.json")]):
    ...     print(uri.rsplit("/", 1)[1], "|", reason[:44])
    cut.json.gz | unreadable file: the gz stream is damaged or
    gone.json | unreadable file: it was removed after the so
    """
    out = []
    for uri in uris:
        path = local_path(uri)
        if path is None:
            continue
        problem = _problem(path)
        if problem is not None:
            out.append((uri, f"{UNREADABLE_FILE}: {problem}"))
    return out


def _problem(path: str) -> str | None:
    if not os.path.exists(path):
        return ("it was removed after the source listed it: none of its lines were read "
                "(to process it, put it back under a new name)")
    if not os.access(path, os.R_OK):
        return "permission denied: none of its lines were read"
    opener = _OPENERS.get(os.path.splitext(path)[1].lower())
    if opener is None:
        return None
    try:
        with opener(path) as f:
            while f.read(_CHUNK):
                pass
    except (OSError, EOFError, zlib.error, ValueError) as e:
        codec = os.path.splitext(path)[1].lower().lstrip(".")
        return (f"the {codec} stream is damaged or cut short ({e}): the lines before the "
                "damage were processed, the rest of the file was skipped")
    return None


def _check_directory_remote(path: str, *, create_missing: bool) -> None:
    from runner.storage.ops import as_location, ensure_folder

    folder = ensure_folder(as_location(path.removeprefix("file://")), create=create_missing)
    if folder is False:
        raise SourceError(f"source.path {path!r} is a file, not a directory",
                          hint="point source.path at the directory the files land in")
    if folder is None:
        raise SourceError(f"source.path {path!r} does not exist",
                          hint="create the directory (files land there) or fix source.path")


def _check_directory(spark: SparkSession, path: str, *, create_missing: bool) -> None:
    """Check (or create) the directory through Hadoop's FileSystem, as Spark will read it.

    Errors of the file system itself (an unknown scheme, no access) propagate as py4j raises
    them; :mod:`runner.runtime.start.stream` reports them with their Java cause.
    """
    if any(ch in path for ch in "*?[{"):
        return  # a glob: Spark expands it on every trigger; matches may appear later
    if is_remote(spark):  # no Hadoop here: the storage layer, on locations the server shares
        _check_directory_remote(path, create_missing=create_missing)
        return
    jvm = spark.sparkContext._jvm  # noqa: SLF001 - Hadoop's FileSystem through py4j
    assert jvm is not None
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    fs = hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())  # noqa: SLF001 - see above
    if fs.exists(hadoop_path):
        if not fs.getFileStatus(hadoop_path).isDirectory():
            raise SourceError(f"source.path {path!r} is a file, not a directory",
                              hint="point source.path at the directory the files land in")
        return
    if create_missing:
        fs.mkdirs(hadoop_path)
        return
    raise SourceError(f"source.path {path!r} does not exist",
                      hint="create the directory (files land there) or fix source.path")
