"""Lint: the example project is clean, the broken catalogue is caught, valid Spark SQL passes."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from pathlib import Path

import pytest

from runner.compile.lookups import plan_lookups
from runner.compile.render import RenderedModel, render_models
from runner.errors import ConfigError
from runner.lint import LintResult, Violation, check_lint_config, lint_models, rules_table
from runner.project.config import LintConfig
from runner.project.loader import Project, load_project

REPO = Path(__file__).resolve().parents[2]
BROKEN = Path(__file__).resolve().parents[1] / "fixtures" / "broken"

PROJECT_YML = """\
name: lint_test
source:
  type: files
  path: data
schema: >-
  eventId STRING NOT NULL, timestamp TIMESTAMP NOT NULL,
  user STRUCT<userId: STRING, country: STRING>,
  request STRUCT<endpoint: STRING, method: STRING, latency_ms: INT, status_code: INT>,
  errors ARRAY<STRUCT<errorCode: STRING, severity: STRING>>
"""


def _ordered(models: list[RenderedModel]) -> list[RenderedModel]:
    """Dependency order (refs first), as the caller of lint_models provides it."""
    done: set[str] = set()
    out: list[RenderedModel] = []
    pending = sorted(models, key=lambda m: m.name)
    while pending:
        ready = [m for m in pending if all(r in done for r in m.refs)]
        assert ready, "cycle in test project"
        for m in ready:
            out.append(m)
            done.add(m.name)
        pending = [m for m in pending if m.name not in done]
    return out


def lint_dir(root: Path) -> tuple[Project, LintResult]:
    project = load_project(root)
    rendered, errors = render_models(project)
    assert not errors, errors
    lookups = plan_lookups(project, [v for m in rendered for v in m.lookups],
                           read_columns=lambda _path: None)  # seeds only: no source is read
    return project, lint_models(project, _ordered(list(rendered)), lookups=lookups)


def lint_files(tmp_path: Path, files: Mapping[str, str], *, yml: str = PROJECT_YML
               ) -> LintResult:
    """Write a project (project.yml + ``models/<name>.sql`` files) and lint it."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "project.yml").write_text(yml)
    for name, text in files.items():
        path = tmp_path / "models" / f"{name}.sql"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return lint_dir(tmp_path)[1]


#: A case lint must refuse: (rule, SQL, what its message names, (line, column)).
Case = tuple[str, str, str, tuple[int, int]]
Reported = list[tuple[str, int | None, int | None, str]]


def error_with_hint(v: Violation) -> bool:
    return v.severity == "error" and bool(v.hint)


def misreported(tmp_path: Path, cases: Mapping[str, Case], *,
                rules: Collection[str] | None = None,
                each: Callable[[Violation], bool] | None = None) -> dict[str, Reported]:
    """Each case linted as a model of its own beside the base model: the cases not reported
    exactly once, by their rule at their line and column with what they name in the message
    (name -> what was reported). Only violations of ``rules`` count (None: every one), and each
    counted one must pass ``each`` when given."""
    result = lint_files(tmp_path, {"base": _BASE["base"], **{n: c[1] for n, c in cases.items()}})
    reported: dict[str, Reported] = {}
    for v in result.violations:
        if rules is None or v.rule in rules:
            reported.setdefault(Path(v.path).stem, []).append((v.rule, v.line, v.column, v.message))
            assert each is None or each(v), v
    wrong = {}
    for name, (rule, _, named, (line, column)) in cases.items():
        got = reported.get(name, [])
        if [(r, ln, c) for r, ln, c, _ in got] != [(rule, line, column)] or named not in got[0][3]:
            wrong[name] = got
    return wrong


def lint_errors(tmp_path: Path, models: Mapping[str, str]) -> list[Violation]:
    """The errors of ``models`` linted beside the base model."""
    result = lint_files(tmp_path, {"base": _BASE["base"], **models})
    return [v for v in result.violations if v.severity == "error"]


def found(result: LintResult) -> set[tuple[str, str, int | None]]:
    return {(v.rule, v.path, v.line) for v in result.violations}


# -- the example project ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def example() -> LintResult:
    return lint_dir(REPO)[1]


def test_example_project_lints_clean(example: LintResult) -> None:
    assert example.violations == ()


