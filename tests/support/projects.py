"""Dict-of-files fixture projects (dbt functional-test style) for tests."""

from __future__ import annotations

import hashlib
import os
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from runner.project.boundary import merged, migrate
from runner.project.profile import PROFILES_DIR_ENV, PROFILES_FILE

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
                  engine: str | None = None, target: Mapping[str, Any] | None = None) -> Path:
    """Write ``project.yml`` (BASE_YML unless given) and ``files`` (path -> text) under root.

    The deployment's keys in the YAML (and ``target``, a profile target's keys) go to a
    profile of this project's own (:func:`with_profile`).

    ``engine`` replaces the ``delta.engine`` of the YAML (BASE_YML says ``rs``): tests that
    prove exactly-once take it from the ``delta_engine`` fixture and so run on both engines.
    """
    root.mkdir(parents=True, exist_ok=True)
    yml = project_yml if project_yml is not None else BASE_YML
    if engine is not None:
        assert "  engine: rs\n" in yml, "engine= needs a project.yml with delta.engine: rs"
        yml = yml.replace("  engine: rs\n", f"  engine: {engine}\n")
    (root / "project.yml").write_text(with_profile(root, yml, target=target))
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def profiles_file() -> Path:
    """The test run's profiles.yml (``RUNNER_PROFILES_DIR``, set by tests/conftest.py)."""
    return Path(os.environ[PROFILES_DIR_ENV]) / PROFILES_FILE


def with_profile(root: Path, yml: str, *, target: Mapping[str, Any] | None = None) -> str:
    """project.yml's text without the deployment's keys (storage, master, brokers, client
    properties, metrics, locations outside the project: :func:`migrate`), which go to a
    profile of this project's own in the test run's profiles.yml (``profile:`` names it);
    ``yml`` unchanged when it holds none (or is not plain YAML: a template, a broken file)."""
    try:
        data = yaml.safe_load(yml)
    except yaml.YAMLError:
        return yml
    if not isinstance(data, dict):
        return yml
    profile = "t_" + hashlib.sha1(str(root.resolve()).encode()).hexdigest()[:12]
    project = migrate(data, profiles=profiles_file(), profile=profile, target=target)
    if project.get("profile") != profile:
        return yml
    return yaml.safe_dump(project, sort_keys=False, width=1000)


def update_target(root: Path, changes: Mapping[str, Any]) -> None:
    """Merge ``changes`` into the dev target of the profile ``root``'s project.yml names (one
    :func:`with_profile` wrote), as an operator edits a deployment's profile."""
    profile = yaml.safe_load((root / "project.yml").read_text())["profile"]
    data = yaml.safe_load(profiles_file().read_text()) or {}
    target = data[profile]["outputs"]["dev"]
    migrate({}, profiles=profiles_file(), profile=profile, target=merged(target, changes))
