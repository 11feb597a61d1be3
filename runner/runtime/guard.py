"""Defence in depth at run time: ``spark.sql`` runs a model only when Spark's own parser reads it
as one query with no script transformation.

``runner compile`` already refuses anything else (:mod:`runner.lint.guard`), with sqlglot's
parser. This check uses Spark's (``ParserInterface.parseQuery``: the ``query`` rule of Spark's
grammar, which has no commands, DDL or DML), so a difference between the two parsers cannot
turn a linted model into a command. The text that passed is the text that runs: trailing
statement terminators (``;``) are cut at their token, the rest is unchanged.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

from runner.errors import ExecutionError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["checked_query"]

#: A node of a plan's tree string: the name after the tree's drawing (``:- +- |``) and ``'``.
_NODE = re.compile(r"^[\s:|+\-]*'?(\w+)")
_checked: dict[str, str] = {}  # SQL text -> the query text that passed (one check per text)


def _without_terminators(sql: str) -> str:
    """``sql`` up to its trailing ``;`` tokens (comments after them dropped too)."""
    try:
        tokens = Dialect.get_or_raise("spark").tokenizer().tokenize(sql)
    except SqlglotError:
        return sql  # Spark's parser decides
    end = len(tokens)
    while end and tokens[end - 1].token_type == TokenType.SEMICOLON:
        end -= 1
    return sql[:tokens[end].start] if end < len(tokens) else sql


def checked_query(spark: SparkSession, sql: str) -> str:
    """The text of a model's query, checked with Spark's parser (once per text).

    Raises:
        ExecutionError: the text is not one query (a command, DDL, DML, two statements), or
            it runs a script (``TRANSFORM ... USING``).
    """
    known = _checked.get(sql)
    if known is not None:
        return known
    query = _without_terminators(sql)
    parser = spark._jsparkSession.sessionState().sqlParser()  # noqa: SLF001 - Spark's own parser is reached through py4j only
    try:
        plan = parser.parseQuery(query)
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ExecutionError(f"not one query to Spark's parser, refused before running: "
                             f"{first}",
                             hint="a model is one SELECT; run `runner compile`") from e
    nodes = {m.group(1) for line in plan.treeString().splitlines() if (m := _NODE.match(line))}
    if "ScriptTransformation" in nodes:
        raise ExecutionError("runs a script (TRANSFORM ... USING), refused before running",
                             hint="compute the columns with SQL functions")
    _checked[sql] = query
    return query
