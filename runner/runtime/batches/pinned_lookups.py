"""Sources and seeds joined per batch at a pinned version (docs/OPERATIONS.md, "Sources and
seeds: one version per batch").

:meth:`Lookups.register` runs first in every batch (:func:`runner.runtime.batches.batch.run_batch`),
before any table is written: it pins each lookup the batch's models read (a source's latest
committed Delta version, a seed's content hash) unless the batch has a pin already
(:mod:`runner.checkpoint.pins`: a replay, a backfill, a rebuild), then registers each as the
temp view the compiled SQL reads (``Lookup.view``) in the batch's own session, at the pinned
version.

Read once per version: the first batch at a version reads it (spark engine: Delta time travel,
``versionAsOf``; rs engine: delta-rs at that version into Arrow, then ``createDataFrame``;
a seed: its kept CSV, cast to the declared types), persists it and keeps it as a global temp
view, which every batch session sees (the cache is shared by the sessions of one
SparkContext); a lookup of at most ``lookups.broadcast_max_rows`` rows (project.yml) carries a
broadcast hint. When the version moves, the old one is unpersisted.

Refusals (:class:`ConfigError`, exit 2), before any table commits: a source missing; a recorded
version that can no longer be read (vacuumed, log cleaned), never joining another version; a
source that lost a column a model uses.
"""

from __future__ import annotations

import csv
import hashlib
import io
import itertools
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.checkpoint.ledger import utc_now
from runner.checkpoint.pins import Pin, Pins, SeedContent
from runner.compile.plan import Lookup, Plan, Step
from runner.errors import ConfigError
from runner.events import SeedChanged
from runner.project.config import LookupsConfig
from runner.sinks.tables import (
    columns_at,
    commit_time,
    read_version,
    table_version,
    version_problem,
)
from runner.spark_errors import first_line
from runner.storage.ops import Location, as_location

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["DEFAULT_BROADCAST_MAX_ROWS", "Lookups", "lookups_of", "seed_frame",
           "start_lookups"]

#: project.yml ``lookups.broadcast_max_rows`` when unset.
DEFAULT_BROADCAST_MAX_ROWS = LookupsConfig().broadcast_max_rows
_serial = itertools.count()


def lookups_of(plan: Plan) -> tuple[Lookup, ...]:
    """The lookups the plan's steps read, in plan order."""
    used = {v for s in plan.steps for v in s.lookups}
    return tuple(lk for lk in plan.lookups if lk.view in used)


def start_lookups(spark: SparkSession, checkpoint: Location, plan: Plan, *, engine: str,
                  broadcast_max_rows: int = DEFAULT_BROADCAST_MAX_ROWS) -> Lookups | None:
    """The run's :class:`Lookups` (None: no model reads a source or seed), checked
    (:meth:`Lookups.check_start`) before anything is written.

    Raises:
        ConfigError: a source missing or without a column a model uses; a seed unreadable.
    """
    used = lookups_of(plan)
    if not used:
        return None
    if engine == "rs":  # delta-rs reads by path: the catalog says where a named table is
        used = tuple(_at_location(spark, lk) if lk.catalog else lk for lk in used)
    lookups = Lookups(checkpoint, used, engine, broadcast_max_rows, plan.steps)
    lookups.check_start(spark)
    return lookups


def _at_location(spark: SparkSession, lk: Lookup) -> Lookup:
    """A source declared by catalog name, as one read by path: its location, looked up once
    at start through the session's catalog (the rs engine reads pinned versions by path).

    Raises:
        ConfigError: no such table, or one without a location.
    """
    from runner.compile.relations import Relation
    from runner.runtime.catalog import local_location, location_of

    try:
        where = location_of(spark, Relation.parse(lk.location))
    except Exception as e:  # py4j: the metastore, a malformed name
        raise ConfigError(f"source {lk.name}: catalog table {lk.location} cannot be looked up: "
                          f"{first_line(e)}", hint="check the metastore settings in spark.conf "
                          "and `table:` under sources; nothing was written") from e
    if not where:
        raise ConfigError(f"source {lk.name}: no catalog table {lk.location} with a location",
                          hint="create the table, or fix `table:` under sources in "
                               "models/*.yml; nothing was written")
    return replace(lk, location=local_location(where), catalog=False)


@dataclass
class _Cached:
    version: int | str
    view: str  # the global temp view holding it
    frame: DataFrame


