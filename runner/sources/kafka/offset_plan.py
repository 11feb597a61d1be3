"""Pure planning for the Kafka source: offsets, admission control, ranges, data loss.

Plain values in, plain values out: no Kafka client, no Spark, no I/O, so every rule is
unit-tested on its own (``tests/kafka/test_kafka_source.py``). The Spark side, which asks the
broker for watermarks and reads records, is :mod:`runner.sources.kafka.datasource`; the
source's options are :mod:`runner.sources.kafka.options`.

- Offsets are ``{(topic, partition): offset}``, the next offset to read; in the checkpoint
  they are Spark's Kafka-source JSON ``{"topic": {"partition": offset}}``
  (:func:`offsets_to_json`, :func:`offsets_from_json`).
- :func:`parse_starting_offsets` validates ``starting_offsets``;
  :func:`resolve_starting_offsets` makes it concrete against the broker's watermarks.
- :func:`plan_next_offsets` decides where the next micro-batch ends (``max_offsets``,
  ``availableNow`` targets, new and vanished partitions) and :func:`apportion` splits a rate
  limit in proportion to each partition's backlog; :func:`plan_ranges` cuts a batch into
  Spark tasks.
- :class:`DataLoss` describes offsets that are gone; :func:`raise_or_warn` applies
  ``fail_on_data_loss``.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from runner.errors import ConfigError, SourceError

__all__ = [
    "EARLIEST",
    "LATEST",
    "TP",
    "DataLoss",
    "KafkaDataLossError",
    "NextOffsets",
    "OffsetRange",
    "StartingOffsets",
    "Watermarks",
    "apportion",
    "offsets_from_json",
    "offsets_to_json",
    "parse_starting_offsets",
    "plan_next_offsets",
    "plan_ranges",
    "raise_or_warn",
    "resolve_starting_offsets",
]

log = logging.getLogger("runner.kafka")

EARLIEST = -2
LATEST = -1

TP = tuple[str, int]
"""A topic-partition: (topic, partition)."""

StartingOffsets = Literal["earliest", "latest"] | dict[TP, int]


class Watermarks(NamedTuple):
    """A partition's available offsets: ``low`` is the first, ``high`` the next to be written."""

    low: int
    high: int


