"""A parked model's error names the model file's line, as compile's messages do (issue 47).

Spark's error points into the SQL it ran: the compiled SQL, whose lines are not the file's once
a multi-line ``config()`` renders as nothing, a Jinja loop repeats lines or a macro expands.
Two models divide by zero (ANSI) on every event of one batch: one in its own SQL under a
config block, comments and a loop, one inside a macro's expansion. The parked errors (the
event's text, the registry's record that ``runner status`` shows) name
``models/<file>.sql:<line>:<col>`` of the file, and the macro. One stream on the rs engine:
the position comes from Spark's error while it computes the rows, before any Delta write, so
the engine does not change it (the halt path on both engines: tests/faults/test_parking.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.build import compile_project
from runner.checkpoint.registry import load_registry
from runner.demo import write_demo_files
from runner.events import Event, ModelParked
from runner.ops.status import collect_status, status_lines
from runner.project.loader import load_project
from runner.runtime.start.stream import run_stream
from tests.support.projects import BASE_YML, write_project

pytestmark = pytest.mark.spark

YML = BASE_YML + "spark:\n  conf:\n    spark.sql.ansi.enabled: true\n"

# Line 10, column 8 of the file; line 7 of the compiled SQL (the config block renders as
# nothing, the loop's whitespace control joins lines).
OWN = """\
{{ config(
    on_model_error='park',
    tags=['fragile']
) }}
-- one ratio per event
{%- for n in [1, 2, 3] %}
-- column {{ n }}
{%- endfor %}
SELECT eventId,
       100 / (request.latency_ms - request.latency_ms) AS ratio
FROM parsed_events
"""

# The call is at line 5, column 8 of the file; the division at line 6 of the compiled SQL.
VIA_MACRO = """\
-- the same ratio, through a macro
{{ config(on_model_error='park') }}

SELECT eventId,
       {{ zero_ratio('request.latency_ms') }} AS ratio
FROM parsed_events
"""

MACRO = """\
{% macro zero_ratio(column) %}
  100 / ({{ column }} - {{ column }})
{% endmacro %}
"""


def test_a_parked_models_error_names_the_model_files_line(tmp_path: Path) -> None:
    files = {"models/own.sql": OWN, "models/via_macro.sql": VIA_MACRO,
             "macros/zero_ratio.sql": MACRO}
    root = write_project(tmp_path / "proj", files, project_yml=YML)
    write_demo_files(root / "incoming", events=20, files=1, seed=7, poison_every=1000)
    project = load_project(root)
    plan = compile_project(project).plan
    own_sql = plan.step("own").sql.splitlines()
    assert own_sql.index("       100 / (request.latency_ms - request.latency_ms) AS ratio") \
        != 9  # the compiled SQL's line differs from the file's (line 10)
    events: list[Event] = []
    summary = run_stream(project, plan, mode="available_now", trigger="1 second",
                         report=events.append)

    own = "models/own.sql:10:8"
    macro = "models/via_macro.sql:5:8"
    parked = {e.model: e.error for e in events if isinstance(e, ModelParked)}
    assert set(parked) == {"own", "via_macro"}, events
    assert parked["own"].startswith("[DIVIDE_BY_ZERO] Division by zero.")
    assert parked["own"].endswith(f"bypass this error. (at {own})"), parked
    # the call's place in the model, and the line of the macro's body, as compile names them
    assert parked["via_macro"].endswith(
        f"(at {macro}, in macro zero_ratio, macros/zero_ratio.sql:2, called at line 5)"), parked
    assert summary.parked["own"].text == parked["own"]
    registry = load_registry(root / "cp")
    assert registry is not None
    assert own in (registry["own"].error or "")
    assert macro in (registry["via_macro"].error or "")
    lines = status_lines(collect_status(load_project(root)))
    assert any("PARKED since batch 0" in line and own in line for line in lines), lines