def test_example_columns_and_types(example: LintResult) -> None:
    cols = {m: [(c.name, c.type) for c in cs] for m, cs in example.columns.items()}
    assert cols["request_logs"] == [
        ("eventId", "STRING"), ("timestamp", "TIMESTAMP"), ("userId", "STRING"),
        ("endpoint", "STRING"), ("status_code", "INT"), ("status_class", "STRING")]
    assert cols["error_events"] == [
        ("eventId", "STRING"), ("timestamp", "TIMESTAMP"), ("userId", "STRING"),
        ("errorCode", "STRING"), ("severity", "STRING")]
    assert cols["performance_metrics"] == [
        ("eventId", "STRING"), ("timestamp", "TIMESTAMP"), ("endpoint", "STRING"),
        ("latency_ms", "INT"), ("is_slow", "BOOLEAN"), ("team", "STRING")]  # from the seed


def test_example_used_fields_and_ast(example: LintResult) -> None:
    assert example.used_fields is not None
    assert set(example.used_fields) == {"eventId", "timestamp", "user", "request", "errors"}
    assert set(example.ast) == {"request_logs", "error_events", "performance_metrics"}


def test_used_fields_none_with_star_and_skips_metadata(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {"a": "SELECT eventId, _batch_id, _source_file FROM parsed_events",
                                   "b": "SELECT p.* FROM parsed_events p"})
    assert result.used_fields is None
    only = lint_files(tmp_path / "x", {"a": "SELECT eventId, _batch_id FROM parsed_events"})
    assert only.used_fields == ("eventId",)
    assert [(c.name, c.type) for c in only.columns["a"]] == [("eventId", "STRING"),
                                                          ("_batch_id", "BIGINT")]


# -- the broken catalogue: tests/fixtures/broken/<rule>/, '-- expect: <rule>' marks the line ----

_EXPECT = re.compile(r"--\s*expect:\s*([a-z-]+(?:\s*,\s*[a-z-]+)*)")


def _expected(root: Path) -> set[tuple[str, str, int]]:
    out = set()
    for path in sorted((root / "models").rglob("*.sql")):
        rel = path.relative_to(root).as_posix()
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            match = _EXPECT.search(line)
            if match:
                out |= {(rule.strip(), rel, number) for rule in match.group(1).split(",")}
    return out


CASES = sorted(p.name for p in BROKEN.iterdir() if p.is_dir())


def test_catalogue_covers_every_rule() -> None:
    assert set(CASES) == {rule_id for rule_id, _, _ in rules_table()}


@pytest.mark.parametrize("case", CASES)
def test_broken_catalogue(case: str) -> None:
    _, result = lint_dir(BROKEN / case)
    expected = _expected(BROKEN / case)
    assert expected and {rule for rule, _, _ in expected} == {case}
    assert found(result) == expected, "\n".join(map(str, result.violations))
    for v in result.violations:
        assert v.column is None or v.column >= 1
        assert v.message


def test_unknown_names_say_did_you_mean(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {
        "a": "SELECT\n  user.userid AS u,\n  user.contry AS c,\n  evntId,\n  p.requst\n"
             "FROM parsed_events p",
        "b": "SELECT eventId FROM parsed_event"})
    messages = {(v.path, v.line, v.column): v.message for v in result.violations}
    assert messages[("models/a.sql", 3, 8)] == (
        "unknown field 'contry' in struct 'user' (did you mean 'country'?)")
    assert messages[("models/a.sql", 4, 3)] == "unknown column 'evntId' (did you mean 'eventId'?)"
    assert messages[("models/a.sql", 5, 5)] == (
        "unknown column 'requst' in 'p' (did you mean 'request'?)")
    assert messages[("models/b.sql", 1, 21)] == (
        "unknown table 'parsed_event' (did you mean 'parsed_events'?)")
    assert len(result.violations) == 4


