"""The expectations of tests/unit/test_spark_parser.py are Spark's own: each SQL goes through the
running session's parser (``sqlParser().parsePlan``: the grammar, its listeners and the AST
builder). What Spark refuses the Python grammar refuses, at the same place, with the same
message (Spark adds ``: extra input 'x'`` to some; the grammar here does not); what Spark
accepts it accepts. A few refusals of Spark's AST builder come after the grammar, which cannot
see them: :data:`AFTER_THE_GRAMMAR` holds them, so a change in what Spark does there shows.
Parsing only: no job runs.
"""

from __future__ import annotations

import re

import pytest

from runner.lint.sql.spark_parser import spark_syntax_error
from tests.unit.test_spark_parser import ACCEPTED, REFUSED

pytestmark = pytest.mark.spark

#: What Spark's AST builder refuses after its grammar accepted it -> Spark's error class. The
#: grammar tier passes these; runner/lint/sql/spark_grammar.py catches the repeated window and the
#: empty IN, not the typed literal. (The ranges of typed integer literals, which the AST builder
#: checks too, the grammar tier checks: runner/lint/sql/spark_parser/literals.py.)
AFTER_THE_GRAMMAR = {
    "SELECT DATE 'nope'": "INVALID_TYPED_LITERAL",
    "SELECT a FROM t WINDOW w AS (ORDER BY a), w AS (ORDER BY b)":
        "INVALID_SQL_SYNTAX.REPETITIVE_WINDOW_DEFINITION",
    "SELECT a FROM t WHERE a IN ()": "INVALID_SQL_SYNTAX.EMPTY_IN_PREDICATE",
}


@pytest.fixture(scope="module")
def parse_plan(spark):  # type: ignore[no-untyped-def]
    """``parse_plan(sql)``: Spark's error message (first line) when its parser refuses, else
    None."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    parser = spark._jsparkSession.sessionState().sqlParser()

    def parse(sql: str) -> str | None:
        try:
            parser.parsePlan(sql)
        except (PySparkException, Py4JJavaError) as e:
            text = str(e.java_exception.getMessage()) if isinstance(e, Py4JJavaError) else str(e)
            return text.strip().splitlines()[0]
        return None

    return parse


def _core(message: str) -> str:
    """Spark's first line without its SQLSTATE, position and ``: extra input``-like hint."""
    core = re.split(r"\. SQLSTATE|\.?$", message, maxsplit=1)[0]
    return re.split(r": (?:extra input|missing) ", core, maxsplit=1)[0]


def test_refused_as_spark_refuses(parse_plan) -> None:  # type: ignore[no-untyped-def]
    wrong = {}
    for sql, (message, line, column) in REFUSED.items():
        spark_says = parse_plan(sql)
        position = re.search(r"\(line (\d+), pos (\d+)\)", spark_says or "")
        if sql != sql.rstrip():  # Spark puts the end of input after the trailing blanks, compile
            position = None      # just after the last character of text (on a line of the file)
        same = (spark_says is not None and message.startswith(_core(spark_says))
                and (position is None or (int(position[1]), int(position[2]) + 1)
                     == (line, column)))
        if not same:
            wrong[sql] = spark_says
    assert wrong == {}


def test_accepted_as_spark_accepts(parse_plan) -> None:  # type: ignore[no-untyped-def]
    assert {sql: parse_plan(sql) for sql in ACCEPTED if parse_plan(sql) is not None} == {}


def test_after_the_grammar(parse_plan) -> None:  # type: ignore[no-untyped-def]
    assert {sql: (parse_plan(sql) or "").split("]")[0].lstrip("[")
            for sql in AFTER_THE_GRAMMAR} == AFTER_THE_GRAMMAR
    assert {sql: spark_syntax_error(sql) for sql in AFTER_THE_GRAMMAR} == dict.fromkeys(
        AFTER_THE_GRAMMAR)
