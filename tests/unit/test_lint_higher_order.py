"""Higher-order functions given constants where their functions go, checked as Spark's
analyser checks them (runner/lint/checks/call_values.py): ``aggregate``/``reduce`` with a merge
constant whose type is not the start value's (Spark's ArrayAggregate wraps it in a lambda and
compares the types by ``equalsStructurally``; an empty ``map()`` is MAP<VOID, VOID> and an
empty ``array()`` ARRAY<VOID>, not the legacy STRING element type). The rule, the model file's
line and column, Spark's error class, and the valid neighbours left alone."""

from __future__ import annotations

from pathlib import Path

from tests.unit.test_lint import lint_errors, misreported

P = "FROM parsed_events"
ERROR = "[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE]"

#: name -> (SQL, (line, column) of the merge argument).
INVALID: dict[str, tuple[str, tuple[int, int]]] = {
    "empty_map": (f"SELECT AGGREGATE(ARRAY(1, 2, 3), MAP(), MAP('result', 999)) AS a {P}",
                  (1, 41)),
    "empty_array": (f"SELECT 1 AS x,\n  reduce(array(1, 2, 3), array(), array('result')) AS a {P}",
                    (2, 35)),
    "int_and_decimal": (f"SELECT aggregate(array(1), 0, 1.5) AS a {P}", (1, 31)),
}

VALID: dict[str, str] = {
    "same_types": f"SELECT AGGREGATE(ARRAY(1, 2, 3), 0, 100) AS a,\n"
                  f"  AGGREGATE(ARRAY(1), STRUCT('init' AS col1, 0 AS col2),\n"
                  f"    STRUCT('final' AS c, 999 AS d)) AS b,\n"
                  f"  AGGREGATE(ARRAY(1), ARRAY(ARRAY('')), (acc, x) -> ARRAY(ARRAY('x'))) AS c,\n"
                  f"  AGGREGATE(ARRAY(1), 0L, (acc, x) -> acc + x) AS d,\n"
                  f"  AGGREGATE(ARRAY(1), MAP(), (acc, x) -> MAP('a', x)) AS e {P}",
}


def test_merge_constants_of_another_type_are_flagged(tmp_path: Path) -> None:
    cases = {n: ("argument-type", sql, ERROR, place) for n, (sql, place) in INVALID.items()}
    assert misreported(tmp_path, cases) == {}


def test_merge_functions_spark_takes_are_not_flagged(tmp_path: Path) -> None:
    assert lint_errors(tmp_path, VALID) == []