@pytest.mark.parametrize("sql, name", [
    ("SELECT eventId.x AS y FROM parsed_events", "x"),
    ("SELECT err.nope AS y FROM parsed_events LATERAL VIEW explode(errors) e AS err", "nope"),
    ("SELECT transform(errors, x -> x.nope) AS y FROM parsed_events", "nope"),
    ("WITH c AS (SELECT eventId FROM parsed_events) SELECT c.nope FROM c", "nope"),
    ("SELECT a.nope FROM (SELECT eventId FROM parsed_events) a", "nope"),
    ("SELECT eventId FROM parsed_events WHERE nope > 1", "nope"),
    ("SELECT b.nope FROM {{ ref('base') }} b", "nope"),
    ("SELECT eventId FROM parsed_events p WHERE EXISTS "
     "(SELECT 1 FROM {{ ref('base') }} b WHERE b.eventId = p.nope)", "nope"),
    ("SELECT x.err.nope AS y FROM {{ ref('exploded') }} x", "nope"),
])
def test_unknown_column_cases(tmp_path: Path, sql: str, name: str) -> None:
    result = lint_files(tmp_path, {"m": sql, **_BASE})
    unknown = [v for v in result.violations if v.rule == "unknown-column"]
    assert len(unknown) == 1 and f"'{name}'" in unknown[0].message, result.violations
    assert unknown[0].path == "models/m.sql" and unknown[0].line == 1


# -- severities -------------------------------------------------------------------------------

def _with_rules(rules: str) -> str:
    return PROJECT_YML + f"lint:\n  rules: {rules}\n"


def test_severity_override_warn_to_error_and_error_to_off(tmp_path: Path) -> None:
    files = {"m": "SELECT eventId, nope, request.latency_ms + 1 FROM parsed_events"}
    default = lint_files(tmp_path / "a", files)
    assert {(v.rule, v.severity) for v in default.violations} == {
        ("unknown-column", "error"), ("unnamed-output-column", "warn")}
    changed = lint_files(tmp_path / "b", files, yml=_with_rules(
        "{unknown-column: 'off', unnamed-output-column: error}"))
    assert {(v.rule, v.severity) for v in changed.violations} == {
        ("unnamed-output-column", "error")}


def test_check_lint_config() -> None:
    check_lint_config(LintConfig(rules={"append-aggregate": "error"}))
    with pytest.raises(ConfigError) as info:
        check_lint_config(LintConfig(rules={"unknown-colum": "warn"}))
    assert "unknown rule 'unknown-colum'" in str(info.value)
    assert "did you mean 'unknown-column'" in str(info.value)
    assert info.value.exit_code == 2


def test_rules_table() -> None:
    table = rules_table()
    assert len({r for r, _, _ in table}) == len(table)
    assert all(sev in ("error", "warn") and desc and not desc.startswith(" ")
               for _, sev, desc in table)
    assert dict((r, s) for r, s, _ in table)["append-aggregate"] == "warn"


# -- no false positives on valid Spark SQL ----------------------------------------------------

_BASE = {
    "base": "SELECT eventId, `timestamp`, user.userId AS userId, user.country AS country,\n"
            "  request.endpoint AS endpoint, request.latency_ms AS latency_ms, errors\n"
            "FROM parsed_events",
    "errs": "SELECT eventId, err.errorCode AS code, err.severity AS severity\n"
            "FROM parsed_events LATERAL VIEW explode(errors) e AS err",
    "exploded": "SELECT eventId, explode(errors) AS err FROM parsed_events",
}

_MERGE = "{{ config(materialized='merge', unique_key=%r%s) }}\n"

