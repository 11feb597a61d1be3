"""Build the compile corpus from Spark's own SQL tests (called by scripts/setup.sh after the jars).

Spark's SQL test jar (jar group ``spark-tests``, ``jvm/spark-tests/pom.xml``) holds the golden
files of its SQLQueryTestSuite: ``sql-tests/results/**/*.sql.out``, each query of
``sql-tests/inputs/`` with Spark's outcome (its output, or the error class it raised). This
script reads the jar as a zip file and writes ``.jars/spark-tests/models.jsonl``: one model per
query that reads no table, rewritten (through sqlglot's AST) to read ``parsed_events``:

- a SELECT without FROM selects ``FROM parsed_events`` (each branch of a set operation, each
  CTE body), so it runs once per event;
- ``FROM VALUES (...) AS t(a, b)`` becomes a subquery over ``parsed_events`` with its first
  :data:`MAX_ROWS` rows (``SELECT 1 AS a, 2 AS b FROM parsed_events UNION ALL ...``) and the
  same alias;
- a view or table the golden file creates from such a query (``CREATE TEMPORARY VIEW t AS
  SELECT * FROM VALUES ...``) is inlined as a CTE of the same name into the queries after it
  that read it (until the file drops or replaces it);
- a query naming any other table, a table-valued function, or anything but a query (DDL,
  ``SET``, ``EXPLAIN``...) is left out: those tables do not exist here;
- a query sqlglot cannot parse and that has no FROM is kept as Spark's tests wrote it (Spark
  decides whether it parses; compile's answer is measured against that);
- queries with Jinja delimiters, or from the Python UDF suites (``udf/``, ``udaf/``, ``udtf/``:
  their functions exist only in Spark's test harness), are left out.

Plus the edge cases named in :data:`EDGE_CASES` (models written here, each a known place where
sqlglot and Spark disagree). Each line: ``{"name", "origin": {"file", "query"}, "sha", "sql",
"golden"}``; ``golden`` is the golden file's outcome (``accepted`` or the error class), a hint
only: the verdict committed in ``tests/corpus/spark_sql/verdicts.jsonl`` is what this project's
own Spark session answers (``python -m tests.corpus.spark_sql.record``). Texts that repeat (the
ANSI and non-ANSI suites share queries) are kept once.

Idempotent: ``.jars/spark-tests/.corpus-<hash>`` (of the jar's name and size and this script)
marks a complete models.jsonl; a second run reads nothing.

Usage: ``python scripts/spark_sql_corpus.py [--force]``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import sys
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel, SqlglotError
from sqlglot.tokens import TokenType

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / ".jars" / "spark-tests"
MODELS = FOLDER / "models.jsonl"
EVENTS = "parsed_events"
_RESULTS = "sql-tests/results/"
_SKIPPED_SUITES = ("udf/", "udaf/", "udtf/")
_JINJA = ("{{", "{%", "{#")
_NAME = re.compile(r"[^a-z0-9]+")
#: Rows kept of a VALUES list: analysis reads types, not rows, and two rows keep VALUES' type
#: widening across rows; more would make the inlined views of the subquery suites' models
#: several kilobytes each, and lint's time grows with them.
MAX_ROWS = 2

#: Models written here, not taken from the jar: places where sqlglot and Spark disagree that
#: the golden files do not reach over parsed_events (name -> SQL).
EDGE_CASES: dict[str, str] = {
    "edge_if_two_arguments": "SELECT IF(eventId = 'x', 'a') AS flag FROM parsed_events",
    "edge_distinct_on": "SELECT DISTINCT ON (eventId) eventId FROM parsed_events",
    "edge_index_into_struct":
        "SELECT errors[0][1] AS severity FROM parsed_events",
    "edge_empty_select_item": "SELECT eventId, , timestamp FROM parsed_events",
    "edge_qualify_without_window":
        "SELECT eventId FROM parsed_events QUALIFY eventId = 'x'",
    "edge_struct_field_by_name": "SELECT errors[0].severity AS severity FROM parsed_events",
    "edge_unknown_column": "SELECT eventid2 FROM parsed_events",
    "edge_unknown_struct_field": "SELECT user.city FROM parsed_events",
    "edge_unknown_function": "SELECT no_such_function(eventId) AS x FROM parsed_events",
    "edge_aggregate_without_group":
        "SELECT eventId, count(*) AS n FROM parsed_events",
    "edge_group_by_ok":
        "SELECT user.country, count(*) AS n FROM parsed_events GROUP BY user.country",
    "edge_window_without_order":
        "SELECT eventId, row_number() OVER (PARTITION BY user.country) AS r FROM parsed_events",
    "edge_window_ok": "SELECT eventId, row_number() OVER (PARTITION BY user.country "
                      "ORDER BY timestamp) AS r FROM parsed_events",
    "edge_string_plus_int": "SELECT eventId + 1 AS x FROM parsed_events",
    "edge_compare_struct_to_string": "SELECT eventId FROM parsed_events WHERE user = 'x'",
    "edge_explode_errors":
        "SELECT eventId, explode(errors) AS e FROM parsed_events",
    "edge_lateral_alias":
        "SELECT request.latency_ms AS ms, ms * 2 AS twice FROM parsed_events",
    "edge_ambiguous_join": "SELECT eventId FROM parsed_events a JOIN parsed_events b "
                           "ON a.eventId = b.eventId",
    "edge_having_without_group":
        "SELECT count(*) AS n FROM parsed_events HAVING count(*) > 1",
    "edge_map_access": "SELECT map('a', 1)['a'] AS x FROM parsed_events",
}


def _stamp(jar: Path) -> str:
    digest = hashlib.sha1(f"{jar.name}:{jar.stat().st_size}".encode()
                          + Path(__file__).read_bytes()).hexdigest()[:12]
    return f".corpus-{digest}"


def sha_of(sql: str) -> str:
    """The first 16 hex digits of the SHA-256 of a model's text (what a verdict is bound to)."""
    return hashlib.sha256(sql.encode()).hexdigest()[:16]