@dataclass
class Lookups:
    """The lookups of one run, their pins and their per-version cache."""

    checkpoint: Location
    lookups: tuple[Lookup, ...]
    engine: str  # "rs" | "spark": how a source is read
    broadcast_max_rows: int = DEFAULT_BROADCAST_MAX_ROWS
    steps: tuple[Step, ...] = ()  # every step, to name the model that uses a lost column
    _cache: dict[str, _Cached] = field(default_factory=dict, repr=False)
    _checked: dict[str, int] = field(default_factory=dict, repr=False)
    _seeds: dict[str, SeedContent] = field(default_factory=dict, repr=False)  # read at start

    @cached_property
    def pins(self) -> Pins:
        """The checkpoint's pins, one object for the run (it keeps the parsed runs)."""
        return Pins(self.checkpoint)

    def __getstate__(self) -> dict[str, object]:
        """Pickled (over Spark Connect the batch function goes to the server's worker: docs/
        CONNECT.md) without this process's cache: its frames belong to this process's session
        (a backfill's or a rebuild's in the client), which cannot be unpickled elsewhere; the
        worker reads each version once into its own. The pins are read again there too."""
        state = dict(self.__dict__)
        state["_cache"] = {}
        state.pop("pins", None)
        return state

    # -- start-up --------------------------------------------------------------------------
    def check_start(self, spark: SparkSession) -> None:
        """Every source is there with every column the models use, every seed's file is
        readable. Nothing is written.

        Raises:
            ConfigError: names the source (and the model and column).
        """
        for lk in self.lookups:
            if lk.kind == "seed":
                # read now, with the plan (its hash is of this content); kept in the
                # checkpoint when first pinned
                self._seeds[lk.name] = _seed_content(lk)
                continue
            version = self._latest(spark, lk)
            self._check_columns(spark, lk, version)

    def check_pinned(self, batch_ids: Iterable[int], views: Collection[str]) -> None:
        """Every version recorded for ``batch_ids`` of the lookups named by ``views`` can
        still be read (before a backfill or rebuild changes anything).

        Raises:
            ConfigError: names the source, the version and the batch.
        """
        seen: set[tuple[str, int | str]] = set()
        by_name = {lk.name: lk for lk in self.lookups if lk.view in views}
        for batch_id in batch_ids:
            for name, pin in self.pins.get(batch_id).items():
                lk = by_name.get(name)
                if lk is None or (name, pin.version) in seen:
                    continue
                seen.add((name, pin.version))
                self._check_readable(lk, pin, batch_id)

    def changed_seeds(self, batch_ids: Iterable[int], views: Collection[str]
                      ) -> list[SeedChanged]:
        """One event per seed (of ``views``) whose CSV changed since some of ``batch_ids``
        first ran: a backfill or rebuild of those batches joins the content each recorded
        (replays stay exact), not the edited file, and says so."""
        by_name = {lk.name: lk for lk in self.lookups if lk.view in views and lk.kind == "seed"}
        stale: dict[str, list[int]] = {}
        for batch_id in batch_ids:
            for name, pin in self.pins.get(batch_id).items():
                lk = by_name.get(name)
                if lk is not None and pin.version != _seed_hash(lk):
                    stale.setdefault(name, []).append(batch_id)
        return [SeedChanged(name, ids[0], ids[-1], str(by_name[name].location))
                for name, ids in stale.items()]

    def close(self, spark: SparkSession) -> None:
        """Release the cached versions (their global temp views and cached data) at the end of
        the run: a long-lived session (tests, a notebook) must not keep them."""
        for cached in self._cache.values():
            spark.catalog.dropGlobalTempView(cached.view)
            cached.frame.unpersist()
        self._cache.clear()

    # -- per batch -------------------------------------------------------------------------
    def register(self, spark: SparkSession, batch_id: int, plan: Plan) -> dict[str, Pin]:
        """Pin (unless pinned) and register every lookup ``plan``'s steps read, in ``spark``
        (the batch's session). Returns the batch's pins of those lookups."""
        used = {v for s in plan.steps for v in s.lookups}
        needed = [lk for lk in self.lookups if lk.view in used]
        if not needed:
            return {}
        pins = self.pins.get(batch_id)
        new = {lk.name: self._new_pin(spark, lk) for lk in needed if lk.name not in pins}
        if new:  # recorded before any table commits the batch
            pins = self.pins.pin(batch_id, new)
        self.pins.fold(before=batch_id)  # runs of older batches (FOLD_EVERY files at a time)
        for lk in needed:
            self._frame(spark, lk, pins[lk.name], batch_id).createOrReplaceTempView(lk.view)
        return {lk.name: pins[lk.name] for lk in needed}

    def _new_pin(self, spark: SparkSession, lk: Lookup) -> Pin:
        if lk.kind == "seed":
            content_hash = _seed_hash(lk)
            if self.pins.seed(content_hash) is None:
                content = self._seeds.get(lk.name) or _seed_content(lk)
                self.pins.keep_seed(content_hash, content)
            return Pin("seed", content_hash, pinned_at=utc_now())
        version = self._latest(spark, lk)
        self._check_columns(spark, lk, version)
        where = as_location(lk.location.removeprefix("file://"))
        when = None if lk.catalog else commit_time(where, version)
        return Pin("source", version, pinned_at=utc_now(), committed_at=when)

    def _frame(self, spark: SparkSession, lk: Lookup, pin: Pin, batch_id: int) -> DataFrame:
        cached = self._cache.get(lk.name)
        database = spark.conf.get("spark.sql.globalTempDatabase", "global_temp")
        if cached is not None and cached.version == pin.version:
            return spark.table(f"{database}.{cached.view}")
        frame = self._read(spark, lk, pin, batch_id).persist()
        try:
            rows = frame.count()  # fills the cache: a vacuumed file fails here, not later
        except Exception as e:
            frame.unpersist()
            if lk.kind == "seed":  # the kept CSV is there: a cell does not fit its type
                raise ConfigError(f"seed {lk.name} (the content batch {batch_id} read) does "
                                  f"not fit its declared column types: {first_line(e)}",
                                  hint="fix the cell or the type in seeds/*.yml; the batch "
                                       "keeps the content it pinned, so restart with "
                                       "--full-refresh if it was pinned already") from e
            raise self._unreadable(lk, pin, batch_id, first_line(e)) from e
        hinted = frame.hint("broadcast") if rows <= self.broadcast_max_rows else frame
        view = f"runner_lookup_{lk.view}_{next(_serial)}"
        hinted.createOrReplaceGlobalTempView(view)
        if cached is not None:  # the version moved: the old one goes
            spark.catalog.dropGlobalTempView(cached.view)
            cached.frame.unpersist()
        self._cache[lk.name] = _Cached(pin.version, view, frame)
        return spark.table(f"{database}.{view}")

    # -- reading ---------------------------------------------------------------------------
    def _read(self, spark: SparkSession, lk: Lookup, pin: Pin, batch_id: int) -> DataFrame:
        if lk.kind == "seed":
            content = self.pins.seed(str(pin.version))
            if content is None:
                raise ConfigError(
                    f"seed {lk.name}: the content batch {batch_id} read (hash "
                    f"{str(pin.version)[:12]}) is not in the checkpoint",
                    hint="restore the checkpoint's pins/seeds folder; the runner never joins "
                         "another version of a seed")
            return seed_frame(spark, content)
        version = int(pin.version)
        if lk.catalog:
            return spark.read.option("versionAsOf", version).table(lk.location)
        self._check_readable(lk, pin, batch_id)
        if self.engine == "spark":
            return (spark.read.format("delta").option("versionAsOf", version)
                    .load(lk.location))
        return spark.createDataFrame(read_version(lk.location, version))

    def _check_readable(self, lk: Lookup, pin: Pin, batch_id: int) -> None:
        if lk.kind == "seed":
            if self.pins.seed(str(pin.version)) is None:
                raise self._unreadable(lk, pin, batch_id, "its content is not in the "
                                       "checkpoint (pins/seeds)")
            return
        if lk.catalog:
            return
        why = version_problem(lk.location, int(pin.version))
        if why is not None:
            raise self._unreadable(lk, pin, batch_id, why)

    @staticmethod
    def _unreadable(lk: Lookup, pin: Pin, batch_id: int, why: str) -> ConfigError:
        what = (f"version {pin.version}" if lk.kind == "source"
                else f"content {str(pin.version)[:12]}")
        return ConfigError(
            f"{lk.kind} {lk.name}: {what}, which batch {batch_id} read, can no longer be "
            f"read: {why}",
            hint="a replay, backfill or rebuild of a batch joins exactly the version the batch "
                 "read, never another: restore that version (or keep vacuum's retention "
                 "longer than the checkpoint's history), or start the pipeline afresh with "
                 "--full-refresh; nothing was written")

    def _latest(self, spark: SparkSession, lk: Lookup) -> int:
        if lk.catalog:
            try:
                row = spark.sql(f"DESCRIBE HISTORY {_quoted(lk.location)} LIMIT 1").first()
            except Exception as e:
                raise ConfigError(f"source {lk.name}: catalog table {lk.location} cannot be "
                                  f"read: {first_line(e)}",
                                  hint="create the table, or fix `table:` under sources") from e
            return int(row["version"]) if row is not None else 0
        version = table_version(lk.location)
        if version is None:
            raise ConfigError(f"source {lk.name}: no Delta table at {lk.location}",
                              hint="create the table, or fix `path:` of the source in "
                                   "models/*.yml; nothing was written")
        return version

    def _check_columns(self, spark: SparkSession, lk: Lookup, version: int) -> None:
        if self._checked.get(lk.name) == version or not lk.columns:
            return
        have = (spark.table(lk.location).columns if lk.catalog
                else columns_at(lk.location, version))
        present = {c.lower() for c in have}
        for column in lk.columns:
            if column.name.lower() in present:
                continue
            model = next((s.name for s in self.steps
                          if lk.view in s.lookups and _uses(s.sql, column.name)), None)
            if model is not None:
                raise ConfigError(
                    f"source {lk.name} lost column {column.name}, which model {model} uses "
                    f"(version {version} has: {', '.join(have)})",
                    hint="restore the column in the source, or change the model (and the "
                         "source's columns in models/*.yml); nothing was written")
        self._checked[lk.name] = version