GALLERY: dict[str, str] = {
    "cte": "WITH slow AS (SELECT eventId, request.latency_ms AS ms FROM parsed_events\n"
           "  WHERE request.latency_ms > 100)\nSELECT s.eventId, s.ms FROM slow s",
    "join_refs": "SELECT b.eventId, b.endpoint, e.code\nFROM {{ ref('base') }} b\n"
                 "JOIN {{ ref('errs') }} e ON b.eventId = e.eventId AND e.severity = 'high'",
    "join_using": "SELECT * FROM {{ ref('base') }} JOIN {{ ref('errs') }} USING (eventId)",
    "left_join_events": "SELECT p.eventId, b.userId FROM parsed_events p\n"
                        "LEFT JOIN {{ ref('base') }} b ON p.eventId = b.eventId "
                        "AND p.user.userId = b.userId",
    "derived": "SELECT t.eventId, t.ms * 2 AS double_ms\n"
               "FROM (SELECT eventId, request.latency_ms AS ms FROM parsed_events) t",
    "in_exists": "SELECT eventId FROM parsed_events p\n"
                 "WHERE eventId IN (SELECT eventId FROM {{ ref('errs') }})\n"
                 "  AND EXISTS (SELECT 1 FROM {{ ref('base') }} b WHERE b.eventId = p.eventId)",
    "scalar_subquery": "SELECT b.eventId,\n  (SELECT count(*) FROM {{ ref('errs') }} e "
                       "WHERE e.eventId = b.eventId) AS n_errors\nFROM {{ ref('base') }} b",
    "lateral_outer_pos": "SELECT eventId, pos, err.errorCode AS code FROM parsed_events\n"
                         "LATERAL VIEW OUTER posexplode(errors) e AS pos, err",
    "lateral_inline": "SELECT eventId, code, sev FROM parsed_events\n"
                      "LATERAL VIEW inline(errors) i AS code, sev",
    "lateral_qualified": "SELECT p.eventId, e.err.severity AS sev FROM parsed_events p\n"
                         "LATERAL VIEW explode(p.errors) e AS err",
    "hof": "SELECT eventId,\n  transform(errors, x -> x.errorCode) AS codes,\n"
           "  filter(errors, x -> x.severity = 'high') AS high,\n"
           "  exists(errors, x -> x.errorCode = 'E1') AS has_e1,\n"
           "  aggregate(errors, 0, (acc, x) -> acc + 1) AS n_errors,\n"
           "  transform(errors, (x, i) -> concat(x.errorCode, i, eventId)) AS tagged,\n"
           "  forall(errors, X -> x.severity IS NOT NULL) AS all_sev\nFROM parsed_events",
    "windows": "SELECT eventId,\n"
               "  row_number() OVER (PARTITION BY user.userId ORDER BY `timestamp`) AS rn,\n"
               "  lag(request.latency_ms) OVER w AS prev_ms,\n"
               "  sum(request.latency_ms) OVER (PARTITION BY request.endpoint) AS total_ms\n"
               "FROM parsed_events\nWINDOW w AS (PARTITION BY user.userId ORDER BY `timestamp`)",
    "alias_struct": "SELECT p.eventId, p.user.userId AS uid, p.request.endpoint AS ep\n"
                    "FROM parsed_events AS p",
    "backticks": "SELECT `eventId`, `user`.`userId` AS `user_id`, `p`.`request`.`status_code`"
                 " AS `code`\nFROM `parsed_events` `p`",
    "case_in_cast_dates": "SELECT eventId,\n"
                          "  CASE WHEN request.status_code IN (500, 502, 503) THEN 'server'\n"
                          "       WHEN request.status_code BETWEEN 400 AND 499 THEN 'client'\n"
                          "       ELSE 'ok' END AS cls,\n"
                          "  CAST(request.latency_ms AS DOUBLE) / 1000 AS latency_s,\n"
                          "  to_date(`timestamp`) AS day, date_trunc('HOUR', `timestamp`) AS hr,\n"
                          "  date_format(`timestamp`, 'yyyy-MM') AS month,\n"
                          "  datediff(current_date(), to_date(`timestamp`)) AS age_days,\n"
                          "  `timestamp` + INTERVAL 1 HOUR AS later,\n"
                          "  unix_timestamp(`timestamp`) AS epoch\nFROM parsed_events\n"
                          "WHERE user.country NOT IN ('xx', 'yy') AND request.endpoint LIKE '/api%'",
    "case_insensitive": "SELECT EVENTID AS id, User.UserId AS uid, P.REQUEST.Endpoint AS ep\n"
                        "FROM Parsed_Events p",
    "group_alias_order": _MERGE % ("endpoint", ", merge_update={'n': 'target.n + source.n'}")
                         + "SELECT request.endpoint AS endpoint, count(*) AS n,\n"
                           "  max(`timestamp`) AS last_seen\nFROM parsed_events\n"
                           "GROUP BY endpoint\nHAVING n > 0\nORDER BY n DESC",
    "group_ordinal": _MERGE % (["country", "endpoint"], "")
                     + "SELECT user.country AS country, request.endpoint AS endpoint,\n"
                       "  avg(request.latency_ms) AS avg_ms\nFROM parsed_events GROUP BY 1, 2",
    "metadata": "SELECT eventId, _batch_id, _source_file FROM parsed_events",
    "explode_select": "SELECT x.eventId, x.err.errorCode AS code FROM {{ ref('exploded') }} x",
    "inline_select": "SELECT eventId, inline(errors) FROM parsed_events",
    "union": "SELECT eventId, 'a' AS src FROM parsed_events\nUNION ALL\n"
             "SELECT eventId, 'b' AS src FROM {{ ref('errs') }}",
    "row_number_dedupe": _MERGE % ("userId", ", merge_condition='source.last_seen > "
                                             "target.last_seen'")
                         + "SELECT userId, last_seen FROM (\n"
                           "  SELECT user.userId AS userId, `timestamp` AS last_seen,\n"
                           "    row_number() OVER (PARTITION BY user.userId "
                           "ORDER BY `timestamp` DESC) AS rn\n"
                           "  FROM parsed_events) WHERE rn = 1",
    "qualify": _MERGE % ("eventId", "")
               + "SELECT eventId, `timestamp` FROM parsed_events\n"
                 "QUALIFY row_number() OVER (PARTITION BY eventId ORDER BY `timestamp`) = 1",
    "lateral_column_alias": "SELECT request.latency_ms AS ms, ms / 1000 AS s FROM parsed_events",
    "struct_star": "SELECT eventId, user.* FROM parsed_events",
    "alias_star": "SELECT b.* FROM {{ ref('base') }} b",
    "index_access": "SELECT eventId, errors[0].errorCode AS first_code,\n"
                    "  element_at(errors, 1).severity AS sev, size(errors) AS n\n"
                    "FROM parsed_events WHERE size(errors) > 0",
    "string_funcs": "SELECT eventId, coalesce(user.country, 'unknown') AS country,\n"
                    "  concat_ws('-', user.userId, user.country) AS k,\n"
                    "  get_json_object(to_json(user), '$.userId') AS uid,\n"
                    "  upper(substring(request.method, 1, 3)) AS m\nFROM parsed_events",
    "structs": "SELECT eventId, named_struct('id', user.userId, 'ms', request.latency_ms) AS info"
               "\nFROM parsed_events",
    "structs_down": "SELECT s.eventId, s.info.ms AS ms FROM {{ ref('structs') }} s",
    "nested_cte_star": "WITH a AS (SELECT eventId, user FROM parsed_events)\n"
                       "SELECT x.eventId, x.user.country AS country FROM (SELECT * FROM a) x",
    "distinct_merge": _MERGE % (["eventId", "endpoint"], "")
                      + "SELECT DISTINCT eventId, request.endpoint AS endpoint FROM parsed_events",
    "grouped_cte_merge": _MERGE % ("userId", ", merge_update={'n': 'target.n + source.n'}")
                         + "WITH c AS (SELECT user.userId AS userId, count(*) AS n\n"
                           "  FROM parsed_events GROUP BY user.userId)\nSELECT userId, n FROM c",
    "correlated_where": "SELECT eventId FROM {{ ref('base') }} b WHERE b.latency_ms > "
                        "(SELECT avg(latency_ms) FROM {{ ref('base') }})",
    "lateral_array_map": "SELECT eventId, x, k, v FROM parsed_events\n"
                         "LATERAL VIEW explode(array(1, 2, 3)) t AS x\n"
                         "LATERAL VIEW explode(map('a', 1)) m AS k, v",
    "lateral_default_names": "SELECT eventId, t.col.errorCode AS code, p.pos, p.col.severity AS sev"
                             "\nFROM parsed_events LATERAL VIEW explode(errors) t\n"
                             "LATERAL VIEW posexplode(errors) p",
    "lateral_star": "SELECT e.* FROM parsed_events LATERAL VIEW explode(errors) e AS err",
    "posexplode_aliases": "SELECT eventId, posexplode(errors) AS (p, e) FROM parsed_events",
    "join_lateral_subquery": "SELECT p.eventId, l.n FROM parsed_events p\n"
                             "JOIN LATERAL (SELECT size(p.errors) AS n) l",
    "comma_join": "SELECT eventId, o.one FROM parsed_events, (SELECT 1 AS one) o WHERE one = 1",
    "self_join": "SELECT a.eventId FROM parsed_events a JOIN parsed_events b "
                 "ON a.eventId = b.eventId",
    "collections": "SELECT eventId, struct(user.userId AS id) AS s, array(user.userId) AS arr,\n"
                   "  map('k', user.userId) AS m FROM parsed_events",
    "collections_down": "SELECT s.id AS i, m.k AS v, m['k'] AS v2, arr[0] AS a0 "
                        "FROM {{ ref('collections') }}",
    "array_of_struct_field": "SELECT eventId, errors.errorCode AS codes FROM parsed_events\n"
                             "WHERE array_contains(errors.errorCode, 'E1')",
    "unquoted_timestamp": "SELECT eventId, timestamp, date_add(timestamp, 1) AS next_day "
                          "FROM parsed_events",
    "time_units": "SELECT eventId, timestampadd(HOUR, 1, `timestamp`) AS a,\n"
                  "  timestampdiff(MINUTE, `timestamp`, `timestamp`) AS b,\n"
                  "  extract(YEAR FROM `timestamp`) AS c, trim(BOTH 'x' FROM eventId) AS d,\n"
                  "  substring(eventId FROM 1 FOR 2) AS e, request.latency_ms::string AS f\n"
                  "FROM parsed_events",
    "window_frames": "SELECT eventId, first_value(request.latency_ms) IGNORE NULLS OVER (\n"
                     "  PARTITION BY user.userId ORDER BY `timestamp`\n"
                     "  ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS first_ms\n"
                     "FROM parsed_events",
    "lambdas_more": "SELECT eventId,\n"
                    "  array_sort(errors, (l, r) -> CASE WHEN l.errorCode < r.errorCode "
                    "THEN -1 ELSE 1 END) AS sorted,\n"
                    "  zip_with(errors, errors, (a, b) -> a.errorCode = b.errorCode) AS same,\n"
                    "  transform(filter(errors, e -> e.severity = 'high'), e -> e.errorCode) "
                    "AS codes,\n  transform(errors, x -> transform(array(1, 2), "
                    "y -> concat(x.errorCode, y))) AS nested\nFROM parsed_events",
    "niladic": "SELECT eventId, current_user AS u, current_date AS d, current_timestamp AS t\n"
               "FROM parsed_events",
    "nested_scalar": "SELECT eventId, (SELECT max(x) FROM (SELECT explode(array(1, 2)) AS x)) AS m"
                     "\nFROM parsed_events",
    "cte_chain": "WITH a AS (SELECT eventId AS id FROM parsed_events), b AS (SELECT id FROM a)\n"
                 "SELECT b.id FROM b JOIN a ON a.id = b.id",
    "distribute_sort": "SELECT /*+ REPARTITION(4) */ eventId FROM parsed_events\n"
                       "DISTRIBUTE BY eventId SORT BY eventId",
    "hints_and_comments": "/* leading comment */\nSELECT /*+ BROADCAST(b) */ b.eventId -- tail\n"
                          "FROM {{ ref('base') }} b;\n",
}