def golden_queries(text: str) -> Iterator[tuple[int, str, str]]:
    """``(index, query, outcome)`` of each query of a ``.sql.out`` golden file; the outcome
    is ``accepted`` or the error class Spark raised (``error`` when the file names none)."""
    for index, block in enumerate(text.split("-- !query\n")[1:]):
        query, _, rest = block.partition("\n-- !query schema\n")
        _, _, output = rest.partition("-- !query output\n")
        found = re.search(r'"errorClass" : "([^"]+)"', output)
        lines = output.strip().splitlines()
        failed = bool(lines) and re.match(r"^[a-z]+(\.[a-zA-Z0-9_$]+)+(Exception|Error)\b",
                                          lines[0]) is not None
        outcome = found.group(1) if found else ("error" if failed else "accepted")
        yield index, query.strip(), outcome


def _values_subquery(values: exp.Values) -> exp.Expr | None:
    """``VALUES (...) AS t(a, b)`` as ``(SELECT .. AS a, .. AS b FROM parsed_events UNION
    ALL ...) AS t``; None when its rows are not tuples of one width."""
    rows = [r.expressions if isinstance(r, exp.Tuple) else [r]
            for r in values.expressions][:MAX_ROWS]
    if not rows or len({len(r) for r in rows}) != 1:
        return None
    alias = values.args.get("alias")
    names = [c.name for c in alias.columns] if isinstance(alias, exp.TableAlias) else []
    if names and len(names) != len(rows[0]):
        return None
    names = names or [f"col{i + 1}" for i in range(len(rows[0]))]
    selects = [exp.select(*(exp.alias_(v.copy(), n, quoted=False) for v, n in zip(row, names,
                                                                                   strict=True)))
               .from_(EVENTS) for row in rows]
    body: exp.Query = selects[0]
    for select in selects[1:]:
        body = exp.union(body, select, distinct=False)
    table_alias = alias.this.name if isinstance(alias, exp.TableAlias) and alias.this else "v"
    return exp.Subquery(this=body, alias=exp.TableAlias(this=exp.to_identifier(table_alias)))