@dataclass(frozen=True)
class OffsetRange:
    """Offsets ``[start, end)`` of one topic-partition."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


@dataclass(frozen=True)
class DataLoss:
    """Offsets a query expected to read that the broker no longer has.

    ``kind``: ``expired`` (below the earliest offset: retention), ``reset`` (the partition ends
    before the expected offset: topic recreated or log truncated), ``deleted`` (the partition
    is gone), ``beyond_latest`` (a starting offset past the end of the partition).
    """

    topic: str
    partition: int
    kind: Literal["expired", "reset", "deleted", "beyond_latest"]
    expected: int
    available: Watermarks | None = None

    def describe(self) -> str:
        where = f"topic '{self.topic}' partition {self.partition}"
        if self.kind == "deleted" or self.available is None:
            return (f"{where} no longer exists (expected to continue at offset "
                    f"{self.expected}); the topic was probably deleted")
        low, high = self.available
        if self.kind == "expired":
            return (f"{where}: offsets {self.expected}..{low - 1} are no longer available "
                    f"(earliest available offset is {low}); they were probably deleted by "
                    f"retention before this query read them")
        if self.kind == "reset":
            return (f"{where}: expected to continue at offset {self.expected} but the partition "
                    f"now ends at offset {high}; the topic was probably deleted and recreated, "
                    f"or the broker lost data")
        return f"{where}: starting offset {self.expected} is beyond the latest offset {high}"


class KafkaDataLossError(SourceError):
    """Offsets the query must read are gone and ``fail_on_data_loss`` is true."""

    def __init__(self, losses: Sequence[DataLoss]) -> None:
        lines = "\n".join(f"  - {loss.describe()}" for loss in losses)
        super().__init__(
            f"Kafka data loss (fail_on_data_loss is true):\n{lines}",
            hint="set fail_on_data_loss: false to skip the lost offsets with a warning, "
                 "or start again from a new checkpoint")
        self.losses = tuple(losses)

    def __reduce__(self) -> tuple[Any, ...]:  # picklable across Spark's Python workers
        return (type(self), (self.losses,))


def raise_or_warn(losses: Sequence[DataLoss], *, fail_on_data_loss: bool) -> None:
    """Raise :class:`KafkaDataLossError` for ``losses`` or log one warning per loss."""
    if not losses:
        return
    if fail_on_data_loss:
        raise KafkaDataLossError(losses)
    for loss in losses:
        log.warning("Kafka data loss, skipped (fail_on_data_loss is false): %s", loss.describe())


# ---------------------------------------------------------------------------------------------
# Offsets JSON (Spark's Kafka source format) and starting offsets


def offsets_to_json(offsets: Mapping[TP, int]) -> dict[str, dict[str, int]]:
    """Offsets as checkpoint JSON, in one canonical order (topic, then partition number).

    Spark compares offsets by their JSON text, so the order must never depend on how the
    mapping was built.

    >>> offsets_to_json({("b", 10): 1, ("a", 2): 5, ("b", 9): 0})
    {'a': {'2': 5}, 'b': {'9': 0, '10': 1}}
    """
    result: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        result.setdefault(topic, {})[str(partition)] = int(offset)
    return result


def offsets_from_json(data: Mapping[str, Any]) -> dict[TP, int]:
    """Checkpoint JSON back to ``{(topic, partition): offset}``."""
    try:
        return {(str(topic), int(p)): int(o)
                for topic, parts in data.items() for p, o in parts.items()}
    except (AttributeError, TypeError, ValueError) as e:
        raise SourceError(f"unreadable Kafka offsets in the checkpoint: {data!r}") from e


def parse_starting_offsets(spec: Any, topics: Sequence[str]) -> StartingOffsets:
    """Validate ``starting_offsets``: ``earliest``, ``latest``, JSON text or a mapping.

    A specific-offsets spec must name exactly the subscribed topics; partitions are checked
    against the broker later (:func:`resolve_starting_offsets`).

    Raises:
        ConfigError: naming what is wrong.
    """
    if isinstance(spec, str):
        text = spec.strip()
        if text.lower() in ("earliest", "latest"):
            return "earliest" if text.lower() == "earliest" else "latest"
        try:
            spec = json.loads(text)
        except ValueError as e:
            raise ConfigError(
                f"starting_offsets must be 'earliest', 'latest' or JSON like "
                f'{{"topic": {{"0": 5}}}}, got {text!r}') from e
    if not isinstance(spec, Mapping) or not all(isinstance(v, Mapping) for v in spec.values()):
        raise ConfigError(
            f'starting_offsets JSON must map topic -> {{partition: offset}}, got {spec!r}')
    unknown = sorted(set(spec) - set(topics))
    missing = sorted(set(topics) - set(spec))
    if unknown or missing:
        problems = ([f"not subscribed: {', '.join(unknown)}"] if unknown else []) + (
            [f"missing: {', '.join(missing)}"] if missing else [])
        raise ConfigError("starting_offsets must name exactly the subscribed topics "
                          f"({', '.join(topics)}): " + "; ".join(problems))
    result: dict[TP, int] = {}
    for topic, parts in spec.items():
        for p, o in parts.items():
            try:
                partition, offset = int(p), int(o)
            except (TypeError, ValueError) as e:
                raise ConfigError(f"starting_offsets for topic '{topic}': partition and offset "
                                  f"must be integers, got {p!r}: {o!r}") from e
            if partition < 0 or offset < EARLIEST or isinstance(o, bool):
                raise ConfigError(f"starting_offsets for topic '{topic}' partition {p}: offset "
                                  f"must be >= 0, or -2 (earliest) / -1 (latest), got {o!r}")
            result[(topic, partition)] = offset
    return result


def resolve_starting_offsets(spec: StartingOffsets, available: Mapping[TP, Watermarks]
                             ) -> tuple[dict[TP, int], list[DataLoss]]:
    """Concrete first offsets for every available partition, and any out-of-range offsets.

    Out-of-range specific offsets are reported as losses and clamped to the available range
    (what a query that does not fail on data loss uses).

    Raises:
        ConfigError: specific offsets that do not name every partition of their topic.
    """
    if spec == "earliest":
        return {tp: w.low for tp, w in available.items()}, []
    if spec == "latest":
        return {tp: w.high for tp, w in available.items()}, []
    assert isinstance(spec, Mapping)
    for topic in sorted({t for t, _ in spec}):
        wanted = sorted(p for t, p in spec if t == topic)
        actual = sorted(p for t, p in available if t == topic)
        if wanted != actual:
            raise ConfigError(
                f"starting_offsets for topic '{topic}' must list every partition: topic has "
                f"{actual}, starting_offsets lists {wanted} (use -2 for earliest, -1 for latest)")
    offsets: dict[TP, int] = {}
    losses: list[DataLoss] = []
    for tp, w in available.items():
        wanted_offset = spec[tp]
        if wanted_offset == EARLIEST:
            offsets[tp] = w.low
        elif wanted_offset == LATEST:
            offsets[tp] = w.high
        elif wanted_offset < w.low:
            losses.append(DataLoss(*tp, "expired", wanted_offset, w))
            offsets[tp] = w.low
        elif wanted_offset > w.high:
            losses.append(DataLoss(*tp, "beyond_latest", wanted_offset, w))
            offsets[tp] = w.high
        else:
            offsets[tp] = wanted_offset
    return offsets, losses


# ---------------------------------------------------------------------------------------------
# Admission control and range planning


def apportion(limit: int, backlog: Mapping[TP, int]) -> dict[TP, int]:
    """Split ``limit`` records across partitions in proportion to their backlog.

    The shares add up to ``min(limit, total backlog)`` exactly (largest remainders), no share
    exceeds its backlog, and while the limit allows, every partition with a backlog gets at
    least one record, so small partitions are never starved.

    >>> apportion(50, {("t", 0): 60, ("t", 1): 30, ("t", 2): 10})
    {('t', 0): 30, ('t', 1): 15, ('t', 2): 5}
    >>> apportion(100, {("t", 0): 7, ("t", 1): 0})
    {('t', 0): 7, ('t', 1): 0}
    """
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    sizes = {tp: n for tp, n in backlog.items() if n > 0}
    total = sum(sizes.values())
    if total <= limit:
        return {tp: max(0, n) for tp, n in backlog.items()}
    shares = {tp: limit * n // total for tp, n in sizes.items()}
    rest = limit - sum(shares.values())
    by_remainder = sorted(sizes, key=lambda tp: (-(limit * sizes[tp] % total), tp))
    for tp in by_remainder[:rest]:
        shares[tp] += 1
    for tp in sorted(tp for tp, n in shares.items() if n == 0):
        donor = max(sorted(shares), key=lambda t: shares[t])
        if shares[donor] <= 1:
            break
        shares[donor] -= 1
        shares[tp] = 1
    return {tp: shares.get(tp, 0) for tp in backlog}


class NextOffsets(NamedTuple):
    """Result of :func:`plan_next_offsets`: the batch's end offsets and what was lost."""

    end: dict[TP, int]
    losses: list[DataLoss]