def test_gallery_of_valid_spark_sql_has_no_findings(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {**_BASE, **GALLERY})
    # Valid SQL that may still fail on some rows under ANSI mode: the three array indexes
    # (tests/unit/test_lint_ansi.py checks that rule).
    ansi = [v for v in result.violations if v.rule == "ansi-index"]
    assert {(v.path, v.line) for v in ansi} == {("models/collections_down.sql", 1),
                                               ("models/index_access.sql", 1),
                                               ("models/index_access.sql", 2)}
    # Valid SQL whose windows see one micro-batch only in an append model
    # (tests/unit/test_lint_streaming.py checks that rule).
    windows = [v for v in result.violations if v.rule == "append-window"]
    assert {(v.path, v.line) for v in windows} == {("models/windows.sql", 2),
                                                  ("models/windows.sql", 3),
                                                  ("models/windows.sql", 4),
                                                  ("models/window_frames.sql", 1)}
    others = [v for v in result.violations if v not in ansi and v not in windows]
    assert others == [], "\n".join(f"{v.location()}: [{v.rule}] {v.message}" for v in others)
    assert set(result.columns) == set(GALLERY) | set(_BASE)


def test_gallery_types(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {**_BASE, **GALLERY})
    types = {m: {c.name: c.type for c in cs} for m, cs in result.columns.items()}
    assert types["errs"] == {"eventId": "STRING", "code": "STRING", "severity": "STRING"}
    assert types["exploded"]["err"] == "STRUCT<errorCode: STRING, severity: STRING>"
    assert types["explode_select"]["code"] == "STRING"
    assert types["inline_select"] == {"eventId": "STRING", "errorCode": "STRING",
                                      "severity": "STRING"}
    assert types["hof"]["codes"] == "ARRAY<STRING>"
    assert types["hof"]["has_e1"] == "BOOLEAN"
    assert types["windows"]["rn"] == "INT" and types["windows"]["total_ms"] == "BIGINT"
    assert types["group_alias_order"] == {"endpoint": "STRING", "n": "BIGINT",
                                          "last_seen": "TIMESTAMP"}
    assert types["group_ordinal"]["avg_ms"] == "DOUBLE"
    assert types["case_in_cast_dates"]["cls"] == "STRING"
    assert types["case_in_cast_dates"]["latency_s"] == "DOUBLE"
    assert types["case_in_cast_dates"]["day"] == "DATE"
    assert types["case_in_cast_dates"]["hr"] == "TIMESTAMP"
    assert types["case_in_cast_dates"]["epoch"] == "BIGINT"
    assert types["case_insensitive"] == {"id": "STRING", "uid": "STRING", "ep": "STRING"}
    assert types["struct_star"] == {"eventId": "STRING", "userId": "STRING", "country": "STRING"}
    assert list(types["join_using"])[:2] == ["eventId", "timestamp"]
    assert types["lateral_outer_pos"]["pos"] == "INT"
    assert types["structs_down"]["ms"] == "INT"
    assert types["join_using"]["code"] == "STRING"
    assert types["lateral_array_map"] == {"eventId": "STRING", "x": "INT", "k": "STRING",
                                          "v": "INT"}
    assert types["posexplode_aliases"]["p"] == "INT"
    assert types["collections_down"] == {"i": "STRING", "v": "STRING", "v2": "STRING",
                                         "a0": "STRING"}
    assert types["array_of_struct_field"]["codes"] == "ARRAY<STRING>"
    assert types["lambdas_more"]["nested"] == "ARRAY<ARRAY<STRING>>"
    assert types["index_access"] == {"eventId": "STRING", "first_code": "STRING",
                                     "sev": "STRING", "n": "INT"}
    assert "UNKNOWN" not in {t for cols in types.values() for t in cols.values()}


