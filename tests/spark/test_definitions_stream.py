"""The new user's scenario, through the stream (issue: "a changed var mixes an accumulating
table silently"): a rebuild with ``--vars`` and then a plain run used to write the next
batch with project.yml's value into the same table. Now the plain run refuses the merge model
before its first batch (the table unchanged), an append model gets a message naming what
changed and from which batch, and ``runner status`` shows the mixed table.

rs engine only: the check and the record happen before the session and read only the
checkpoint's files; what the engines differ in (the writes) is covered elsewhere.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.build import compile_project
from runner.demo import write_demo_files
from runner.errors import ConfigError
from runner.events import DefinitionChanged, Event
from runner.ops.status import collect_status, status_lines
from runner.project.loader import command_line_vars, load_project
from runner.runtime.start.stream import run_stream
from runner.sinks.tables import current_version
from tests.support.projects import BASE_YML, write_project

pytestmark = pytest.mark.spark

REVENUE = """
{{ config(materialized='merge', unique_key='endpoint',
          merge_update={'net': 'target.net + source.net'}) }}
SELECT request.endpoint AS endpoint,
       CAST(sum(request.latency_ms) * (1 - {{ var('vat_rate') }}) AS DOUBLE) AS net
FROM parsed_events GROUP BY request.endpoint
"""
SLOW = "SELECT eventId FROM parsed_events WHERE request.latency_ms > {{ var('slow_ms') }}"
YML = BASE_YML.replace("vars:\n  slow_ms: 1000\n", "vars:\n  slow_ms: 1000\n  vat_rate: 0.2\n")


def _run(root: Path, *, vars: str | None = None, seen: list[Event] | None = None, **kw):
    with command_line_vars(vars):
        project = load_project(root)
        plan = compile_project(project).plan
    return run_stream(project, plan, mode="available_now", trigger="1 second",
                      report=(seen.append if seen is not None else lambda e: None), **kw)


def test_a_changed_var_is_refused_for_a_merge_and_named_for_an_append(tmp_path: Path) -> None:
    root = write_project(tmp_path / "proj", {"models/revenue.sql": REVENUE,
                                             "models/slow.sql": SLOW}, project_yml=YML)
    incoming = root / "incoming"
    write_demo_files(incoming, events=200, files=1, seed=1, poison_every=0)
    _run(root)
    # the rebuild with another rate: the table is now 0.1's from batch 0
    _run(root, vars='{"vat_rate": 0.1}', rebuild=["revenue"])
    write_demo_files(incoming, events=200, files=1, seed=2, poison_every=0)
    table = root / "wh" / "revenue"
    version = current_version(table)
    with pytest.raises(ConfigError, match=r"(?s)model revenue: its definition changed \(var "
                                          r"vat_rate: 0.1 -> 0.2\).*batches up to 0"):
        _run(root)  # the plain run: project.yml's 0.2
    assert current_version(table) == version  # refused before its first batch
    _run(root, vars='{"vat_rate": 0.1}')  # the definition the table was written with: fine
    assert current_version(table) > version

    # the append model's filter changes: a message before the batch, and status says so
    (root / "models" / "slow.sql").write_text(SLOW.replace("> {{ var('slow_ms') }}", "> 5"))
    write_demo_files(incoming, events=200, files=1, seed=3, poison_every=0)
    seen: list[Event] = []
    _run(root, vars='{"vat_rate": 0.1}', seen=seen)
    (changed,) = [e for e in seen if isinstance(e, DefinitionChanged)]
    assert (changed.model, changed.since, changed.action) == ("slow", 2, "warn")
    assert "its SQL (models/slow.sql)" in changed.what
    lines = "\n".join(status_lines(collect_status(load_project(root))))
    assert "MIXED: from batch 2 another definition (var slow_ms: 1000 -> (not read); its " \
           "SQL (models/slow.sql))" in lines, lines
