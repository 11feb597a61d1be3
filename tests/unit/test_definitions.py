"""Model definitions pinned per batch (runner/compile/definition.py, runner/checkpoint/
definitions.py, runner/runtime/start/definitions.py) and ``--vars`` keys nobody reads.

The finding: ``--full-refresh --select product_revenue --vars '{"vat_rate": 0.1}'`` rebuilt
batches 0-4 with 0.1; the next plain run wrote batch 5 with project.yml's 0.2 without a word.
These tests need no Spark: the check reads the checkpoint's files only (Spark's ``commits/``
log, the registry and the record), so the checkpoint here is written by hand; the stream's
own run of the scenario is tests/spark/test_definitions_stream.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from runner.build import compile_project
from runner.checkpoint.definitions import load_definitions, save_definitions
from runner.checkpoint.registry import Entry, save_registry
from runner.cli import cli
from runner.compile.definition import changes
from runner.errors import ConfigError
from runner.events import DefinitionChanged, Event
from runner.project.loader import command_line_vars, load_project
from runner.runtime.start.definitions import check_definitions, record_definitions
from tests.support.projects import BASE_YML, write_project

REVENUE = """
{{ config(materialized='merge', unique_key='endpoint',
          merge_update={'net': 'target.net + source.net'}) }}
SELECT request.endpoint AS endpoint, sum(request.latency_ms) * (1 - {{ var('vat_rate') }}) AS net
FROM parsed_events GROUP BY request.endpoint
"""
APPEND = "SELECT eventId FROM parsed_events WHERE request.latency_ms > {{ var('slow_ms') }}"
MACRO = "{% macro rate() %}{{ var('vat_rate') }}{% endmacro %}"
YML = BASE_YML.replace("vars:\n  slow_ms: 1000\n", "vars:\n  slow_ms: 1000\n  vat_rate: 0.2\n")


def _project(root: Path, revenue: str = REVENUE, macro: str = MACRO, *, vars: str | None = None):
    write_project(root, {"models/revenue.sql": revenue, "models/slow.sql": APPEND,
                         "macros/rate.sql": macro}, project_yml=YML)
    with command_line_vars(vars):
        project = load_project(root)
        return project, compile_project(project).plan


def _commit(checkpoint: Path, *batches: int) -> None:
    """Spark's commit log entries for ``batches`` (what ``last_committed`` reads)."""
    (checkpoint / "commits").mkdir(parents=True, exist_ok=True)
    for b in batches:
        (checkpoint / "commits" / str(b)).write_text("v1\n{}\n")


def test_a_var_a_macro_or_the_sql_changes_the_definition_and_says_which(tmp_path) -> None:
    _, plan = _project(tmp_path / "a")
    base = plan.step("revenue").definition
    assert base is not None and dict(base.vars) == {"vat_rate": "0.2"}
    _, other = _project(tmp_path / "b", vars='{"vat_rate": 0.1}')
    assert changes(base.to_dict(), other.step("revenue").definition.to_dict(),
                   path="models/revenue.sql") == ["var vat_rate: 0.2 -> 0.1"]
    # the same var through a macro: the macro file is part of the definition
    through = REVENUE.replace("{{ var('vat_rate') }}", "{{ rate() }}")
    _, a = _project(tmp_path / "c", through)
    _, b = _project(tmp_path / "d", through, MACRO.replace("var('vat_rate')", "0.3"))
    what = changes(a.step("revenue").definition.to_dict(),
                   b.step("revenue").definition.to_dict(), path="models/revenue.sql")
    assert "macro file macros/rate.sql" in what and "var vat_rate: 0.2 -> (not read)" in what
    assert dict(a.step("revenue").definition.macros).keys() == {"macros/rate.sql"}
    _, c = _project(tmp_path / "e", REVENUE.replace("1 - ", "1.0 - "))
    assert changes(base.to_dict(), c.step("revenue").definition.to_dict(),
                   path="models/revenue.sql") == ["its SQL (models/revenue.sql)"]
    # nothing changed: same fingerprint, whatever the folder
    assert changes(base.to_dict(), a.step("slow").definition.to_dict(), path="x") != []
    _, same = _project(tmp_path / "f")
    assert same.step("revenue").definition.fingerprint == base.fingerprint