def test_many_generated_models_lint_clean(tmp_path: Path) -> None:
    """Generated projections (the speed figure itself is measured in bench/, not here)."""
    files = {f"m{i:04d}": f"SELECT eventId, user.userId AS u{i}, request.latency_ms AS ms\n"
                          "FROM parsed_events" for i in range(200)}
    result = lint_files(tmp_path, files)
    assert result.violations == ()
    assert len(result.columns) == 200


def test_violation_is_the_base_type(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {"m": "SELECT nope FROM parsed_events"})
    assert isinstance(result.violations[0], Violation)
    assert result.violations[0].to_dict()["rule"] == "unknown-column"



# -- details ----------------------------------------------------------------------------------

def test_positions_follow_the_rendered_sql(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {"m": "-- comment\n{{ config(tags=['x']) }}\nSELECT\n"
                                        "  eventId,\n  `user`.`nope` AS n\nFROM parsed_events"})
    (v,) = result.violations
    assert (v.rule, v.line, v.column) == ("unknown-column", 5, 10)


def test_merge_key_not_unique_needs_a_proof_within_the_key(tmp_path: Path) -> None:
    merge = "{{ config(materialized='merge', unique_key='userId') }}\n"
    result = lint_files(tmp_path, {
        "wider_group": merge + "SELECT user.userId AS userId, request.endpoint AS ep, count(*) AS n\n"
                               "FROM parsed_events GROUP BY user.userId, request.endpoint",
        "narrower_group": merge.replace("'userId'", "['userId', 'ep']")
                          + "SELECT user.userId AS userId, 'x' AS ep, count(*) AS n\n"
                            "FROM parsed_events GROUP BY user.userId",
        "global_aggregate": merge + "SELECT 'all' AS userId, count(*) AS n FROM parsed_events",
        "row_number_other_key": merge + "SELECT userId FROM (SELECT user.userId AS userId,\n"
                                        "  row_number() OVER (PARTITION BY eventId ORDER BY 1) AS rn"
                                        "\n  FROM parsed_events) WHERE rn = 1",
        "through_ref": merge + "SELECT d.userId, d.n FROM {{ ref('narrower_group') }} d",
        # a comment after the GROUP BY key is not part of it (found by the generated operations)
        "trailing_comment": merge + "SELECT user.userId AS userId, count(*) AS n\n"
                                    "FROM parsed_events GROUP BY user.userId\n-- changed\n",
    })
    assert found(result) == {("merge-key-not-unique", "models/wider_group.sql", 1),
                             ("merge-key-not-unique", "models/row_number_other_key.sql", 1)}


