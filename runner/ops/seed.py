"""``runner seed``: each seed (``seeds/<name>.csv``) written as a Delta table at
``<warehouse>/<name>``, once per content, as dbt's ``dbt seed`` loads seeds into tables.

A seed's version is its content hash (:attr:`runner.project.seeds.Seed.content_hash`: the CSV's
bytes and its declared types). A write replaces the table's rows with the CSV's (typed as the
models see them) in one delta-rs commit that carries the hash in its commit info and an
application transaction ``runner-seed:<project>:<seed>`` whose version counts the seed's
writes. Before writing, the table's latest seed commit is read: the same hash, nothing is
written (running ``runner seed`` twice leaves one version per content); a changed CSV writes a
new version. Two runs racing on one table: delta-rs' conflict check fails the second commit
(the same transaction id), which then finds the hash written and reports it unchanged.

Written with delta-rs on every engine: a seed is small (at most 50 MB) and written by one
process, and delta-rs' conditional commit is what the runner's maintenance uses on object
storage too (delta-spark's S3 log store is single-writer per table). With ``catalog:`` the
table is registered by name as a model's is (:mod:`runner.runtime.catalog`), which takes a
Spark session with the metastore; without it, no JVM starts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from runner.compile.selection import select_names
from runner.project.loader import Project
from runner.project.seed_arrow import seed_table
from runner.project.seeds import Seed

__all__ = ["SeedResult", "seed_app_id", "seed_project", "seed_table"]

def seed_app_id(project: Project, seed: Seed) -> str:
    """The application transaction id of a seed's writes."""
    return f"runner-seed:{project.config.name}:{seed.name}"


Outcome = Literal["written", "unchanged"]


@dataclass(frozen=True)
class SeedResult:
    """One seed: written (a new version) or unchanged (its content was the table's)."""

    seed: str
    path: str
    outcome: Outcome
    version: int
    rows: int
    content_hash: str
    registered: str | None = None  # the catalog name, when catalog: is set


@dataclass
class SeedReport:
    results: list[SeedResult] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"seeds": {r.seed: {"path": r.path, "outcome": r.outcome, "version": r.version,
                                   "rows": r.rows, "content_hash": r.content_hash,
                                   "registered": r.registered} for r in self.results}}

    def lines(self) -> list[str]:
        out = [f"{r.outcome:<9} {r.seed}: {r.rows:,} rows, version {r.version} -> {r.path}"
               + (f" ({r.registered})" if r.registered else "") for r in self.results]
        written = sum(r.outcome == "written" for r in self.results)
        return [*out, f"{len(self.results)} seed(s): {written} written, "
                      f"{len(self.results) - written} unchanged"]


def write_seed(project: Project, seed: Seed) -> SeedResult:
    """Write one seed's table unless it holds this content already (see the module doc)."""
    from runner.sinks.seed_tables import write_seed_table

    path = str(project.table_path(seed.name))
    outcome, version = write_seed_table(path, lambda: seed_table(seed),
                                        app_id=seed_app_id(project, seed),
                                        content_hash=seed.content_hash)
    return SeedResult(seed.name, path, outcome, version, seed.rows, seed.content_hash)


def seed_project(project: Project, *, select: Sequence[str] = (),
                 register: Callable[[Sequence[SeedResult]], dict[str, str]] | None = None
                 ) -> SeedReport:
    """Write the selected seeds (all without ``select``; names or ``tag:``-less selectors).

    Args:
        register: registers the tables by name: seed -> its catalog name (default, with
            ``catalog:`` in project.yml: :func:`runner.runtime.catalog.register_seeds`).

    Raises:
        ConfigError: a selector names no seed; a cell does not fit its type.
    """
    seeds = {s.name: s for s in project.seeds}
    chosen = select_names(select, edges={s: [] for s in seeds}, tags={s: [] for s in seeds}) \
        if select else set(seeds)
    report = SeedReport([write_seed(project, seeds[name]) for name in sorted(chosen)])
    if register is None and project.config.catalog is not None:
        from runner.runtime.catalog import register_seeds

        def register(results: Sequence[SeedResult]) -> dict[str, str]:
            return register_seeds(project, [r.seed for r in results], report=lambda e: None)
    if register is not None and report.results:
        names = register(report.results)
        report.results = [SeedResult(**{**r.__dict__, "registered": names.get(r.seed)})
                          for r in report.results]
    return report
