"""Two of Spark's analyser checks that lean on name resolution (runner/lint/checks/signatures.py,
generators.py): only an array, map or struct is indexed (``HAVING col1[0]`` reads the
aggregate's input column first, as Spark does, while ORDER BY may read the select list's
alias: [INVALID_EXTRACT_BASE_FIELD_TYPE]); a generator reads no lateral column alias of an
earlier non-generator item in a SELECT that does not aggregate (Spark 4.2: [INTERNAL_ERROR]).
The rule, the model file's line and column, Spark's error class, and the valid neighbours."""

from __future__ import annotations

from pathlib import Path

from tests.unit.test_lint import lint_errors, misreported

P = "FROM parsed_events"
T = "FROM (SELECT 'a' AS col1 FROM parsed_events) AS t GROUP BY col1"

#: name -> (rule, SQL, Spark's error class, (line, column) of the finding).
INVALID: dict[str, tuple[str, str, str, tuple[int, int]]] = {
    "having_array_alias": ("argument-type", f"SELECT ARRAY(1) AS col1 {T}\nHAVING col1[0] > 0",
                           "INVALID_EXTRACT_BASE_FIELD_TYPE", (2, 8)),
    "having_map_alias": ("argument-type", f"SELECT MAP('key', 1) AS col1 {T}\n"
                         "HAVING col1['key'] > 0", "INVALID_EXTRACT_BASE_FIELD_TYPE", (2, 8)),
    "string_column": ("argument-type", f"SELECT eventId[0] AS x {P}",
                      "INVALID_EXTRACT_BASE_FIELD_TYPE", (1, 8)),
    "explode_lateral": ("generator-use", f"SELECT ARRAY(1, 2, 3) AS arr, EXPLODE(arr) AS col {P}",
                        "INTERNAL_ERROR", (1, 39)),
    "explode_lateral_then_col": ("generator-use", "SELECT ARRAY(1, 2, 3) AS arr,\n"
                                 f"  EXPLODE(arr) AS col, col + 1 AS col2 {P}",
                                 "INTERNAL_ERROR", (2, 11)),
}

VALID: dict[str, str] = {
    "order_by_alias": f"SELECT ARRAY(1) AS col1 {T} ORDER BY col1[0]",
    "having_input_array": "SELECT 'a' AS col1 FROM (SELECT ARRAY(1) AS col1 FROM parsed_events) "
                          "AS t GROUP BY col1 HAVING col1[0] > 0",
    "having_struct_field": f"SELECT STRUCT(1 AS a) AS col1 {T} HAVING col1.a > 0",
    "arrays_and_maps": f"SELECT errors[0] AS e, MAP('a', 1)['a'] AS m {P}",
    "lateral_with_count": f"SELECT ARRAY(1, 2, 3) AS arr, EXPLODE(arr) AS col, COUNT(*) AS n {P}",
    "generator_alias": "SELECT EXPLODE(ARRAY(ARRAY(0), ARRAY(1))) AS arr, EXPLODE(arr) AS col "
                       f"{P}",
    "generator_first": f"SELECT EXPLODE(ARRAY(1, 2, 3)) AS col, col + 1 AS col2 {P}",
    "column_not_alias": "SELECT ARRAY(1) AS a, EXPLODE(arr) AS col FROM (SELECT ARRAY(1) AS arr "
                        "FROM parsed_events) AS t",
}


def test_invalid_sql_is_flagged_where_it_is(tmp_path: Path) -> None:
    cases = {n: (rule, sql, f"[{error}]", place)
             for n, (rule, sql, error, place) in INVALID.items()}
    assert misreported(tmp_path, cases, rules=("argument-type", "generator-use")) == {}


def test_valid_neighbours_are_not_flagged(tmp_path: Path) -> None:
    assert lint_errors(tmp_path, VALID) == []
