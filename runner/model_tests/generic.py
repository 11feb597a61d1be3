"""Data tests written as SQL, as dbt writes them: test macros of the project's
``tests/generic/*.sql`` and the built-ins that are SQL (dbt_utils' ``expression_is_true``,
``unique_combination_of_columns``, ``accepted_range``; ``not_null``, ``unique``,
``accepted_values``, ``relationships`` when a ``where:`` is given)::

    {% test positive(model, column_name) %}
    SELECT * FROM {{ model }} WHERE {{ column_name }} <= 0
    {% endtest %}

A test's query selects the failing rows; it passes when there are none. ``{{ model }}`` is the
model's table (with ``where:``, dbt's ``(SELECT * FROM <table> WHERE <where>) dbt_subquery``),
``column_name`` the column the test is declared on, the other parameters the test's arguments.

A test macro is a pull request's code, like a model: it renders in the models' Jinja sandbox
and budget (:func:`runner.compile.render.render_test`), and its SQL passes the guard a model
passes (:func:`guard_test_sql`: one query, allowlisted functions, only the tables it is given)
before Spark's own parser checks it again (:func:`runner.runtime.batches.sql_guard.checked_query`)
in a session that reads no file by path. This module renders and guards; :mod:`.sql_tests` runs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jinja2
import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from runner.compile.tree import TreeIndex
from runner.errors import ConfigError, RunnerError, did_you_mean
from runner.lint.reading.allowlist import query_problems
from runner.project.data_tests import (
    DATA_TESTS,
    AcceptedValues,
    DataTest,
    Generic,
    Relationships,
    TestConfig,
    Unique,
)
from runner.project.loader import MacroSource, Project

__all__ = ["BUILTIN_SQL", "TestMacro", "TestSql", "TestSqlError", "guard_test_sql",
           "test_macros", "test_sql"]

_OPEN = re.compile(r"\{%(-?)\s*test\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(")
_CLOSE = re.compile(r"\{%(-?)\s*endtest\s*(-?)%\}")

#: The SQL built-ins, as dbt and dbt_utils define them (nulls are not failures).
BUILTIN_SQL = """\
{% test not_null(model, column_name) %}
SELECT * FROM {{ model }} WHERE {{ column_name }} IS NULL
{% endtest %}
{% test unique(model, column_name) %}
SELECT {{ column_name }} AS unique_field, count(*) AS n_records FROM {{ model }}
WHERE {{ column_name }} IS NOT NULL GROUP BY {{ column_name }} HAVING count(*) > 1
{% endtest %}
{% test accepted_values(model, column_name, values, quote=true) %}
SELECT * FROM {{ model }} WHERE {{ column_name }} IS NOT NULL AND {{ column_name }} NOT IN (
{%- for v in values %}{{ sql_literal(v) }}{{ ', ' if not loop.last }}{% endfor %})
{% endtest %}
{% test relationships(model, column_name, to, field) %}
WITH child AS (SELECT {{ column_name }} AS from_field FROM {{ model }}
               WHERE {{ column_name }} IS NOT NULL),
     parent AS (SELECT {{ field }} AS to_field FROM {{ ref(to) }})
SELECT child.from_field FROM child LEFT JOIN parent ON child.from_field = parent.to_field
WHERE parent.to_field IS NULL
{% endtest %}
{% test expression_is_true(model, expression, column_name=none) %}
SELECT * FROM {{ model }} WHERE NOT ({{ column_name ~ ' ' if column_name }}{{ expression }})
{% endtest %}
{% test unique_combination_of_columns(model, combination_of_columns, quote_columns=false) %}
SELECT {{ combination_of_columns | join(', ') }}, count(*) AS n_records FROM {{ model }}
GROUP BY {{ combination_of_columns | join(', ') }} HAVING count(*) > 1
{% endtest %}
{% test accepted_range(model, column_name, min_value=none, max_value=none, inclusive=true) %}
SELECT * FROM {{ model }} WHERE NOT (1 = 1
{%- set eq = '=' if inclusive else '' %}
{%- if min_value is not none %} AND {{ column_name }} >{{ eq }} {{ min_value }}{% endif %}
{%- if max_value is not none %} AND {{ column_name }} <{{ eq }} {{ max_value }}{% endif %})
{% endtest %}
"""
_BUILTIN_PATH = "<runner built-in tests>"


class TestSqlError(RunnerError):
    """A test's SQL cannot run: it does not render, or the guard refuses it."""

    exit_code = 1


