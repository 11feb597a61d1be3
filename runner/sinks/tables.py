"""Read back what landed, with delta-rs (no Spark): row counts, versions, sample rows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from runner.project.loader import Project

__all__ = ["TableInfo", "describe_tables", "read_table"]


@dataclass(frozen=True)
class TableInfo:
    name: str
    path: str
    exists: bool
    rows: int = 0
    version: int | None = None
    columns: tuple[str, ...] = ()
    sample: tuple[dict[str, Any], ...] = ()


def read_table(path: str) -> Any:
    """A Delta table as a pyarrow Table (through the dataset: see DESIGN 'Facts' on exit 134)."""
    from deltalake import DeltaTable

    return DeltaTable(path).to_pyarrow_dataset().to_table(use_threads=False)


def describe_tables(project: Project, *, limit: int = 3) -> list[TableInfo]:
    """Every enabled model's table plus the dead-letter table, in name order."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    names = [m.name for m in project.models] + [project.config.dead_letter]
    out = []
    for name in names:
        path = str(project.table_path(name))
        try:
            table = DeltaTable(path)
        except TableNotFoundError:
            out.append(TableInfo(name, path, exists=False))
            continue
        dataset = table.to_pyarrow_dataset()
        sample = dataset.head(limit).to_pylist() if limit else []
        out.append(TableInfo(name, path, True, dataset.count_rows(), table.version(),
                             tuple(dataset.schema.names), tuple(sample)))
    return out
