"""``runner compile --analyze``: each model through Spark's parser and analyser over an empty
``parsed_events`` (:func:`runner.runtime.start.analysis.analyse_project`, the path ``runner
stream`` takes before its first batch), on the suite's shared session: a model compile passes
but Spark refuses is a model error at its file's line, with Spark's error class; a model that
refs it is refused too; refs and seeds are empty frames of their columns."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from runner.build import compile_project
from runner.project.loader import load_project
from runner.runtime.start.analysis import analyse_project
from tests.support.projects import write_project

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

FILES = {
    # size() of a VARIANT: lint leaves VARIANT values alone (it does not model their
    # coercions), so compile passes it; Spark's analyser refuses it (size takes an array or a
    # map: UNEXPECTED_INPUT_TYPE)
    "models/flagged.sql": "SELECT eventId,\n"
                          "  request.endpoint AS endpoint,\n"
                          "  size(parse_json(request.endpoint)) AS flag\n"
                          "FROM parsed_events\n",
    "models/after_flagged.sql": "SELECT eventId FROM {{ ref('flagged') }}\n",
    "models/requests.sql": "SELECT eventId, request.endpoint AS endpoint FROM parsed_events\n",
    "models/owned.sql": "SELECT r.eventId, o.team\n"
                        "FROM {{ ref('requests') }} r\n"
                        "JOIN {{ ref('owners') }} o ON r.endpoint = o.endpoint\n",
    "seeds/owners.csv": "endpoint,team\n/checkout,payments\n",
}


def test_analyze_reports_what_spark_refuses_at_the_model_line(
        spark: SparkSession, tmp_path: Path) -> None:
    project = load_project(write_project(tmp_path, FILES))
    result = compile_project(project)
    assert result.ok, result.violations  # compile alone passes every model

    found = analyse_project(project, result.plan, spark=spark)

    by_path = {v.path: v for v in found}
    assert sorted(by_path) == ["models/after_flagged.sql", "models/flagged.sql"]
    flagged = by_path["models/flagged.sql"]
    assert (flagged.rule, flagged.severity, flagged.line) == ("spark-analysis", "error", 3)
    assert "[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE]" in flagged.message and "flagged" in flagged.message
    assert "RUNNER_REF_REFUSED" in by_path["models/after_flagged.sql"].message
