"""The schema and options arguments of Spark's data-format functions (``from_json``,
``from_csv``, ``from_xml``, ``to_json``, ``to_csv``, ``to_xml``, ``schema_of_*``), as Spark's
analyser checks them (``ExprUtils.convertToMapData``, ``ExprUtils.evalSchemaExpr``):

- options are a ``map(...)`` call (``[INVALID_OPTIONS.NON_MAP_FUNCTION]``: not a
  ``struct(...)``, a column or a literal) of string keys and values
  (``map('mode', 1)``: ``[INVALID_OPTIONS.NON_STRING_TYPE]``);
- a schema is a string literal (``from_json(j, 1)``: ``[INVALID_SCHEMA.NON_STRING_LITERAL]``),
  and ``from_csv``'s describes a struct (``'array<int>'``: ``[INVALID_SCHEMA.NON_STRUCT_TYPE]``);
- a schema string reads as Spark's ``DataType.fromDDL`` reads it, by Spark's grammar
  (:func:`runner.lint.sql.spark_parser.spark_type_error`: ``'a InvalidType'`` is a
  ``[PARSE_SYNTAX_ERROR]``, ``'array<foo>'`` an ``[UNSUPPORTED_DATATYPE]``).

An argument lint cannot judge (a column of unknown type, a call that returns a map) is left to
Spark.

>>> import sqlglot
>>> from runner.lint.sql.spark_dialect import SPARK
>>> m = sqlglot.parse_one("SELECT map('mode', 1)", read=SPARK).expressions[0]
>>> options_problem(m)
"[INVALID_OPTIONS.NON_STRING_TYPE] the options map's keys and values must be strings"
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from sqlglot import exp

from runner.errors import Violation
from runner.lint.checks.rules import ModelRule
from runner.lint.reading.context import ModelContext
from runner.lint.resolution.shapes import Finding
from runner.lint.sql.spark_parser import spark_type_error

__all__ = ["FormatOptions", "format_problems", "options_problem"]

#: Function -> (position of its schema argument or None, position of its options argument).
_ARGS: dict[str, tuple[int | None, int]] = {
    "from_json": (1, 2), "from_csv": (1, 2), "from_xml": (1, 2),
    "to_json": (None, 1), "to_csv": (None, 1), "to_xml": (None, 1),
    "schema_of_json": (None, 1), "schema_of_csv": (None, 1), "schema_of_xml": (None, 1)}
#: A type string that is no struct: ``array<...>``, ``map<...>``.
_NOT_STRUCT = re.compile(r"\s*(array|map)\s*<.*>\s*", re.I | re.S)
_OPTIONS_HINT = "pass the options as map('key', 'value', ...), every key and value a string"


def _not_string_literal(node: exp.Expr) -> bool:
    return (isinstance(node, exp.Literal) and not node.is_string) or isinstance(
        node, (exp.Boolean, exp.Null))


def options_problem(node: exp.Expr) -> str | None:
    """Why Spark refuses ``node`` as a data-format function's options, or None."""
    if isinstance(node, exp.VarMap):
        keys, values = node.args.get("keys"), node.args.get("values")
        parts = [p.expressions for p in (keys, values) if isinstance(p, exp.Array)]
        if any(side and all(_not_string_literal(v) for v in side) for side in parts):
            return ("[INVALID_OPTIONS.NON_STRING_TYPE] the options map's keys and values must "
                    "be strings")
        return None
    if isinstance(node, (exp.Struct, exp.Literal, exp.Array, exp.Column, exp.Boolean,
                         exp.Null)):
        return ("[INVALID_OPTIONS.NON_MAP_FUNCTION] the options must be a map() call, not "
                f"`{node.sql(dialect='spark')}`")
    return None


def _schema_problem(name: str, node: exp.Expr) -> str | None:
    if _not_string_literal(node):
        return (f"[INVALID_SCHEMA.NON_STRING_LITERAL] {name}()'s schema must be a string "
                f"literal, not {node.sql(dialect='spark')}")
    if name == "from_csv" and isinstance(node, exp.Literal) and node.is_string and \
            _NOT_STRUCT.fullmatch(node.this):
        return (f"[INVALID_SCHEMA.NON_STRUCT_TYPE] from_csv()'s schema '{node.this}' is no "
                "struct: a CSV line is a row of columns")
    if isinstance(node, exp.Literal) and node.is_string:
        why = spark_type_error(node.this)
        if why is not None:
            return f"{why} in {name}()'s schema '{node.this}'"
    return None


def _arguments(node: exp.Expr) -> tuple[str, exp.Expr | None, exp.Expr | None] | None:
    """(function, schema argument, options argument) of a data-format call, as written."""
    if isinstance(node, exp.FromJson):
        return "from_json", node.args.get("expression"), node.args.get("options")
    if isinstance(node, exp.JSONFormat):  # to_json
        return "to_json", None, node.args.get("options")
    if not isinstance(node, exp.Anonymous) or node.name.lower() not in _ARGS:
        return None
    name = node.name.lower()
    schema_at, options_at = _ARGS[name]
    args = node.expressions
    return (name, args[schema_at] if schema_at is not None and len(args) > schema_at else None,
            args[options_at] if len(args) > options_at else None)


def format_problems(query: exp.Expr) -> Iterator[Finding]:
    """Each schema or options argument of a data-format call Spark refuses."""
    for node in query.find_all(exp.FromJson, exp.JSONFormat, exp.Anonymous):
        found = _arguments(node)
        if found is None:
            continue
        name, schema, options = found
        why = _schema_problem(name, schema) if schema is not None else None
        if schema is not None and why is not None:
            yield Finding(schema, why, "write the schema as a DDL string: 'a INT, b STRING'")
        why = options_problem(options) if options is not None else None
        if options is not None and why is not None:
            yield Finding(options, why, _OPTIONS_HINT)


class FormatOptions(ModelRule):
    """The data-format functions (from_json, to_csv, ...) get a string literal schema
    ([INVALID_SCHEMA]) and their options as a map() of strings ([INVALID_OPTIONS])."""

    id = "format-options"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.query is None or not ctx.nodes.has(exp.FromJson, exp.JSONFormat,
                                                  exp.Anonymous):
            return
        yield from self.findings(ctx, format_problems(ctx.query))
