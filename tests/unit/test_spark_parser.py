"""compile parses each model with Spark's own grammar (runner/lint/spark_parser), without a
JVM: a model parses in compile exactly when it parses in Spark, and a refusal reads as Spark's
and names the model file's own line and column.

Each expectation here was checked against Spark's parser (``tests/spark/test_spark_grammar.py``
runs the same lists through ``sqlParser().parsePlan``).
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pytest

from runner.build import compile_project
from runner.lint.sql.spark_parser import SparkSyntaxError, spark_syntax_error
from runner.project.loader import load_project
from tests.support.projects import BASE_YML, write_project

_NEAR = "[PARSE_SYNTAX_ERROR] Syntax error at or near "
_UNCLOSED = ("[UNCLOSED_BRACKETED_COMMENT] Found an unclosed bracketed comment. Please, append */ "
             "at the end of the comment.")

#: SQL Spark's parser refuses -> (message, line, column): the grammar's refusals, among them
#: what sqlglot alone accepts (the double comma, the unclosed comment, the invalid names).
REFUSED: dict[str, tuple[str, int, int]] = {
    "SELECT a, , b FROM parsed_events": (_NEAR + "','", 1, 11),
    "SELECT a FROM parsed_events /* not closed": (_UNCLOSED, 1, 29),
    "SELECT a /* x FROM parsed_events": (_UNCLOSED, 1, 10),
    "SELECT a FROM t /* a /* nested */": (_UNCLOSED, 1, 17),
    "SELECT a FROM t LIMIT 1, 2": (_NEAR + "','", 1, 24),
    "SELECT a AS 'id' FROM t": (_NEAR + "''id''", 1, 13),
    'SELECT a AS "id" FROM t': (_NEAR + "'\"id\"'", 1, 13),
    "SELECT 1 AS 2": (_NEAR + "'2'", 1, 13),
    "SELECT a b c FROM t": (_NEAR + "'c'", 1, 12),
    "SELECT (a FROM t": (_NEAR + "'FROM'", 1, 11),
    "SELECT a FROM t JOIN u USING ()": (_NEAR + "')'", 1, 31),
    "SELECT count(*) FROM t GROUP BY ()": (_NEAR + "')'", 1, 34),
    "SELECT a FROM t GROUP BY": (_NEAR + "'BY'", 1, 23),
    "SELECT a FROM t WHERE a BETWEEN 1 AND": (_NEAR + "end of input", 1, 38),
    "SELECT a FROM t\nWHERE a = = 1": (_NEAR + "'='", 2, 11),
    "SELECT a FROM c-d": ("[INVALID_IDENTIFIER] The unquoted identifier c-d is invalid and must "
                          "be back quoted as: `c-d`. Unquoted identifiers can only contain ASCII "
                          "letters, digits and underbar (_)", 1, 16),
    "SELECT été FROM t": ("[INVALID_IDENTIFIER] The unquoted identifier été is invalid and must "
                          "be back quoted as: `été`. Unquoted identifiers can only contain ASCII "
                          "letters, digits and underbar (_)", 1, 8),
    "SELECT a, TRANSFORM(a) USING 'cat' FROM t": (_NEAR + "''cat''", 1, 30),
    " \n ": ("[PARSE_EMPTY_STATEMENT] Syntax error, unexpected empty statement", 1, 1),
    # refused by Spark's AST builder as it builds the plan (parsePlan's refusal all the same)
    "SELECT 1 - 128Y AS y": ("[INVALID_NUMERIC_LITERAL_RANGE] Numeric literal 128 is outside the "
                             "valid range for tinyint with minimum value of -128 and maximum "
                             "value of 127. Please adjust the value accordingly.", 1, 12),
    "SELECT 9223372036854775808L": (
        "[INVALID_NUMERIC_LITERAL_RANGE] Numeric literal 9223372036854775808 is outside the valid "
        "range for bigint with minimum value of -9223372036854775808 and maximum value of "
        "9223372036854775807. Please adjust the value accordingly.", 1, 8),
}

#: SQL Spark's parser accepts, some of it in ways sqlglot does not read alike.
ACCEPTED = [
    "SELECT 1 >>> 2 AS u, 8 >> 1 AS s, 1 << 2 AS l",
    "SELECT CAST(m AS MAP<INT, ARRAY<INT>>) AS m FROM t",  # `>>` closes two types here
    "SELECT INTERVAL -1 DAY 2 HOURS AS i, INTERVAL 1 YEAR -2 MONTHS AS j",
    "SELECT INTERVAL '1-2' YEAR TO MONTH AS i",
    "SELECT * FROM t PIVOT (sum(a) AS s FOR b IN (1 AS one, 2 AS two))",
    "SELECT * FROM t PIVOT (sum(a) + 1 AS s FOR b IN (1, 2))",
    "SELECT 1 UNION SELECT 2 INTERSECT SELECT 3 EXCEPT SELECT 4",
    "SELECT /*+ BROADCAST(t) */ a FROM t /* a /* nested */ comment */",
    "FROM t |> WHERE a > 1 |> SELECT a",
    "SELECT 'a' 'b' AS s, 2.5E10 AS d, 1.5BD AS b, 10L AS l, 5Y AS y, 3S AS sm",
    "SELECT -128Y AS y, -32768S AS s, -9223372036854775808L AS l",
    "SELECT left, offset, window, select, on FROM t",
    "SELECT DISTINCT ON (a) a FROM t",  # parses: `on(a)` is a call (Spark's analyzer refuses)
    "SELECT j:a.b AS v, a::INT AS i, transform(xs, x -> x + 1) AS ys FROM t",
    "SELECT a FROM t WINDOW w AS (ORDER BY a), v AS w",
    "SELECT a FROM t;;",
    "with x as (select 1 as a) select a from x where a is not null and a like 'x%'",
]


@pytest.mark.parametrize("sql", REFUSED)
def test_spark_refuses(sql: str) -> None:
    assert spark_syntax_error(sql) == SparkSyntaxError(*REFUSED[sql])


@pytest.mark.parametrize("sql", ACCEPTED)
def test_spark_accepts(sql: str) -> None:
    assert spark_syntax_error(sql) is None


def _errors(tmp_path: Path, models: dict[str, str]) -> list[tuple[str, str, int | None,
                                                                  int | None, str]]:
    project = load_project(write_project(
        tmp_path, {f"models/{name}.sql": sql for name, sql in models.items()},
        project_yml=BASE_YML))
    return sorted((v.rule, v.path, v.line, v.column, v.message)
                  for v in compile_project(project).violations if v.severity == "error")


def test_compile_reports_spark_s_refusal_at_the_file_s_line_and_column(tmp_path: Path) -> None:
    model = ("{{ config(materialized='append',\n"
             "          tags=['x']) }}\n"
             "SELECT\n"
             "{% for c in ['a', 'b'] %}  '{{ c }}' AS c{{ loop.index }},\n{% endfor %}"
             "  eventId,, user.country AS country\n"
             "FROM parsed_events\n")
    assert _errors(tmp_path, {"m": model}) == [
        ("syntax", "models/m.sql", 5, 23, "SQL syntax error: " + _NEAR + "','")]


def test_compile_what_spark_refuses_after_parsing_and_what_sqlglot_cannot_read(
        tmp_path: Path) -> None:
    errors = _errors(tmp_path, {
        # Spark's grammar takes FROM for a column: its analyzer refuses it
        "comma": "SELECT eventId, FROM parsed_events\n",
        # Spark's AST builder refuses an empty IN list
        "empty_in": "SELECT eventId FROM parsed_events WHERE eventId IN ()\n",
        # Spark parses on(eventId) as a call, and has no such function
        "distinct_on": "SELECT DISTINCT ON (eventId) eventId FROM parsed_events\n",
        # Spark's AST builder refuses a window name defined twice
        "window": "SELECT eventId, rank() OVER w AS r FROM parsed_events\n"
                  "WINDOW w AS (ORDER BY `timestamp`), `w` AS (ORDER BY eventId)\n",
        # Spark's parser accepts it; sqlglot cannot read it, so lint cannot check it
        "pipe": "SELECT eventId, 1 AS n FROM parsed_events |> SET n = 2\n",
    })
    assert [(e[1], e[4].split(":")[0]) for e in errors] == [
        ("models/comma.sql", "SQL syntax error"),
        ("models/distinct_on.sql", "SQL syntax error"),
        ("models/empty_in.sql", "SQL syntax error"),
        ("models/pipe.sql", "SQL syntax error"),
        ("models/window.sql", "SQL syntax error")]
    assert "trailing comma before FROM" in errors[0][4]
    assert "DISTINCT ON is PostgreSQL's" in errors[1][4]
    assert "empty list after IN" in errors[2][4]
    assert "Spark's parser accepts this, but lint's SQL reader (sqlglot) does not" in errors[3][4]
    assert errors[4][2:] == (2, 37, "SQL syntax error: window w is defined twice: Spark refuses it")


def test_a_datetime_unit_given_as_a_string_is_refused_as_sparks_ast_builder_does(
        tmp_path: Path) -> None:
    errors = _errors(tmp_path, {
        # the grammar's TIMESTAMPDIFF form takes `invalidUnit=stringLit`, which is then refused
        "timediff": "SELECT eventId,\n  TIMEDIFF('MINUTE', `timestamp`, `timestamp`) AS d "
                    "FROM parsed_events\n",
        "date_add": "SELECT DATE_ADD('DAY', 1, `timestamp`) AS d FROM parsed_events\n",
        # a unit word, two arguments, or a first argument longer than one string: other forms
        "fine": "SELECT TIMEDIFF(MINUTE, `timestamp`, `timestamp`) AS a,\n"
                "  DATEDIFF('2020-01-02', DATE'2020-01-01') AS b,\n"
                "  DATE_ADD(`timestamp`, 1) AS c, TIMESTAMPADD(HOUR, 1, `timestamp`) AS d\n"
                "FROM parsed_events\n",
    })
    assert [e[1:4] for e in errors] == [("models/date_add.sql", 1, 17),
                                        ("models/timediff.sql", 2, 12)]
    assert all("[INVALID_PARAMETER_VALUE.DATETIME_UNIT]" in e[4] for e in errors)


def test_the_grammar_is_pyspark_s_and_all_its_code_is_mapped() -> None:
    from runner.lint.sql.spark_parser.recognizers import GRAMMAR, check_grammar

    spark = importlib.metadata.version("pyspark")
    assert GRAMMAR["source"] == f"spark-sql-api_2.13-{spark}-sources.jar"
    check_grammar(GRAMMAR)  # a predicate or action with no Python: KeyError


@pytest.mark.slow  # Maven fetches spark-sql-api's sources jar (network on a cold repository)
def test_the_committed_grammar_is_what_the_generator_writes() -> None:
    done = subprocess.run([sys.executable, "-m", "scripts.spark_grammar.generate", "--check"],
                          cwd=Path(__file__).resolve().parents[2], capture_output=True,
                          text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
