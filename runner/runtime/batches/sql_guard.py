"""Defence in depth at run time: ``spark.sql`` runs a model only when Spark's own parser reads it
as one query with no script transformation, calling only allowlisted functions.

``runner compile`` already refuses anything else (:mod:`runner.lint.guard`), with sqlglot's
parser. This check uses Spark's (``ParserInterface.parseQuery``: the ``query`` rule of Spark's
grammar, which has no commands, DDL or DML), so a difference between the two parsers cannot
turn a linted model into a command. The text that passed is the text that runs: trailing
statement terminators (``;``) are cut at their token, the rest is unchanged.

The functions the parsed (unresolved) plan calls, table-valued functions and generators
included, are checked against compile's allowlist (:mod:`runner.lint.reading.allowlist`), so a model
that reached the stream without compile (a hand-edited ``target/`` or manifest) still cannot
call ``reflect``. The plan is read as Spark's JSON form after its named windows are substituted
(``WINDOW w AS (...)`` is a map the JSON form leaves out); a plan that still has a WINDOW
clause (one inside a subquery) is refused rather than left unchecked.

Over Spark Connect there is no parser to reach (no py4j): Spark is asked ``EXPLAIN EXTENDED``
of the text (an EXPLAIN runs nothing), and its parsed plan's tree is read instead: its root
must be a query's node (:data:`QUERY_ROOTS`; a command, DDL or DML is refused), no node a
script transformation, and every function it calls (``'name(`` in the tree, table-valued
functions by their node) must pass compile's allowlist. A tree string that Spark cut short
(``... N more fields`` past ``spark.sql.debug.maxToStringFields``) is refused, not read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

from runner.errors import ExecutionError
from runner.lint.reading.allowlist import function_problems
from runner.spark_client import is_remote

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
    if is_remote(spark):
        _check_remote(spark, query)
        _checked[sql] = query
        return query
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
    _check_functions(spark, plan)
    _checked[sql] = query
    return query


_FUNCTION = "org.apache.spark.sql.catalyst.analysis.UnresolvedFunction"
_TABLE_FUNCTIONS = ("org.apache.spark.sql.catalyst.analysis.UnresolvedTableValuedFunction",
                    "org.apache.spark.sql.catalyst.analysis.UnresolvedTVFAliases")
_GENERATOR = "org.apache.spark.sql.catalyst.analysis.UnresolvedGenerator"
_WINDOWS = "org.apache.spark.sql.catalyst.plans.logical.WithWindowDefinition"


def _check_functions(spark: SparkSession, plan: Any) -> None:
    """Refuse a parsed plan that calls a function compile's allowlist refuses.

    Raises:
        ExecutionError: naming the first such call, as compile would.
    """
    analyzer = spark._jsparkSession.sessionState().analyzer()  # noqa: SLF001 - py4j only
    try:
        flat = json.loads(analyzer.WindowsSubstitution().apply(plan).toJSON())
    except Exception as e:
        raise ExecutionError(f"Spark's parsed plan cannot be read to check its functions, "
                             f"refused before running: {type(e).__name__}",
                             hint="a model is one SELECT; run `runner compile`") from e
    calls = exp.Tuple(expressions=list(_calls(flat)))
    for problem in function_problems(calls):
        raise ExecutionError(f"{problem.message} (found in Spark's parsed plan), refused "
                             "before running", hint=problem.hint or "run `runner compile`")


def _calls(value: Any) -> Iterator[exp.Expr]:
    """Every function call of a plan's JSON form (nested plans and arguments included), as
    the sqlglot call :func:`~runner.lint.reading.allowlist.function_problems` checks."""
    if isinstance(value, list):
        for item in value:
            yield from _calls(item)
        return
    if not isinstance(value, dict):
        return
    cls = value.get("class")
    if cls == _FUNCTION:
        yield _call(_parts(value.get("nameParts")), [])
    elif cls in _TABLE_FUNCTIONS:
        args = value.get("functionArgs")
        yield _call(_parts(value.get("name")), args if isinstance(args, list) else [])
    elif cls == _GENERATOR:
        name = value.get("name")
        parts = [name.get("database"), name.get("funcName")] if isinstance(name, dict) else []
        yield _call([p for p in parts if isinstance(p, str)] or [""], [])
    elif cls == _WINDOWS:  # its definitions are a map Spark's JSON form leaves out
        raise ExecutionError("a WINDOW clause inside a subquery cannot be checked for its "
                             "functions, refused before running",
                             hint="define the window inline: ... OVER (PARTITION BY ...)")
    for item in value.values():
        if isinstance(item, (list, dict)):
            yield from _calls(item)


def _parts(name: Any) -> list[str]:
    """``[a, b]`` (Spark's JSON form of a multi-part name) as its parts."""
    if not isinstance(name, str):
        return [""]
    inner = name[1:-1] if name.startswith("[") and name.endswith("]") else name
    return inner.split(", ")


def _call(parts: list[str], args: list[Any]) -> exp.Expr:
    """A call of ``parts`` (a catalog-qualified name when more than one) with the literal
    integer arguments of ``args`` (each argument a flattened tree: a literal is one node)."""
    values: list[exp.Expr] = []
    for arg in args:
        node = arg[0] if isinstance(arg, list) and len(arg) == 1 else None
        if isinstance(node, dict) and node.get("dataType") in ("integer", "long") \
                and isinstance(node.get("value"), str):
            values.append(exp.Literal.number(node["value"]))
        else:
            values.append(exp.column("expression"))  # not a literal: bounds unknown
    call: exp.Expr = exp.Anonymous(this=parts[-1], expressions=values)
    if len(parts) > 1:
        call = exp.Dot(this=exp.column(parts[-2], table=".".join(parts[:-2]) or None),
                       expression=call)
    return call


#: The parsed plan's root nodes of a query (Spark's ``query`` rule); anything else is refused.
QUERY_ROOTS = frozenset({
    "Project", "Aggregate", "Filter", "Sort", "GlobalLimit", "LocalLimit", "Offset", "Tail",
    "Distinct", "Deduplicate", "Union", "Intersect", "Except", "Join", "LateralJoin", "CTE",
    "UnresolvedWith", "WithCTE", "SubqueryAlias", "Window", "WithWindowDefinition", "Generate",
    "Pivot", "Unpivot", "Sample", "RepartitionByExpression", "Repartition",
    "RebalancePartitions", "UnresolvedHint", "UnresolvedRelation",
    "UnresolvedTableValuedFunction", "UnresolvedInlineTable", "LocalRelation", "OneRowRelation",
    "Expand", "Range"})
#: A call in a parsed plan's tree: ``'name(``, ``'db.name(``, ``'`quoted`(``.
_TREE_CALL = re.compile(r"'((?:`[^`]+`|\w+)(?:\.(?:`[^`]+`|\w+))*)\(")
#: What Spark's tree string puts in place of a list's tail past ``maxToStringFields``.
_TRUNCATED = re.compile(r"\.\.\. \d+ more fields")
_TREE_TVF = re.compile(r"'UnresolvedTableValuedFunction \[([^\]]*)\], \[([^\]]*)\]")


def _check_remote(spark: SparkSession, query: str) -> None:
    """:func:`checked_query`'s checks with Spark's answers through a Connect client."""
    try:
        text = spark.sql(f"EXPLAIN EXTENDED {query}").collect()[0][0]
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ExecutionError(f"not one query to Spark's parser, refused before running: "
                             f"{first}",
                             hint="a model is one SELECT; run `runner compile`") from e
    parsed = str(text).split("== Parsed Logical Plan ==", 1)[-1].split("== Analyzed", 1)[0]
    if _TRUNCATED.search(parsed):  # a list cut short could hide a call: never read as complete
        raise ExecutionError("Spark's parsed plan of the model is truncated "
                             "(spark.sql.debug.maxToStringFields), so its calls cannot all be "
                             "checked: refused before running",
                             hint="raise spark.sql.debug.maxToStringFields on the server, or "
                             "split the model's select list")
    lines = [line for line in parsed.splitlines() if line.strip()]
    nodes = [m.group(1) for line in lines if (m := _NODE.match(line))]
    if not nodes or nodes[0] not in QUERY_ROOTS:
        raise ExecutionError(f"not one query to Spark's parser ({nodes[0] if nodes else 'no plan'}"
                             "), refused before running",
                             hint="a model is one SELECT; run `runner compile`")
    if "ScriptTransformation" in nodes:
        raise ExecutionError("runs a script (TRANSFORM ... USING), refused before running",
                             hint="compute the columns with SQL functions")
    found = [_call([p.strip("`") for p in _split_name(m.group(1))], [])
             for m in _TREE_CALL.finditer(parsed)]
    found += [_call(m.group(1).split(", "), [_tree_literal(a) for a in m.group(2).split(", ")])
              for m in _TREE_TVF.finditer(parsed)]
    calls = exp.Tuple(expressions=found)
    for problem in function_problems(calls):
        raise ExecutionError(f"{problem.message} (found in Spark's parsed plan), refused "
                             "before running", hint=problem.hint or "run `runner compile`")


def _tree_literal(arg: str) -> list[dict[str, str]] | str:
    """A table function's argument in a tree string as :func:`_call` reads the JSON form's:
    an integer literal as one node, anything else unknown."""
    text = arg.strip()
    if re.fullmatch(r"-?\d+L?", text):
        return [{"dataType": "long", "value": text.rstrip("L")}]
    return text


def _split_name(name: str) -> list[str]:
    """``db.`f.x``` as its parts, dots inside backquotes kept.

    >>> _split_name("sys.`my.fn`")
    ['sys', '`my.fn`']
    """
    parts, current, quoted = [], "", False
    for ch in name:
        if ch == "`":
            quoted = not quoted
        if ch == "." and not quoted:
            parts.append(current)
            current = ""
        else:
            current += ch
    return [*parts, current]
