"""Dict-of-files fixture projects (dbt functional-test style) for tests."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path

EVENT_SCHEMA = (
    "eventId STRING NOT NULL, timestamp TIMESTAMP NOT NULL, "
    "user STRUCT<userId: STRING, country: STRING>, "
    "request STRUCT<endpoint: STRING, method: STRING, latency_ms: INT, status_code: INT>, "
    "errors ARRAY<STRUCT<errorCode: STRING, severity: STRING>>"
)

BASE_YML = f"""\
name: test_pipeline
source:
  type: files
  path: incoming
schema: >-
  {EVENT_SCHEMA}
warehouse: wh
checkpoint: cp
delta:
  engine: rs
spark:
  master: local[2]
vars:
  slow_ms: 1000
"""

REPO_ROOT = Path(__file__).resolve().parents[2]

#: The repository's example project (models, macros and seeds) as a dict of files.
EXAMPLE_FILES = {f"{d}/{p.name}": p.read_text()
                 for d, pattern in (("models", "*.sql"), ("macros", "*.sql"), ("seeds", "*.*"))
                 for p in sorted((REPO_ROOT / d).glob(pattern))}

#: An accumulating merge: replaying a batch into it twice would double its counts.
ENDPOINT_COUNTS = """
{{ config(materialized='merge', unique_key='endpoint',
          merge_update={'requests': 'target.requests + source.requests',
                        'errors': 'target.errors + source.errors'}) }}
SELECT request.endpoint AS endpoint, count(*) AS requests,
       count_if(request.status_code >= 500) AS errors
FROM parsed_events
GROUP BY request.endpoint
"""

#: An append model that reads another model (a ``ref``): a backfill computes
#: performance_metrics from its logic (not its table) to feed it.
SLOW_REQUESTS = """
SELECT eventId, endpoint, latency_ms FROM {{ ref('performance_metrics') }} WHERE is_slow
"""


def write_project(root: Path, files: Mapping[str, str], *, project_yml: str | None = None,
                  engine: str | None = None) -> Path:
    """Write ``project.yml`` (BASE_YML unless given) and ``files`` (path -> text) under root.

    ``engine`` replaces the ``delta.engine`` of the YAML (BASE_YML says ``rs``): tests that
    prove exactly-once take it from the ``delta_engine`` fixture and so run on both engines.
    """
    root.mkdir(parents=True, exist_ok=True)
    yml = project_yml if project_yml is not None else BASE_YML
    if engine is not None:
        assert "  engine: rs\n" in yml, "engine= needs a project.yml with delta.engine: rs"
        yml = yml.replace("  engine: rs\n", f"  engine: {engine}\n")
    (root / "project.yml").write_text(yml)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root
