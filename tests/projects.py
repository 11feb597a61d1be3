"""Dict-of-files fixture projects (dbt functional-test style) for tests."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Mapping

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

REPO_ROOT = Path(__file__).resolve().parent.parent

#: The repository's example project (models and macros) as a dict of files.
EXAMPLE_FILES = {f"{d}/{p.name}": p.read_text()
                 for d in ("models", "macros") for p in sorted((REPO_ROOT / d).glob("*.sql"))}

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


def write_project(root: Path, files: Mapping[str, str], *, project_yml: str | None = None) -> Path:
    """Write ``project.yml`` (BASE_YML unless given) and ``files`` (path -> text) under root."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "project.yml").write_text(project_yml if project_yml is not None else BASE_YML)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root