def _started(tmp_path: Path, *, vars: str | None = None):
    """A checkpoint whose batches 0-4 were written by project.yml's definitions."""
    project, plan = _project(tmp_path / "proj")
    checkpoint = project.checkpoint
    _commit(checkpoint, 0, 1, 2, 3, 4)
    save_registry(checkpoint, {"revenue": Entry("live"), "slow": Entry("live")})
    save_definitions(checkpoint, {s.name: [{"since": 0, **s.definition.to_dict()}]
                                  for s in plan.steps})
    if vars is not None:
        project, plan = _project(tmp_path / "proj", vars=vars)
    return project, plan


def test_a_merge_model_is_refused_before_anything_is_written(tmp_path) -> None:
    project, plan = _started(tmp_path, vars='{"vat_rate": 0.1}')
    with pytest.raises(ConfigError) as e:
        check_definitions(project.checkpoint, plan, default=None, rebuild=(), report=print)
    message = str(e.value)
    assert "model revenue: its definition changed (var vat_rate: 0.2 -> 0.1)" in message
    assert "holds batches up to 4" in message
    assert "--full-refresh --select revenue" in message
    # a rebuild asked on the command line is no change to refuse
    assert check_definitions(project.checkpoint, plan, default=None, rebuild=("revenue",),
                             report=print) == frozenset()


def test_warn_and_rebuild_policies(tmp_path) -> None:
    project, plan = _started(tmp_path)
    # the append model changed (its SQL); its default policy warns
    seen: list[Event] = []
    write_project(tmp_path / "proj", {"models/slow.sql": APPEND.replace("{{ var('slow_ms') }}",
                                                                        "5")}, project_yml=YML)
    plan2 = compile_project(load_project(tmp_path / "proj")).plan
    assert check_definitions(project.checkpoint, plan2, default=None, rebuild=(),
                             report=seen.append) == frozenset()
    assert len(seen) == 1, [(e.model, e.what) for e in seen if isinstance(e, DefinitionChanged)]
    (event,) = seen
    assert isinstance(event, DefinitionChanged)
    assert (event.model, event.last_batch, event.since, event.action) == ("slow", 4, 5, "warn")
    assert event.what == ("var slow_ms: 1000 -> (not read)", "its SQL (models/slow.sql)")
    # project.yml's default, and the model's own config over it
    assert check_definitions(project.checkpoint, plan2, default="rebuild", rebuild=(),
                             report=seen.append) == {"slow"}
    with pytest.raises(ConfigError, match="model slow"):
        check_definitions(project.checkpoint, plan2, default="refuse", rebuild=(),
                          report=seen.append)


def test_the_record_appends_replaces_unwritten_runs_and_restarts_on_rebuild(tmp_path) -> None:
    project, plan = _started(tmp_path, vars='{"vat_rate": 0.1}')
    cp = project.checkpoint
    record_definitions(cp, plan, rebuilt=(), full_refresh=False)
    runs = load_definitions(cp)["revenue"]
    assert [r["since"] for r in runs] == [0, 5] and runs[1]["vars"] == {"vat_rate": "0.1"}
    # a start that never committed batch 5, then another definition: the unwritten run goes
    _, plan3 = _project(tmp_path / "proj", vars='{"vat_rate": 0.3}')
    record_definitions(cp, plan3, rebuilt=(), full_refresh=False)
    runs = load_definitions(cp)["revenue"]
    assert [(r["since"], r["vars"]["vat_rate"]) for r in runs] == [(0, "0.2"), (5, "0.3")]
    # ... and the check compares with what wrote the batches (0.2), not the unwritten run
    with pytest.raises(ConfigError, match=r"var vat_rate: 0.2 -> 0.3"):
        check_definitions(cp, plan3, default=None, rebuild=(), report=print)
    # a rebuild starts the record again at the batch the rebuild starts from
    save_registry(cp, {"revenue": Entry("backfilling", start=0, drop=True),
                       "slow": Entry("live")})
    record_definitions(cp, plan3, rebuilt=("revenue",), full_refresh=False)
    assert [(r["since"], r["vars"]["vat_rate"])
            for r in load_definitions(cp)["revenue"]] == [(0, "0.3")]
    assert json.loads((cp / "runner.definitions.json").read_text())["version"] == 1