def rewrite(statement: exp.Expr, views: Mapping[str, exp.Query] | None = None
            ) -> exp.Query | None:
    """``statement`` reading ``parsed_events`` instead of nothing or VALUES, the ``views``
    it reads (name -> their rewritten query) inlined as CTEs; None when it is not a query or
    reads a table (or table function) that does not exist here."""
    views = views or {}
    if not isinstance(statement, exp.Query):
        return None
    tree = statement.copy()
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    inlined: list[str] = []
    for table in list(tree.find_all(exp.Table)):
        name = table.name.lower()
        if not isinstance(table.this, exp.Identifier) or table.args.get("db") \
                or table.args.get("catalog"):
            return None
        if name in ctes:
            continue
        if name not in views:
            return None
        if name not in inlined:
            inlined.append(name)
    for values in list(tree.find_all(exp.Values)):
        if not isinstance(values.parent, (exp.From, exp.Join)):
            return None  # VALUES elsewhere (INSERT): not a query this corpus keeps
        replacement = _values_subquery(values)
        if replacement is None:
            return None
        values.replace(replacement)
    for select in list(tree.find_all(exp.Select)):
        if select.args.get("from_") is None and _outermost(select):
            select.from_(EVENTS, copy=False)
    if inlined:
        new = [exp.CTE(this=views[n].copy(), alias=exp.TableAlias(this=exp.to_identifier(n)))
               for n in inlined]
        with_ = tree.args.get("with_")
        if isinstance(with_, exp.With):
            with_.set("expressions", new + list(with_.expressions))
        else:
            tree.set("with_", exp.With(expressions=new))
    return tree


def view_of(statement: exp.Expr, views: Mapping[str, exp.Query]
            ) -> tuple[str, exp.Query | None] | None:
    """``(name, query)`` of a view or table the statement creates from a query (its query
    rewritten, None when it reads what does not exist here), ``(name, None)`` for one it
    drops or creates otherwise; None for any other statement."""
    if isinstance(statement, exp.Drop) and str(statement.args.get("kind")).upper() in (
            "VIEW", "TABLE"):
        tables = statement.args.get("tables") or [statement.this]
        return (tables[0].name.lower(), None) if tables and tables[0] is not None else None
    if not isinstance(statement, exp.Create) or \
            str(statement.args.get("kind")).upper() not in ("VIEW", "TABLE"):
        return None
    target = statement.this
    columns: list[str] = []
    if isinstance(target, exp.Schema):
        columns = [c.name for c in target.expressions]
        if not all(isinstance(c, exp.Identifier) for c in target.expressions):
            columns = []  # typed columns (CREATE TABLE t(a INT)): an empty table, no query
            target = exp.Table()
        else:
            target = target.this
    if not isinstance(target, exp.Table) or not target.name:
        return None
    query = statement.args.get("expression")
    body = rewrite(query, views) if isinstance(query, exp.Query) else None
    if body is not None and columns:
        body = exp.select("*").from_(exp.Subquery(this=body, alias=exp.TableAlias(
            this=exp.to_identifier("v"), columns=[exp.to_identifier(c) for c in columns])))
    return target.name.lower(), body


def _outermost(select: exp.Select) -> bool:
    """Whether ``select`` is a top-level query body: the statement itself, a set operation's
    branch, a CTE's body or a VALUES rewrite's row, not a scalar subquery's SELECT."""
    node: exp.Expr = select
    while node.parent is not None:
        parent = node.parent
        if isinstance(parent, (exp.SetOperation, exp.CTE, exp.With)):
            node = parent
            continue
        if isinstance(parent, exp.Subquery) and isinstance(parent.parent, (exp.From, exp.Join,
                                                                          exp.SetOperation)):
            node = parent.parent
            continue
        if isinstance(parent, (exp.From, exp.Join)):
            node = parent
            continue
        return isinstance(parent, exp.Select) and node.arg_key in ("from_", "joins", "with_") \
            and _outermost(parent)
    return True


