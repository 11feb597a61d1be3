"""Check, then act: before a rebuild drops a table or a backfill writes one, the history it will
replay must still be complete, else the start-up refuses (:class:`ConfigError`, exit 2) with
nothing changed: no table dropped or written, the registry and the ledger as they were.

- Files source: every input file of the batches to replay must still exist. Local paths
  (``file:`` URIs, plain paths) are checked with ``stat``; files on other file systems
  (``s3a://``, ``abfss://``...) are checked by the replay itself, which names a missing one.
- Kafka source: where batch 0 started must be known (the Python reader's record of it,
  :func:`runner.checkpoint.identity.read_kafka_start`, concrete ``starting_offsets``, Spark's
  record of it in ``sources/0/0``, or ``earliest`` on partitions that still start at offset
  0: nothing was ever deleted from them), and the brokers must still hold every offset of the
  batches to replay. With ``fail_on_data_loss: false`` both are reported and the backfill
  replays what is left, as the stream itself would.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

from runner.checkpoint.identity import read_kafka_start
from runner.errors import ConfigError
from runner.events import KafkaStartUnknown, Reporter, ignore
from runner.project.loader import Project
from runner.sources.history import (
    KafkaSpan,
    PastBatch,
    file_batches,
    file_location,
    kafka_batches,
)

__all__ = ["check_history", "missing_files", "past_batches"]


def past_batches(project: Project, through: int) -> list[PastBatch]:
    """The input of the checkpoint's committed batches up to ``through``, oldest first."""
    source = project.config.source
    if source.type == "files":
        return file_batches(project.checkpoint, through=through)
    # where batch 0 started: as the Python reader recorded it when it first resolved
    # starting_offsets, else concrete starting_offsets, else Spark's record (kafka_batches)
    recorded = read_kafka_start(project.checkpoint)
    start = recorded if recorded is not None else source.starting_offsets
    initial = None
    if isinstance(start, dict) and all(o >= 0 for parts in start.values() for o in parts.values()):
        initial = {(t, int(p)): o for t, parts in start.items() for p, o in parts.items()}
    return kafka_batches(project.checkpoint, through=through, initial=initial)


def missing_files(batches: Sequence[PastBatch], since: int) -> list[tuple[int, str]]:
    """``(batch id, logged path)`` of every input file of the batches from ``since`` on (on
    local disk or in an object store) that no longer exists."""
    gone = []
    for b in batches:
        if b.batch_id < since:
            continue
        for uri in b.files:
            where = file_location(uri)
            try:
                present = where is None or where.is_file()
            except OSError as e:  # the store cannot say: refuse as for a gone file
                gone.append((b.batch_id, f"{uri} (cannot be checked: {e})"))
                continue
            if not present:
                gone.append((b.batch_id, uri))
    return gone


def _what(starts: Mapping[str, int], rebuild: Collection[str]) -> str:
    names = sorted(starts)
    verb = "rebuild" if set(names) <= set(rebuild) else "backfill"
    return f"cannot {verb} {', '.join(names)}"


def check_history(project: Project, starts: Mapping[str, int], *, committed: int | None,
                  rebuild: Collection[str] = (),
                  report: Reporter = ignore) -> None:
    """Refuse a backfill or rebuild whose history is no longer complete.

    Args:
        starts: model -> the first batch its backfill will replay (0 for a rebuild).
        committed: the last committed batch (None: nothing to replay).
        rebuild: the models of ``starts`` that are rebuilt (their tables dropped first).

    Raises:
        ConfigError: names the missing files or offsets, and what to do; nothing changed.
    """
    if committed is None or not starts:
        return
    since = min(starts.values())
    if since > committed:
        return
    batches = past_batches(project, committed)
    source = project.config.source
    what = _what(starts, rebuild)
    dropped = "; nothing was dropped or written" if set(starts) & set(rebuild) else \
        "; nothing was written"
    if source.type == "files":
        gone = missing_files(batches, since)
        if gone:
            listed = "\n".join(f"  - {uri} (batch {b})" for b, uri in gone[:10])
            more = f"\n  ... and {len(gone) - 10} more" if len(gone) > 10 else ""
            raise ConfigError(
                f"{what}: {len(gone)} input file(s) of batches {since}..{committed} are gone, "
                f"so the history to replay is incomplete:\n{listed}{more}",
                hint="put the file(s) back and run again" + dropped
                     + (" (a model that is not rebuilt can also start at the next batch "
                        "without the history: backfill=false)"
                        if not set(starts) <= set(rebuild) else ""))
        return
    _check_kafka(project, batches, since=since, what=what, dropped=dropped,
                 report=lambda spans: report(KafkaStartUnknown(
                     "rebuild" if set(starts) <= set(rebuild) else "backfill",
                     tuple(sorted(starts)), tuple(f"{s.topic}[{s.partition}]" for s in spans))))


def _check_kafka(project: Project, batches: Sequence[PastBatch], *, since: int, what: str,
                 dropped: str, report: Callable[[Sequence[KafkaSpan]], None]) -> None:
    from runner.sources.replay import broker_watermarks, resolve_spans

    source = project.config.source
    assert source.type == "kafka"
    todo = [b for b in batches if b.batch_id >= since]
    if not todo:
        return
    strict = source.fail_on_data_loss
    unknown = [s for s in todo[0].spans if s.start is None] if todo[0].first == 0 else []
    if not strict:  # the replay reports (and skips) what is gone, as the stream would
        if unknown:
            report(unknown)  # replayed from the earliest offset the brokers still have
        return
    if unknown and source.starting_offsets != "earliest":
        raise _unknown_start(what, unknown, dropped)
    available = broker_watermarks(source)
    # with `earliest`, batch 0 started at offset 0 where nothing was ever deleted
    unknown = [s for s in unknown
               if (w := available.get((s.topic, s.partition))) is None or w.low > 0]
    if unknown:
        raise _unknown_start(what, unknown, dropped)
    losses = resolve_spans([s for b in todo for s in b.spans if s.start is not None],
                           available)[1]
    if losses:
        lines = "\n".join(f"  - {loss.describe()}" for loss in losses)
        raise ConfigError(f"{what}: the brokers no longer hold the whole history of batches "
                          f"{since}..{todo[-1].batch_id} (fail_on_data_loss is true):\n{lines}",
                          hint="set fail_on_data_loss: false to replay what is left (the "
                               "missing offsets stay missing)" + dropped)


def _unknown_start(what: str, spans: Sequence[KafkaSpan], dropped: str) -> ConfigError:
    return ConfigError(
        f"{what}: where batch 0 started is unknown for {_partitions(spans)} "
        "(starting_offsets is not a concrete offset per partition, the checkpoint has no "
        "record of it, and the partition no longer starts at offset 0), so the replay could "
        "miss records without noticing (fail_on_data_loss is true)",
        hint="set source.starting_offsets to the offsets batch 0 started at, or set "
             "fail_on_data_loss: false to replay what the brokers still hold" + dropped)


def _partitions(spans: Sequence[KafkaSpan]) -> str:
    return ", ".join(f"{s.topic}[{s.partition}]" for s in spans)
