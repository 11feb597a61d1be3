"""Interval literals read as Spark's ``IntervalUtils`` and AST builder read them
(runner/lint/sql/interval_strings.py, literals.py): unit-to-unit strings trimmed of ASCII whitespace
and matched against one pattern per pair of units, their fields in range and their totals
exact; a count of days a day-time interval holds. The rule, the model file's line and column,
Spark's error class, and the valid neighbours left alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.lint.sql.interval_strings import days_overflow, unit_to_unit_problem
from tests.unit.test_lint import lint_errors, misreported

P = "FROM parsed_events"
YM = "INVALID_INTERVAL_FORMAT.UNMATCHED_FORMAT_STRING"
DT = "INVALID_INTERVAL_FORMAT.UNMATCHED_FORMAT_STRING_WITH_NOTICE"
PARSING = "INVALID_INTERVAL_FORMAT.INTERVAL_PARSING"
OUT = "_LEGACY_ERROR_TEMP_0063"


@pytest.mark.parametrize(("text", "unit", "negated", "error"), [
    ("178956970-8", "YEAR TO MONTH", False, PARSING),  # 2^31 months
    ("178956971-0", "YEAR TO MONTH", True, PARSING),  # years past Int.MaxValue / 12
    ("1-12", "YEAR TO MONTH", False, PARSING),  # months 0-11
    ("-\t2-2\t", "YEAR TO MONTH", False, YM),  # a tab after the sign: no match
    ("1", "YEAR TO MONTH", False, YM),
    ("1 2", "YEAR TO MONTH", False, YM),
    ("\n-\t10\t 12:34:46.789\t", "DAY TO SECOND", False, DT),
    ("1  2", "DAY TO HOUR", False, DT),  # one space between day and hour
    ("20 15:40:32.99", "DAY TO HOUR", False, DT),
    ("1 2:03", "DAY TO SECOND", False, DT),
    ("15:40", "HOUR TO SECOND", False, DT),
    ("1 24", "DAY TO HOUR", False, OUT),  # hours 0-23
    ("1 2:60", "DAY TO MINUTE", False, OUT),
    ("106751992 04", "DAY TO HOUR", False, OUT),
    ("2562047789:00", "HOUR TO MINUTE", True, OUT),
    ("106751991 23:59:59", "DAY TO SECOND", False, OUT),  # the total past a LONG
])
def test_unit_to_unit_strings_spark_refuses(text: str, unit: str, negated: bool,
                                             error: str) -> None:
    found = unit_to_unit_problem(text, unit, negated=negated)
    assert found is not None and found[0] == error


@pytest.mark.parametrize(("text", "unit", "negated"), [
    ("178956970-7", "YEAR TO MONTH", False), ("-178956970-8", "YEAR TO MONTH", False),
    ("178956970-8", "YEAR TO MONTH", True), ("2-2\t", "YEAR TO MONTH", False),
    ("|1-2", "YEAR TO MONTH", False),  # Spark's [+|-]
    ("\n0 12:34:46.789\t", "DAY TO SECOND", False), ("1 2:3:99", "DAY TO SECOND", False),
    ("106751991 04:00:54.775807", "DAY TO SECOND", False),
    ("-106751991 04:00:54.775808", "DAY TO SECOND", False),
    ("153722867280:54.775807", "MINUTE TO SECOND", False),
    ("-153722867280:54.775808", "MINUTE TO SECOND", False),
    ("12:12:12.123456789", "HOUR TO SECOND", False),
    ("interval '1-2' year to month", "YEAR TO MONTH", False),  # Spark reads that too
])
def test_unit_to_unit_strings_spark_takes(text: str, unit: str, negated: bool) -> None:
    assert unit_to_unit_problem(text, unit, negated=negated) is None


def test_day_counts_past_a_day_time_interval() -> None:
    assert days_overflow("2147483647", "DAY", negated=False)
    assert days_overflow("106751992", "DAY", negated=True)
    assert days_overflow("15250285", "WEEK", negated=False)
    assert days_overflow("106751991", "DAY", negated=False) is None
    assert days_overflow("2147483648", "DAY", negated=False) is None  # another error: not here
    assert days_overflow("2147483647", "HOUR", negated=False) is None


#: name -> (SQL, Spark's error class, (line, column)); all invalid-literal.
INVALID: dict[str, tuple[str, str, tuple[int, int]]] = {
    "ym_overflow": (f"SELECT 1 AS a,\n  INTERVAL '178956970-8' YEAR TO MONTH AS i {P}", PARSING,
                    (2, 3)),
    "ym_tab": (f"SELECT INTERVAL '-\\t2-2\\t' YEAR TO MONTH AS i {P}", YM, (1, 8)),
    "dt_tabs": (f"SELECT INTERVAL '\\n-\\t10\\t 12:34:46.789\\t' DAY TO SECOND AS i {P}", DT,
                (1, 8)),
    "days_times_two": (f"SELECT INTERVAL '2147483647' DAY * 2 AS i {P}",
                       "INTERVAL_ARITHMETIC_OVERFLOW.WITHOUT_SUGGESTION", (1, 8)),
}

VALID: dict[str, str] = {
    "intervals": f"SELECT INTERVAL '2-2\\t' YEAR TO MONTH AS a, INTERVAL -'178956970-8' YEAR TO "
                 f"MONTH AS b,\n  INTERVAL '\\n0 12:34:46.789\\t' DAY TO SECOND AS c,\n"
                 f"  INTERVAL '-\\t 1' DAY AS d, INTERVAL '106751991' DAY AS e,\n"
                 f"  INTERVAL '2147483647' MONTH * 2 AS f {P}",
}


def test_invalid_interval_literals_are_flagged_where_they_are(tmp_path: Path) -> None:
    cases = {n: ("invalid-literal", sql, f"[{error}]", place)
             for n, (sql, error, place) in INVALID.items()}
    assert misreported(tmp_path, cases) == {}


def test_valid_interval_literals_are_not_flagged(tmp_path: Path) -> None:
    assert lint_errors(tmp_path, VALID) == []
