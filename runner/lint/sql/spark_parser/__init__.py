"""Spark's own SQL grammar, without a JVM: a model parses in compile exactly when it parses in
Spark.

:func:`spark_syntax_error` runs Spark 4.2's lexer and parser (:mod:`.recognizers` over
``spark_grammar.json``, the grammar as Spark's build compiled it) on a model's rendered SQL and
says what Spark's ``parsePlan`` would refuse, worded as Spark words it, with its line and
column. sqlglot still builds the tree lint's rules read; this only decides accept or refuse.

Verdicts are kept in memory for the process and on disk for the user (:mod:`.verdict_cache`,
keyed by the grammar's and the SQL's digests), because loading the grammar and warming its
prediction tables costs a fresh process about half a second: each ``runner`` command is one.
A verdict decides only this tier's accept or refuse; Spark's own parser reads every model
again before anything runs (the stream's start-up analysis, the run-time guard).

>>> spark_syntax_error("SELECT a, , b FROM t").message
"[PARSE_SYNTAX_ERROR] Syntax error at or near ','"
>>> spark_syntax_error("SELECT a FROM t WINDOW w AS (ORDER BY a), w AS (ORDER BY b)") is None
True
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from runner.lint.sql.spark_parser import verdict_cache

__all__ = ["SparkSyntaxError", "spark_syntax_error", "spark_type_error"]


@dataclass(frozen=True)
class SparkSyntaxError:
    """What Spark's parser says, and where: 1-based line and column in the SQL."""

    message: str
    line: int
    column: int


#: Verdicts of this process by a digest of the SQL (a model's SQL may be megabytes: not kept).
_VERDICTS: dict[bytes, SparkSyntaxError | None] = {}
_MAX_VERDICTS = 4096


def spark_syntax_error(sql: str) -> SparkSyntaxError | None:
    """Why Spark's parser refuses ``sql`` (the first error, as Spark reports it), or None."""
    key = hashlib.blake2b(sql.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    if key not in _VERDICTS:
        if len(_VERDICTS) >= _MAX_VERDICTS:
            _VERDICTS.clear()
        found, kept = verdict_cache.load(key)
        if found:
            verdict = None if kept is None else SparkSyntaxError(*kept)
        else:
            verdict = _parse(sql)
            verdict_cache.store(key, None if verdict is None
                                else (verdict.message, verdict.line, verdict.column))
        _VERDICTS[key] = verdict
    return _VERDICTS[key]


def spark_type_error(text: str) -> str | None:
    """Why Spark refuses ``text`` as a data-format function's schema (``from_json``'s
    ``'a INT, b STRING'`` or ``'array<int>'``), as ``DataType.fromDDL`` reads it: a data type,
    else a table schema, whose error is the data type's; None when either reads, or when the
    text is a JSON schema (``{...}``, ``DataType.fromJson``'s, left to Spark)."""
    from runner.lint.sql.spark_parser.error_strategy import Refused
    from runner.lint.sql.spark_parser.recognizers import parse, unsupported_types

    if text.lstrip().startswith("{"):
        return None
    first: str | None = None
    for rule in ("singleDataType", "singleTableSchema"):
        try:
            tree = parse(text, rule)
        except Refused as e:
            first = first or e.message
            continue
        bad = unsupported_types(tree)
        if not bad:
            return None
        first = first or f'[UNSUPPORTED_DATATYPE] Unsupported data type "{bad[0].upper()}"'
    return first


def _parse(sql: str) -> SparkSyntaxError | None:
    """Spark's parser's verdict on ``sql``; an end-of-input error is placed just after the
    text's last character (not after trailing blank lines, outside the file's text)."""
    from antlr4 import Token

    from runner.lint.sql.spark_parser.error_strategy import Refused
    from runner.lint.sql.spark_parser.recognizers import parse, reset_tables  # 0.3 s: ATNs

    try:
        parse(sql)
    except Refused as e:
        if e.token.type != Token.EOF:
            return SparkSyntaxError(e.message, e.token.line, e.token.column + 1)
        end = len(sql.rstrip())  # the end of the input: just after its last character
        line = sql.count("\n", 0, end) + 1
        return SparkSyntaxError(e.message, line, end - (sql.rfind("\n", 0, end) + 1) + 1)
    except BaseException:
        reset_tables()  # stopped mid-prediction: a table may hold a half-built entry
        raise
    return None
