"""The ANSI-trap lint rules (runner/lint/checks/ansi.py) and merge-key-not-unique as an error: each
flags what Spark 4's ANSI mode fails on at run time, with file, line, column and the safe
spelling, and leaves the safe spellings and unknown types alone."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from runner.cli import cli
from runner.lint import LintResult, rules_table
from tests.unit.test_lint import PROJECT_YML, REPO, lint_files


def _ansi(result: LintResult, rule: str) -> list[tuple[int | None, int | None, str]]:
    return sorted((v.line, v.column, v.message) for v in result.violations if v.rule == rule)


def _model(*projections: str, where: str = "") -> str:
    body = ",\n".join(f"  {p}" for p in projections)
    return f"SELECT\n{body}\nFROM parsed_events{where}"


# -- ansi-index ---------------------------------------------------------------------------------

def test_index_into_an_array_warns_with_get_and_try_element_at(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {"m": _model(
        "eventId",
        "errors[0].errorCode AS first_code",
        "element_at(errors, 2).severity AS second",
        "split(user.country, '-')[i] AS part",
    ).replace("FROM parsed_events", "FROM parsed_events LATERAL VIEW explode(array(0)) t AS i")})
    found = _ansi(result, "ansi-index")
    assert [(line, col) for line, col, _ in found] == [(3, 3), (4, 3), (5, 3)]
    first, second, third = (m for _, _, m in found)
    assert first.startswith("errors[0] fails the batch") and "[INVALID_ARRAY_INDEX]" in first
    assert "did you mean get(errors, 0) or try_element_at(errors, 1)?" in first
    assert "did you mean get(errors, 1) or try_element_at(errors, 2)?" in second
    assert "try_element_at(SPLIT(user.country, '-'), i + 1)" in third
    assert all(v.severity == "warn" for v in result.violations if v.rule == "ansi-index")


def test_index_safe_spellings_maps_and_unknown_types_are_left_alone(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {
        "safe": _model("get(errors, 0).errorCode AS a", "try_element_at(errors, 1).severity AS b",
                       "map('k', 1)['k'] AS c", "element_at(map('k', 1), 'k') AS d",
                       "named_struct('x', 1)['x'] AS e"),
        # a table lint does not know: the type of `arr` is unknown, so no warning
        "unknown": "SELECT arr[0] AS a FROM (SELECT from_json(eventId, schema) AS arr "
                   "FROM parsed_events)",
    })
    assert _ansi(result, "ansi-index") == []


def test_index_in_where_is_found_through_the_annotator(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {"m": "SELECT eventId\nFROM parsed_events\n"
                                        "WHERE errors[0].severity = 'high'"})
    assert [(line, col) for line, col, _ in _ansi(result, "ansi-index")] == [(3, 7)]


# -- ansi-divide --------------------------------------------------------------------------------

def test_division_by_a_column_warns_with_try_divide_and_try_mod(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {"m": _model(
        "request.latency_ms / request.status_code AS ratio",
        "request.latency_ms % request.status_code AS rem",
        "mod(request.latency_ms, request.status_code) AS rem2",
        "request.latency_ms DIV request.status_code AS quot",
        "request.latency_ms / (2 - 2) AS zero",
    )})
    found = _ansi(result, "ansi-divide")
    # the column is the divisor's first token (inside its parentheses, for `(2 - 2)`)
    assert [(line, col) for line, col, _ in found] == [(2, 24), (3, 24), (4, 27), (5, 26),
                                                       (6, 25)]
    messages = [m for _, _, m in found]
    assert "[DIVIDE_BY_ZERO]" in messages[0]
    assert "did you mean try_divide(request.latency_ms, request.status_code)?" in messages[0]
    assert "did you mean try_mod(request.latency_ms, request.status_code)?" in messages[1]
    assert "did you mean try_mod(request.latency_ms, request.status_code)?" in messages[2]
    assert "did you mean request.latency_ms DIV nullif(request.status_code, 0)?" in messages[3]
    assert "when (2 - 2) is 0" in messages[4]


def test_nonzero_constant_divisors_and_nullif_are_safe(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {"m": _model(
        "request.latency_ms / 1000 AS s", "request.latency_ms / -2.5 AS h",
        "request.latency_ms / (60 * 60) AS hours", "request.latency_ms % 7 AS d",
        "request.latency_ms / CAST(4 AS DOUBLE) AS q",
        "request.latency_ms / nullif(request.status_code, 0) AS r",
        "try_divide(request.latency_ms, request.status_code) AS t",
        "try_mod(request.latency_ms, request.status_code) AS u",
    )})
    assert _ansi(result, "ansi-divide") == []


# -- ansi-cast ----------------------------------------------------------------------------------

def test_cast_of_a_string_column_warns_with_try_cast(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {"m": _model(
        "eventId",
        "CAST(user.country AS INT) AS code",
        "user.userId::bigint AS n",
        "CAST(eventId AS DATE) AS d",
        "CAST(user.country AS BOOLEAN) AS b",
        "CAST('x' AS INT) AS bad_literal",
    )})
    found = _ansi(result, "ansi-cast")
    assert [(line, col) for line, col, _ in found] == [(3, 8), (4, 3), (5, 8), (6, 8), (7, 8)]
    messages = [m for _, _, m in found]
    assert messages[0].startswith("CAST(user.country AS INT) fails the batch")
    assert "[CAST_INVALID_INPUT]" in messages[0]
    assert "did you mean try_cast(user.country AS INT)?" in messages[0]
    assert "did you mean try_cast(user.userId AS BIGINT)?" in messages[1]
    assert "did you mean try_cast('x' AS INT)?" in messages[4]


def test_cast_safe_cases_are_left_alone(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {
        "m": _model("CAST(request.latency_ms AS DOUBLE) AS a",  # a number, not a string
                    "CAST(request.status_code AS STRING) AS b",  # every value casts to STRING
                    "CAST('12' AS INT) AS c", "CAST(' 2.5 ' AS DOUBLE) AS d",
                    "CAST('2024-01-31' AS DATE) AS e", "CAST('2024-01-31 10:00:00' AS TIMESTAMP) AS f",
                    "CAST('true' AS BOOLEAN) AS g", "try_cast(user.country AS INT) AS h",
                    "CAST(`timestamp` AS DATE) AS i"),
        # the value's type is unknown (a lambda variable over an unknown array): no warning
        "unknown": "SELECT transform(from_json(eventId, s), x -> CAST(x AS INT)) AS t\n"
                   "FROM parsed_events",
    })
    assert _ansi(result, "ansi-cast") == []


def test_int_literal_out_of_range_is_flagged(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {"m": _model("CAST('300' AS TINYINT) AS a",
                                               "CAST('127' AS TINYINT) AS b")})
    assert [(line, col) for line, col, _ in _ansi(result, "ansi-cast")] == [(2, 8)]


def test_ansi_rules_can_be_switched_off(tmp_path: Path) -> None:
    yml = PROJECT_YML + "lint:\n  rules:\n    ansi-divide: 'off'\n    ansi-cast: error\n"
    result = lint_files(tmp_path, {"m": _model("request.latency_ms / request.status_code AS r",
                                               "CAST(user.country AS INT) AS c")}, yml=yml)
    assert [(v.rule, v.severity) for v in result.violations] == [("ansi-cast", "error")]


# -- merge-key-not-unique is an error -----------------------------------------------------------

def test_merge_key_not_unique_defaults_to_error() -> None:
    assert ("merge-key-not-unique", "error") in {(r, s) for r, s, _ in rules_table()}
    assert {r: s for r, s, _ in rules_table() if r.startswith("ansi-")} == {
        "ansi-index": "warn", "ansi-divide": "warn", "ansi-cast": "warn"}


def test_merge_key_proofs_pass_and_a_missing_proof_is_an_error(tmp_path: Path) -> None:
    merge = "{{ config(materialized='merge', unique_key='userId') }}\n"
    result = lint_files(tmp_path, {
        "grouped": merge + "SELECT user.userId AS userId, count(*) AS n\n"
                           "FROM parsed_events GROUP BY user.userId",
        "distinct": merge + "SELECT DISTINCT user.userId AS userId FROM parsed_events",
        "qualified": merge + "SELECT user.userId AS userId, `timestamp` AS ts FROM parsed_events\n"
                             "QUALIFY row_number() OVER (PARTITION BY user.userId "
                             "ORDER BY `timestamp` DESC) = 1",
        "plain": merge + "SELECT user.userId AS userId, `timestamp` AS ts FROM parsed_events",
    })
    (v,) = result.violations
    assert (v.rule, v.severity, v.path, v.line) == ("merge-key-not-unique", "error",
                                                    "models/plain.sql", 1)
    assert "GROUP BY userId" in (v.hint or "")
    lowered = lint_files(tmp_path / "warn", {"plain": merge + "SELECT user.userId AS userId "
                                             "FROM parsed_events"},
                         yml=PROJECT_YML + "lint:\n  rules:\n    merge-key-not-unique: warn\n")
    assert [(v.rule, v.severity) for v in lowered.violations] == [("merge-key-not-unique", "warn")]


def test_example_project_compiles_with_no_errors_or_warnings() -> None:
    result = CliRunner().invoke(cli, ["compile", "--project-dir", str(REPO)])
    assert result.exit_code == 0, result.output
    assert "0 errors, 0 warnings" in result.output, result.output