@dataclass(frozen=True)
class TestMacro:
    """One ``{% test name(...) %}`` block."""

    name: str
    path: str
    line: int
    params: tuple[str, ...]
    required: tuple[str, ...]  # the parameters without a default


def _as_macros(text: str) -> str:
    """dbt's ``{% test x(...) %}...{% endtest %}`` as Jinja's ``{% macro test_x(...) %}``
    (line for line: messages keep the file's lines)."""
    return _CLOSE.sub(r"{%\1 endmacro \2%}", _OPEN.sub(r"{%\1 macro test_\2(", text))


def _index(path: str, text: str) -> dict[str, TestMacro]:
    env = jinja2.Environment()
    try:
        tree = env.parse(_as_macros(text))
    except jinja2.TemplateSyntaxError as e:
        raise ConfigError(f"test macro syntax error: {e.message}", path=path,
                          line=e.lineno) from e
    found = {}
    for node in tree.find_all(jinja2.nodes.Macro):
        if not node.name.startswith("test_"):
            continue
        params = tuple(a.name for a in node.args)
        required = params[:len(params) - len(node.defaults)]
        name = node.name[len("test_"):]
        found[name] = TestMacro(name, path, node.lineno, params, required)
    return found


def _files(project: Project) -> list[MacroSource]:
    base = project.root / "tests" / "generic"
    if not base.is_dir():
        return []
    return [MacroSource(p.relative_to(project.root).as_posix(), p.read_text(encoding="utf-8"))
            for p in sorted(base.rglob("*.sql")) if p.is_file()]


def test_macros(project: Project) -> dict[str, TestMacro]:
    """The project's test macros by name (``tests/generic/**/*.sql``).

    Raises:
        ConfigError: a file does not parse, a name is defined twice or is a built-in's.
    """
    found: dict[str, TestMacro] = {}
    for source in _files(project):
        for name, macro in _index(source.path, source.text).items():
            if name in DATA_TESTS:
                raise ConfigError(f"test macro '{name}' has the name of a built-in test",
                                  path=macro.path, line=macro.line,
                                  hint="give it another name; the built-in stays as it is")
            if name in found:
                other = found[name]
                raise ConfigError(f"test macro '{name}' is defined twice ({other.path}:"
                                  f"{other.line} and here)", path=macro.path, line=macro.line)
            found[name] = macro
    return found


@dataclass(frozen=True)
class TestSql:
    """A test's rendered SQL and the tables it reads: models (the test's own and ref'd) and
    the views of the seeds and sources it reads."""

    sql: str
    models: tuple[str, ...]
    lookups: tuple[str, ...]


def sql_literal(value: Any) -> str:
    """A YAML value as a Spark SQL literal (``'a''b'``, ``3``, ``TRUE``, ``NULL``).

    >>> sql_literal("it's"), sql_literal(3), sql_literal(True), sql_literal(None)
    ("'it\\\\'s'", '3', 'TRUE', 'NULL')
    """
    return exp.convert(value).sql(dialect="spark")


