"""What a model's SQL may call and read: Spark's built-in functions by category, and the tables
a query may name. Pure functions over sqlglot trees; :mod:`.guard` turns their findings into
violations.

The function list is Spark's own registry (``runner/lint/spark_types/functions.json``, written by
``python scripts/spark_functions.py``). sqlglot parses every name it does not model as
``Anonymous`` (``reflect``, ``java_method``, ``read_files``...: tests/unit/test_guard.py checks
that no denied name becomes a typed node), so a typed node is a function sqlglot knows, and an
``Anonymous`` one is checked here by the name Spark will resolve.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache

from sqlglot import exp

from runner.compile.tree import TreeIndex
from runner.errors import did_you_mean
from runner.lint.spark_types.builtins import FUNCTIONS_FILE

__all__ = ["RANGE_MAX_ROWS", "Problem", "function_problems", "query_problems"]

#: ``range()`` is allowed with literal bounds that make at most this many rows.
RANGE_MAX_ROWS = 1_000_000

_REASONS = {
    "jvm": "calls Java methods",
    "files": "reads files by path",
    "generator": "generates rows without bound",
    "session": "reads or changes session state",
}
_TABLE_HINT = "tables are read through ref() or source(), never by path or catalog name"


@dataclass(frozen=True)
class Problem:
    """One refused construct: the rule that refuses it, the node, the message, a hint."""

    rule: str
    node: exp.Expr
    message: str
    hint: str | None = None


@cache
def _registry() -> tuple[dict[str, str], dict[str, str]]:
    """(function name -> category, name -> reason) from functions.json."""
    data = json.loads(FUNCTIONS_FILE.read_text(encoding="utf-8"))
    categories = {name: f["category"] for name, f in data["functions"].items()}
    return categories, data["reasons"]


def _literal_int(node: exp.Expr) -> int | None:
    if isinstance(node, exp.Neg):
        inner = _literal_int(node.this)
        return -inner if inner is not None else None
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            return int(node.this)
        except ValueError:
            return None
    return None


def _range_rows(args: list[exp.Expr]) -> int | None:
    """How many rows ``range(args)`` makes, when every argument is an integer literal."""
    values = [_literal_int(a) for a in args]
    if not 1 <= len(values) <= 4 or any(v is None for v in values):
        return None
    ints = [v for v in values if v is not None]
    start, end, step = (0, ints[0], 1) if len(ints) == 1 else (ints[0], ints[1], 1)
    if len(ints) >= 3:
        step = ints[2]
    if step == 0:
        return None
    return max(0, -(-(end - start) // step))


def _anonymous(node: exp.Anonymous) -> Problem | None:
    name = node.name.lower()
    if name == "identifier":
        return Problem("unsafe-table", node, "IDENTIFIER(...) names a table or column from a "
                       "string Spark resolves at run time (a path, a catalog table)", _TABLE_HINT)
    categories, reasons = _registry()
    category = categories.get(name)
    if category is None:
        return Problem("unsafe-function", node, f"'{node.name}' is not a Spark SQL built-in "
                       "function" + did_you_mean(name, categories),
                       "a model calls built-in functions only (catalog and temporary "
                       "functions run code the pull request does not show)")
    if category == "allowed":
        return None
    if category == "generator":
        rows = _range_rows(list(node.expressions))
        if rows is not None and rows <= RANGE_MAX_ROWS:
            return None
        return Problem("unsafe-function", node, f"{name}() needs literal integer bounds of at "
                       f"most {RANGE_MAX_ROWS:,} rows", "e.g. range(0, 24) for the hours of a day")
    why = reasons.get(name) or _REASONS.get(category, "is not allowed")
    return Problem("unsafe-function", node, f"{name} {why}",
                   f"not on the allowlist of Spark SQL functions ({category})")


def _in_hint(node: exp.Expr) -> bool:
    """Whether ``node`` is inside a hint (``/*+ BROADCAST(b) */`` names relations and
    strategies, not functions or tables; Spark ignores a hint it does not know)."""
    parent = node.parent
    while parent is not None:
        if isinstance(parent, exp.Hint):
            return True
        parent = parent.parent
    return False


def _call_problem(node: exp.Expr) -> Problem | None:
    if isinstance(node, exp.Anonymous):
        return _anonymous(node)
    if isinstance(node, exp.QueryTransform):
        return Problem("unsafe-function", node, "TRANSFORM ... USING runs a shell command on "
                       "the driver or the executors", "compute the columns with SQL functions")
    if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Func):
        return Problem("unsafe-function", node, f"'{node.sql(dialect='spark')}' names a "
                       "function in a catalog", "call built-in functions by their bare name")
    if isinstance(node, exp.Command):
        return Problem("not-a-query", node, f"'{node.name}' is a command, not part of a query")
    return None


_CALLS = (exp.Anonymous, exp.QueryTransform, exp.Dot, exp.Command)


def function_problems(tree: exp.Expr) -> Iterator[Problem]:
    """Every call in ``tree`` that is not an allowlisted built-in, and every script
    transformation (``SELECT TRANSFORM(...) USING 'command'``)."""
    for node in tree.walk():
        if isinstance(node, _CALLS):
            problem = _call_problem(node)
            if problem is not None and not _in_hint(node):
                yield problem


def query_problems(nodes: TreeIndex, *, models: Mapping[str, str], refs: set[str],
                   lookups: Mapping[str, str] | None = None) -> Iterator[Problem]:
    """:func:`function_problems` of the indexed trees, and every relation that is not
    parsed_events, a ref'd model, a source or seed read through source()/ref(), or a visible
    CTE.

    Args:
        nodes: the query's nodes by type (:class:`~runner.compile.tree.TreeIndex`).
        models: lower-cased -> name of every model of the project.
        refs: lower-cased names of the models the model ref()s and of the views of the
            sources and seeds it reads through source() and ref().
        lookups: lower-cased view -> how to read it (``{{ source('crm', 'customers') }}``)
            of every declared source table and seed.
    """
    for node in nodes.of(exp.Table, *_CALLS):
        if isinstance(node, exp.Table):
            problem = _table_problem(node, models=models, refs=refs, lookups=lookups or {})
        else:
            problem = _call_problem(node)
        if problem is not None and not _in_hint(node):  # problems are rare: check them only
            yield problem


def _visible_ctes(table: exp.Table) -> Iterator[str]:
    """Lower-cased names of the CTEs visible where ``table`` stands: every CTE of an enclosing
    WITH for the query's body; for a CTE's own body, the CTEs before it (and itself, WITH
    RECURSIVE). A name defined in another subquery is not visible (Spark reads the catalog)."""
    child: exp.Expr = table
    node = table.parent
    while node is not None:
        with_ = node.args.get("with_") if isinstance(node, exp.Query) else None
        if isinstance(with_, exp.With):
            ctes = with_.expressions
            if child is with_:  # inside one of this WITH's CTEs: find which
                inner = next((i for i, c in enumerate(ctes) if _contains(c, table)), len(ctes))
                upto = inner + 1 if with_.args.get("recursive") else inner
                yield from (c.alias.lower() for c in ctes[:upto])
            else:
                yield from (c.alias.lower() for c in ctes)
        child, node = node, node.parent


def _contains(ancestor: exp.Expr, node: exp.Expr) -> bool:
    parent: exp.Expr | None = node
    while parent is not None:
        if parent is ancestor:
            return True
        parent = parent.parent
    return False


def _table_problem(table: exp.Table, *, models: Mapping[str, str], refs: set[str],
                   lookups: Mapping[str, str]) -> Problem | None:
    this = table.this
    if isinstance(this, exp.Func):
        return None  # a table-valued function, or IDENTIFIER(...): _call_problem's
    if not isinstance(this, exp.Identifier) or table.args.get("db") \
            or table.args.get("catalog"):
        return Problem("unsafe-table", table, f"'{table.sql(dialect='spark')}': {_TABLE_HINT}",
                       "write {{ ref('model') }}, or read parsed_events")
    low = this.name.lower()
    if low == "parsed_events" or low in refs:
        return None
    visible = set(_visible_ctes(table))
    if low in visible:
        return None
    if low in models:
        name = models[low]
        return Problem("unknown-table", this, f"model '{name}' is read without ref()",
                       f"write {{{{ ref('{name}') }}}}: it makes '{name}' run first in each "
                       "batch")
    if low in lookups:
        return Problem("unknown-table", this, f"'{this.name}' is read without source() or ref()",
                       f"write {lookups[low]}: the batch reads it at its pinned version")
    candidates = ["parsed_events", *sorted(refs), *sorted(visible), *models.values(),
                  *sorted(lookups)]
    return Problem("unknown-table", this, f"unknown table '{this.name}'"
                   + did_you_mean(this.name, candidates),
                   "a model reads parsed_events, {{ ref('model') }}, {{ source('s', 't') }}, "
                   "{{ ref('seed') }} or a CTE")