def _uses(sql: str, column: str) -> bool:
    """Whether ``sql`` names ``column`` (or selects ``*``): sqlglot's AST, not text."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql, dialect="spark")
    except sqlglot.errors.SqlglotError:
        return True  # cannot tell: assume it does
    return any(isinstance(node, exp.Star) or (isinstance(node, exp.Column)
                                              and node.name.lower() == column.lower())
               for node in tree.walk())


def _quoted(name: str) -> str:
    return ".".join(f"`{part.replace('`', '``')}`" for part in name.split("."))


def _seed_content(lk: Lookup) -> SeedContent:
    try:
        text = Path(lk.location).read_bytes().decode("utf-8-sig")  # as compile reads it
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"seed {lk.name}: {lk.location} cannot be read: {e}",
                          hint="restore the seed's CSV file under seeds/") from e
    return SeedContent(lk.name, tuple((c.name, c.type) for c in lk.columns), text)


def _seed_hash(lk: Lookup) -> str:
    """The seed's version: the compiled content hash, or (none given) the hash of its CSV."""
    if lk.content_hash:
        return lk.content_hash
    return hashlib.sha256(_seed_content(lk).to_json().encode()).hexdigest()


def seed_frame(spark: SparkSession, content: SeedContent,
               rows: Iterable[Mapping[str, Any]] | None = None) -> DataFrame:
    """A seed's rows (its CSV, or ``rows``) as a DataFrame of its declared column types (an
    empty field is null; an undeclared or UNKNOWN type stays STRING).

    The rows reach the JVM as an Arrow table of strings: a Python list would be an RDD of
    pickled rows, whose first read forks Python workers that then stay up for the whole run
    (about 150 MB of resident memory beside the driver, for a few kilobytes of CSV;
    ``bench.sdp_bench``)."""
    import pyarrow as pa
    from pyspark.sql.types import StructType

    types = {n.lower(): t for n, t in content.columns}
    if rows is None:
        reader = csv.reader(io.StringIO(content.csv))
        header = next(reader, [])
        data = [tuple(v if v != "" else None for v in row) for row in reader if row]
    else:
        listed = list(rows)
        header = [n for n, _ in content.columns] or sorted({k for r in listed for k in r})
        data = [tuple(None if r.get(h) is None else str(r.get(h)) for h in header)
                for r in listed]
    ragged = next((row for row in data if len(row) != len(header)), None)
    if ragged is not None:  # compile refuses such a CSV; a kept copy could only be damaged
        raise ConfigError(f"seed {content.name}: a row has {len(ragged)} fields, the header "
                          f"{len(header)}")
    if header:
        frame = spark.createDataFrame(pa.Table.from_arrays(
            [pa.array([row[i] for row in data], pa.string()) for i in range(len(header))],
            names=header))
    else:  # no columns: nothing to read, nothing forks
        frame = spark.createDataFrame([], StructType([]))
    casts = []
    for i, h in enumerate(header):  # columns by position and casts as expressions: no SQL text
        spark_type = types.get(h.lower(), "STRING")
        column = frame[i]
        casts.append(column if spark_type.upper() in ("STRING", "UNKNOWN")
                     else column.cast(spark_type).alias(h))
    return frame.select(*casts)