def _without_from(sql: str) -> bool:
    """Whether sqlglot's tokens of ``sql`` start a SELECT and hold no FROM, JOIN or VALUES
    (a query kept as written: it reads no table)."""
    try:
        tokens = sqlglot.tokenize(sql, read="spark")
    except SqlglotError:
        return False
    kinds = {t.token_type for t in tokens}
    return bool(tokens) and tokens[0].token_type == TokenType.SELECT and not kinds & {
        TokenType.FROM, TokenType.JOIN, TokenType.VALUES, TokenType.TABLE, TokenType.SEMICOLON}


def model_sql(query: str, views: dict[str, exp.Query]) -> str | None:
    """The model text of one golden query, or None when the corpus leaves it out. A view (or
    table) the query creates from a query goes into ``views`` for the queries after it."""
    if any(d in query for d in _JINJA):
        return None
    try:
        statements = sqlglot.parse(query, read="spark")
    except SqlglotError:
        return query if _without_from(query) else None
    except RecursionError:
        return None
    if len(statements) != 1 or statements[0] is None:
        return None
    created = view_of(statements[0], views)
    if created is not None:
        name, body = created
        views.pop(name, None)
        if body is not None:
            views[name] = body
        return None
    tree = rewrite(statements[0], views)
    if tree is None:
        return None
    try:
        # a construct sqlglot cannot write back for Spark would change the query: left out
        return tree.sql(dialect="spark", unsupported_level=ErrorLevel.RAISE)
    except SqlglotError:
        return None


def _name(file: str, index: int) -> str:
    stem = file.removeprefix(_RESULTS).removesuffix(".sql.out").lower()
    return f"{_NAME.sub('_', stem).strip('_')}_q{index:03d}"


def build(jar: Path) -> list[dict[str, object]]:
    """Every model of the corpus, in a stable order (golden files by name, then edge cases)."""
    rows: list[dict[str, object]] = []
    seen: set[str] = set()
    with zipfile.ZipFile(jar) as z:
        files = sorted(n for n in z.namelist()
                       if n.startswith(_RESULTS) and n.endswith(".sql.out")
                       and not n.removeprefix(_RESULTS).startswith(_SKIPPED_SUITES))
        for file in files:
            views: dict[str, exp.Query] = {}  # the file's views so far, inlined as CTEs
            for index, query, outcome in golden_queries(z.read(file).decode("utf-8")):
                sql = model_sql(query, views)
                if sql is None:
                    continue
                sha = sha_of(sql)
                if sha in seen:
                    continue
                seen.add(sha)
                rows.append({"name": _name(file, index),
                             "origin": {"file": file, "query": index},
                             "sha": sha, "sql": sql, "golden": outcome})
    for name, sql in EDGE_CASES.items():
        rows.append({"name": name, "origin": {"file": "scripts/spark_sql_corpus.py",
                                              "query": 0},
                     "sha": sha_of(sql), "sql": sql, "golden": "unknown"})
    return rows


def test_jar() -> Path | None:
    """Spark's SQL test jar in ``.jars/spark-tests/``, or None before set-up fetched it."""
    return next(iter(sorted(FOLDER.glob("spark-sql_*-tests.jar"))), None)


def main(argv: list[str]) -> int:
    logging.getLogger("sqlglot").setLevel(logging.ERROR)  # its "falling back to a Command"
    jar = test_jar()
    if jar is None:
        print("error: Spark's SQL test jar is not in .jars/spark-tests (run "
              "`python scripts/jars.py spark-tests`)", file=sys.stderr)
        return 1
    stamp = FOLDER / _stamp(jar)
    if stamp.is_file() and MODELS.is_file() and "--force" not in argv:
        print(f"corpus: up to date ({MODELS.relative_to(ROOT)})")
        return 0
    rows = build(jar)
    partial = MODELS.with_suffix(".partial")
    partial.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows),
                       encoding="utf-8")
    partial.replace(MODELS)
    for old in FOLDER.glob(".corpus-*"):
        old.unlink()
    stamp.touch()
    print(f"corpus: {len(rows)} models from {jar.name} in {MODELS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
