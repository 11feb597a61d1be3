"""The compiled plan: frozen, ordered, serialisable. ``compile`` writes it; ``stream`` runs it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runner.compile.definition import Definition
from runner.compile.reads import ANY_READS, Reads
from runner.compile.relations import Relation
from runner.compile.sourcemap import SourceMap
from runner.project.config import ModelConfig

__all__ = ["HISTORY_COLUMNS", "Column", "Lookup", "Plan", "Step", "table_columns", "table_key"]

#: The columns an SCD 2 table has beyond its model's output (:mod:`runner.sinks.scd2`).
HISTORY_COLUMNS = ("valid_from", "valid_to")


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # Spark SQL type, e.g. 'STRING', 'STRUCT<a: INT>'; 'UNKNOWN' when not inferable


def table_columns(config: ModelConfig, columns: tuple[Column, ...]) -> tuple[Column, ...]:
    """The columns of a model's table: its output ``columns``, then those its kind adds
    (``stored_as_scd_type=2``: ``valid_from`` and ``valid_to``, of the ``sequence_by``
    column's type). A CDC (SCD 1) table holds the output columns alone: its tombstones live in
    a side table. What schema.yml may document and test, and what the docs site lists.

    >>> from runner.project.config import ModelConfig
    >>> c = ModelConfig(materialized="merge", unique_key=["id"], sequence_by="lsn",
    ...                 stored_as_scd_type=2)
    >>> [f"{x.name} {x.type}" for x in table_columns(c, (Column("id", "INT"),
    ...                                                  Column("lsn", "BIGINT")))]
    ['id INT', 'lsn BIGINT', 'valid_from BIGINT', 'valid_to BIGINT']
    """
    if config.sequence_by is None or config.stored_as_scd_type != 2:
        return columns
    seq = config.sequence_by.lower()
    kind = next((c.type for c in columns if c.name.lower() == seq), "UNKNOWN")
    return (*columns, *(Column(name, kind) for name in HISTORY_COLUMNS))


def table_key(config: ModelConfig) -> tuple[str, ...]:
    """The columns that identify a row of the model's table: the merge ``unique_key``, plus
    ``valid_from`` for an SCD 2 table (a row per version of a key); () for an append model."""
    if config.sequence_by is not None and config.stored_as_scd_type == 2:
        return (*config.unique_key, HISTORY_COLUMNS[0])
    return tuple(config.unique_key)


@dataclass(frozen=True)
class Lookup:
    """Reference data a model joins: a declared source (a Delta table) or a seed (a CSV file).

    Every batch reads each lookup at one pinned version (a source's Delta version when the batch
    first runs; a seed's content hash), recorded in the checkpoint before any table commits the
    batch, so every replay, backfill and rebuild of the batch joins the same rows
    (docs/OPERATIONS.md, "Sources and seeds: one version per batch").
    """

    kind: str  # "source" | "seed"
    name: str  # a source: "<source>.<table>" ("crm.customers"); a seed: its file stem
    view: str  # the per-batch temp view the compiled SQL reads ("crm__customers", "country_codes")
    location: str  # a source: the Delta table's absolute path or URI, or its catalog name;
    #                a seed: the CSV file's absolute path
    catalog: bool  # a source declared with ``table:`` (a catalog name)
    columns: tuple[Column, ...]
    content_hash: str | None = None  # a seed: sha256 of its CSV and declared types (its version)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "view": self.view,
                "location": self.location, "catalog": self.catalog,
                "columns": [{"name": c.name, "type": c.type} for c in self.columns],
                "content_hash": self.content_hash}


@dataclass(frozen=True)
class Step:
    """One model, ready to run: compiled SQL, config, dependencies, inferred output columns,
    and what its SQL reads (found once, at compile: :func:`runner.compile.reads.reads_of`).

    ``source_map`` is render's map of the compiled SQL back to the model's file (after Jinja
    loops, macros, a multi-line ``config()``): the runtime names the file's line of a position
    Spark's error gives in the compiled SQL
    (:func:`runner.runtime.batches.parking.source_position`), without rendering anything again. Not
    in the manifest: the compiled SQL is.
    """

    name: str
    path: str
    sql: str
    config: ModelConfig
    depends_on: tuple[str, ...]
    columns: tuple[Column, ...]
    reads: Reads = ANY_READS
    lookups: tuple[str, ...] = ()  # the views of the sources and seeds its SQL reads
    relation: Relation | None = None  # its name in the catalog (project.yml's catalog:)
    #: what its table is computed by: recorded with the batches it writes
    definition: Definition | None = field(default=None, compare=False)
    #: rendered SQL positions -> the model file's (None: a plan built without render)
    source_map: SourceMap | None = field(default=None, compare=False, repr=False)

    @property
    def table_columns(self) -> tuple[Column, ...]:
        """Its table's columns (:func:`table_columns`)."""
        return table_columns(self.config, self.columns)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": self.path,
            "compiled_path": f"target/compiled/{self.name}.sql",
            "relation_name": self.relation.dotted if self.relation else None,
            "config": self.config.model_dump(mode="json", by_alias=True),
            "depends_on": list(self.depends_on),
            "lookups": list(self.lookups),
            "columns": [{"name": c.name, "type": c.type} for c in self.columns],
            "definition": self.definition.to_dict() if self.definition else None,
        }


@dataclass(frozen=True)
class Plan:
    """Every selected model in dependency order, plus what the engine needs of the project.

    ``used_fields`` is the union of top-level event fields the steps read, or None when a
    model selects ``*`` from parsed_events (then every field is needed). ``lookups`` are the
    sources and seeds the steps read.
    """

    project: str
    source_type: str
    schema_ddl: str
    dead_letter: str
    steps: tuple[Step, ...]
    used_fields: tuple[str, ...] | None
    lookups: tuple[Lookup, ...] = ()
    #: steps whose inferred ``columns`` may lack some outputs (lint saw an open shape): names
    #: are never checked against them
    partial: frozenset[str] = frozenset()

    def step(self, name: str) -> Step:
        return next(s for s in self.steps if s.name == name)

    def to_manifest(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "source_type": self.source_type,
            "schema": self.schema_ddl,
            "dead_letter": self.dead_letter,
            "order": [s.name for s in self.steps],
            "used_fields": list(self.used_fields) if self.used_fields is not None else None,
            "models": {s.name: s.to_dict() for s in self.steps},
            "lookups": {lk.view: lk.to_dict() for lk in self.lookups},
        }