def test_nondeterministic_merge_update_expression(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {"m": (
        "{{ config(materialized='merge', unique_key='userId',\n"
        "          merge_update={'seen': 'greatest(target.seen, source.seen)',\n"
        "                        'touched': 'now()'}) }}\n"
        "SELECT user.userId AS userId, max(`timestamp`) AS seen, max(`timestamp`) AS touched\n"
        "FROM parsed_events GROUP BY user.userId")})
    (v,) = result.violations
    assert v.rule == "nondeterministic-merge" and "now()" in v.message and v.line == 1


def test_append_aggregate_hint_suggests_merge(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {"m": "SELECT request.endpoint AS endpoint, count(*) AS hits\n"
                                        "FROM parsed_events GROUP BY request.endpoint"})
    (v,) = result.violations
    assert v.rule == "append-aggregate" and v.severity == "warn" and (v.line, v.column) == (1, 38)
    assert v.hint is not None
    assert "unique_key=['endpoint']" in v.hint and "'target.hits + source.hits'" in v.hint


def test_unknown_upstream_does_not_cascade(tmp_path: Path) -> None:
    """A ref'd model that did not parse (or was not linted) has unknown columns: no guesses."""
    result = lint_files(tmp_path, {
        "up": "SELECT eventId FROM parsed_events WHERE (",
        "down": "SELECT u.anything, whatever FROM {{ ref('up') }} u"})
    assert found(result) == {("syntax", "models/up.sql", 1)}
    assert [(c.name, c.type) for c in result.columns["down"]] == [("anything", "UNKNOWN"),
                                                                  ("whatever", "UNKNOWN")]
    project = load_project(tmp_path)
    rendered, _ = render_models(project)
    alone = lint_models(project, [m for m in rendered if m.name == "down"])
    assert alone.violations == ()