def plan_next_offsets(start: Mapping[TP, int], available: Mapping[TP, Watermarks], *,
                      max_offsets: int | None = None,
                      target: Mapping[TP, int] | None = None,
                      topics: Collection[str] | None = None) -> NextOffsets:
    """End offsets of the next micro-batch, given where it starts and what the broker has.

    Args:
        start: the previous batch's end offsets (from the checkpoint).
        available: each existing partition's watermarks.
        max_offsets: records for this batch, a total across partitions (None: no limit).
        target: ``availableNow`` end offsets; partitions not in it are not read, none is
            read past it.
        topics: the subscribed topics (None: all in ``start``); partitions of topics no
            longer subscribed are dropped without a loss.

    Returns:
        ``end``: for every partition still readable; equal to ``start`` when there is nothing
        to read. A partition new since ``start`` enters at its earliest offset (read from the
        next batch on). A partition that is gone is left out; one that went backwards ends at
        its new end (skipping to it). ``losses`` lists those, for :func:`raise_or_warn`.
    """
    end: dict[TP, int] = {}
    losses: list[DataLoss] = []
    backlog: dict[TP, int] = {}
    if topics is not None:
        start = {tp: offset for tp, offset in start.items() if tp[0] in topics}
    for tp, offset in start.items():
        w = available.get(tp)
        if w is None:
            losses.append(DataLoss(*tp, "deleted", offset))
            continue
        if offset > w.high:
            losses.append(DataLoss(*tp, "reset", offset, w))
            end[tp] = w.high
            continue
        first = offset
        if offset < w.low:
            losses.append(DataLoss(*tp, "expired", offset, w))
            first = w.low
        ceiling = w.high if target is None else min(w.high, target.get(tp, offset))
        end[tp] = first
        backlog[tp] = max(0, ceiling - first)
    for tp, w in available.items():
        if tp not in start and (target is None or tp in target):
            end[tp] = w.low
    shares = backlog if max_offsets is None else apportion(max_offsets, backlog)
    for tp, n in shares.items():
        end[tp] += n
    return NextOffsets(end, losses)


def plan_ranges(start: Mapping[TP, int], end: Mapping[TP, int], *,
                min_partitions: int | None = None,
                max_records_per_partition: int | None = None) -> list[OffsetRange]:
    """Split a batch's offsets into ranges, one Spark task each.

    One range per topic-partition with records to read, split further so that no range
    holds more than ``max_records_per_partition`` records and, when ``min_partitions`` is
    given, there are about that many ranges (large partitions split the most). Partitions
    not in ``start`` (new) or whose end is not past their start contribute nothing.

    >>> [(r.partition, r.start, r.end) for r in plan_ranges({("t", 0): 0}, {("t", 0): 10},
    ...                                                     max_records_per_partition=4)]
    [(0, 0, 3), (0, 3, 6), (0, 6, 10)]
    """
    ranges = [OffsetRange(tp[0], tp[1], start[tp], end[tp])
              for tp in sorted(end) if tp in start and end[tp] > start[tp]]
    total = sum(r.size for r in ranges)
    result: list[OffsetRange] = []
    for r in ranges:
        pieces = 1
        if max_records_per_partition:
            pieces = max(pieces, math.ceil(r.size / max_records_per_partition))
        if min_partitions and len(ranges) < min_partitions:
            pieces = max(pieces, round(r.size * min_partitions / total))
        pieces = min(pieces, r.size)
        bounds = [r.start + r.size * i // pieces for i in range(pieces + 1)]
        result.extend(OffsetRange(r.topic, r.partition, a, b) for a, b in zip(bounds, bounds[1:]))
    return result
