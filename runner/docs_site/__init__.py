"""``runner docs``: a static HTML site of the project under ``target/docs/``: the model DAG,
each model's SQL, config, output columns and types, column-level lineage from
``parsed_events`` fields, expectations, dead-letter settings and declared tests. Everything is
inline (no CDN, no server): open ``target/docs/index.html`` from disk."""

from __future__ import annotations

from runner.docs_site.lineage import ColumnLineage, column_lineage, plan_lineage
from runner.docs_site.site import DocsSite, build_site, dag_svg

__all__ = ["ColumnLineage", "DocsSite", "build_site", "column_lineage", "dag_svg",
           "plan_lineage"]
