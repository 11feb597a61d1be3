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


def write_project(root: Path, files: Mapping[str, str], *, project_yml: str | None = None) -> Path:
    """Write ``project.yml`` (BASE_YML unless given) and ``files`` (path -> text) under root."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "project.yml").write_text(project_yml if project_yml is not None else BASE_YML)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root