def test_status_names_a_table_written_by_two_definitions(tmp_path) -> None:
    project, plan = _started(tmp_path, vars='{"vat_rate": 0.1}')
    record_definitions(project.checkpoint, plan, rebuilt=(), full_refresh=False)
    _commit(project.checkpoint, 5)
    from runner.ops.status import _mixed

    assert _mixed(project, project.checkpoint, committed=5) == {
        "revenue": ((5, "var vat_rate: 0.2 -> 0.1"),)}
    assert _mixed(project, project.checkpoint, committed=4) == {}  # batch 5 not written yet


def test_unknown_vars_keys_are_an_error_naming_them(tmp_path) -> None:
    root = write_project(tmp_path, {"models/revenue.sql": REVENUE, "models/slow.sql": APPEND},
                         project_yml=YML)
    result = CliRunner().invoke(cli, ["compile", "--project-dir", str(root),
                                      "--vars", '{"vat_rat": 0.1}'])
    assert result.exit_code == 2, result.output
    assert "--vars: 'vat_rat' is read by no model and not in project.yml's vars: " \
           "(did you mean 'vat_rate'?)" in result.output
    # a var a model reads with a default, not in project.yml: fine
    write_project(tmp_path, {"models/m.sql": "SELECT '{{ var('label', 'x') }}' AS l, eventId "
                                             "FROM parsed_events"}, project_yml=YML)
    result = CliRunner().invoke(cli, ["compile", "--project-dir", str(root),
                                      "--vars", '{"label": "y"}'])
    assert result.exit_code == 0, result.output


def test_comments_layout_and_tags_are_no_new_definition(tmp_path) -> None:
    _, plan = _project(tmp_path / "a")
    edited = ("-- net revenue per endpoint\n" + REVENUE.replace(
        "materialized='merge',", "materialized='merge', tags=['finance'],")
        .replace("FROM parsed_events GROUP BY", "FROM parsed_events\n    GROUP  BY"))
    _, other = _project(tmp_path / "b", edited)
    assert other.step("revenue").definition.fingerprint == \
        plan.step("revenue").definition.fingerprint
    assert other.step("revenue").definition.sql != plan.step("revenue").definition.sql
    # ... but a literal for a column is
    _, literal = _project(tmp_path / "c", REVENUE.replace("AS endpoint", "AS `endpoint`")
                          .replace("request.endpoint AS", "'request.endpoint' AS"))
    assert literal.step("revenue").definition.fingerprint != \
        plan.step("revenue").definition.fingerprint


def test_a_parked_merge_models_fix_is_warned_not_refused(tmp_path) -> None:
    """Parking's way out is "fix the SQL and run again": the fix is a new definition, and
    refusing it would leave a parked merge model no way back but a rebuild."""
    project, plan = _started(tmp_path, vars='{"vat_rate": 0.1}')
    save_registry(project.checkpoint, {"revenue": Entry("parked", left_at=3),
                                       "slow": Entry("live")})
    seen: list[Event] = []
    assert check_definitions(project.checkpoint, plan, default=None, rebuild=(),
                             report=seen.append) == frozenset()
    (event,) = seen
    assert (event.model, event.since, event.last_batch, event.action) == ("revenue", 3, 2, "warn")