def test_single_select_and_ast(tmp_path: Path) -> None:
    result = lint_files(tmp_path, {"ok": "SELECT eventId FROM parsed_events;\n",
                                   "dml": "INSERT INTO t SELECT eventId FROM parsed_events",
                                   "empty": "-- nothing here\n"})
    assert found(result) == {("not-a-query", "models/dml.sql", 1),
                             ("single-select", "models/empty.sql", None)}
    assert set(result.ast) == {"ok", "dml"}
    assert result.columns["ok"][0].name == "eventId"


def test_kafka_metadata_columns(tmp_path: Path) -> None:
    yml = PROJECT_YML.replace("  type: files\n  path: data\n",
                              "  type: kafka\n"
                              "  topic: events\n")
    result = lint_files(tmp_path, {"m": "SELECT eventId, _topic, _partition, _offset, "
                                        "_kafka_timestamp, _batch_id, _source_file "
                                        "FROM parsed_events"}, yml=yml)
    (v,) = result.violations
    assert v.rule == "unknown-column" and "'_source_file'" in v.message
    types = {c.name: c.type for c in result.columns["m"]}
    assert types["_partition"] == "INT" and types["_kafka_timestamp"] == "TIMESTAMP"


def test_doctests() -> None:
    import doctest

    import runner.lint
    import runner.lint.spark_types.infer

    for module in (runner.lint, runner.lint.spark_types.infer):
        assert doctest.testmod(module).failed == 0