def _arguments(test: DataTest, key: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """(macro name, its arguments) of a test; the model-level ``unique`` is a combination."""
    args = test.args
    if isinstance(args, Generic):
        return test.kind, args.arguments
    if isinstance(args, Unique) and test.column is None:
        return "unique_combination_of_columns", {
            "combination_of_columns": list(args.columns or key)}
    own = set(type(args).model_fields) - set(TestConfig.model_fields)
    out = {k: getattr(args, k) for k in sorted(own) if not isinstance(args, Unique)}
    if isinstance(args, AcceptedValues):
        out["values"] = list(args.values)
    if isinstance(args, Relationships):
        out["to"] = args.to
    return test.kind, {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}


def call_arguments(test: DataTest, macro: TestMacro, key: Sequence[str]
                   ) -> tuple[str, dict[str, Any]]:
    """The keyword arguments of the macro call, without ``model``.

    Raises:
        ConfigError: an argument the macro does not take, or one it needs is missing.
    """
    name, args = _arguments(test, key)
    if test.column is not None and "column_name" in macro.params:
        args["column_name"] = test.column
    unknown = [a for a in args if a not in macro.params]
    if unknown:
        raise ConfigError(f"test '{test.kind}' takes no argument '{unknown[0]}'"
                          + did_you_mean(unknown[0], [p for p in macro.params if p != "model"])
                          + f"; its parameters: {', '.join(macro.params)}",
                          path=macro.path, line=macro.line)
    missing = [p for p in macro.required if p != "model" and p not in args]
    if missing:
        where = "declare it under the column" if missing[0] == "column_name" else \
            f"give {missing[0]}: under the test"
        raise ConfigError(f"test '{test.kind}' needs '{missing[0]}' ({where})",
                          path=macro.path, line=macro.line)
    return name, args


def builtin_macros() -> dict[str, TestMacro]:
    return _index(_BUILTIN_PATH, BUILTIN_SQL)


def test_sql(project: Project, test: DataTest, *, model: str, key: Sequence[str],
             macros: Mapping[str, TestMacro]) -> TestSql:
    """Render a SQL test on model ``model`` (``macros``: :func:`test_macros`), guarded.

    Raises:
        TestSqlError: it does not render, or its SQL is refused.
    """
    from runner.compile.render import render_test

    builtins = builtin_macros()
    name, _ = _arguments(test, key)
    macro = macros.get(name) if test.generic else builtins[name]
    if macro is None:
        raise TestSqlError(f"no test macro '{name}' in tests/generic/")
    try:
        name, args = call_arguments(test, macro, key)
    except ConfigError as e:
        raise TestSqlError(e.message, path=e.path, line=e.line) from e
    relation = model if test.args.where is None else \
        f"(SELECT * FROM {model} WHERE {test.args.where}) AS dbt_subquery"
    sources = [MacroSource(_BUILTIN_PATH, _as_macros(BUILTIN_SQL)),
               *(MacroSource(s.path, _as_macros(s.text)) for s in _files(project))]
    try:
        rendered = render_test(
            project, macros=sources, path=f"<data test {model}: {name}>",
            text="{{ test_" + name + "(model=runner_model, **runner_args) }}",
            context={"runner_model": relation, "runner_args": args, "sql_literal": sql_literal})
    except RunnerError as e:
        raise TestSqlError(f"does not render: {e.message}", path=e.path, line=e.line,
                           hint=e.hint) from e
    models = (model, *[r for r in rendered.refs if r != model])
    guard_test_sql(rendered.sql, views={*models, *rendered.lookups})
    return TestSql(rendered.sql.strip(), models, rendered.lookups)


def guard_test_sql(sql: str, *, views: set[str]) -> None:
    """What passes here is one query over ``views`` (and its CTEs), calling allowlisted
    functions: the guard a model passes (:mod:`runner.lint.guard`).

    Raises:
        TestSqlError: naming the first problem.
    """
    try:
        statements = [s for s in sqlglot.parse(sql, read="spark") if s is not None]
    except (ParseError, TokenError) as e:
        first = e.errors[0]["description"] if isinstance(e, ParseError) and e.errors else e
        raise TestSqlError(f"its SQL does not parse: {first}") from e
    if len(statements) != 1 or not isinstance(statements[0], exp.Query):
        kind = statements[0].key.upper() if len(statements) == 1 else \
            f"{len(statements)} statements"
        raise TestSqlError(f"a test is one SELECT of the failing rows, not {kind}")
    tree = statements[0]
    for problem in query_problems(TreeIndex([tree]), models={},
                                  refs={v.lower() for v in views}):
        raise TestSqlError(f"refused: {problem.message}",
                           hint=problem.hint or "a test reads {{ model }}, ref() and source()")
