"""A batch's dead letters: the records the parse could not read, the rows models quarantined
by expectation, and the files the source could not read whole; one frame, one write."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from runner.runtime.batches.parse import BATCH_ID_COLUMN

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["DEAD_LETTER_ARROW_MAX_BYTES", "DeadLetters", "unreadable_frame"]

#: Dead letters whose raw text is larger than this (UTF-8 bytes, as the parse observed) are
#: written without a size hint, so the ``rs`` engine writes them Spark-native instead of
#: through ``toArrow()`` in the driver: a row bound (``delta.arrow_max_rows``) says nothing of
#: a dead record's size, and through Arrow the driver holds every dead record's raw text
#: (``bench.driver_memory``, case ``dead``).
DEAD_LETTER_ARROW_MAX_BYTES = 32 * 2**20


def unreadable_frame(spark: SparkSession, metadata_columns: Mapping[str, str],
                     unreadable: Sequence[tuple[str, str]], batch_id: int) -> DataFrame:
    """One dead letter per unreadable file: ``raw`` null (no record), the reason, the file."""
    columns = ["raw STRING", "reason STRING", f"{BATCH_ID_COLUMN} BIGINT"]
    columns += [f"`{name}` {kind}" for name, kind in metadata_columns.items()]
    rows = [(None, reason, batch_id, *(uri if name == "_source_file" else None
                                       for name in metadata_columns))
            for uri, reason in unreadable]
    return spark.createDataFrame(rows, ", ".join(columns))


class DeadLetters:
    """A batch's dead letters: the parse's (``parsed`` builds their frame; None when the parse
    counted none), the rows models quarantined, the unreadable files. The frame is built by
    :meth:`frame`, in the thread that writes it (its reason expression is large)."""

    def __init__(self, spark: SparkSession, metadata_columns: Mapping[str, str],
                 parsed: Callable[[], DataFrame] | None,
                 hint: int | None, quarantined: Sequence[DataFrame],
                 unreadable: Sequence[tuple[str, str]], batch_id: int) -> None:
        self._spark, self._metadata, self._parsed, self._hint = (spark, metadata_columns,
                                                                 parsed, hint)
        self._quarantined, self._unreadable, self._batch_id = quarantined, unreadable, batch_id

    @property
    def any(self) -> bool:
        return self._parsed is not None or bool(self._quarantined) or bool(self._unreadable)

    def frame(self) -> tuple[DataFrame, int | None]:
        """(the dead letters' frame, its rows hint: None when not known exactly); only when
        :attr:`any`."""
        dead, hint = (self._parsed() if self._parsed is not None else None), self._hint
        for q in self._quarantined:
            dead, hint = (q if dead is None else dead.unionByName(q)), None
        if self._unreadable:
            files = unreadable_frame(self._spark, self._metadata, self._unreadable,
                                     self._batch_id)
            dead, hint = ((files, len(self._unreadable)) if dead is None
                          else (dead.unionByName(files), None))
        if dead is None:
            raise ValueError("a batch without dead letters has no dead-letter frame")
        return dead, hint
