"""What rules see of one model: its rendered SQL parsed once, and name resolution's findings."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError, TokenError
from sqlglot.optimizer.scope import Scope, build_scope
from sqlglot.tokens import Token, Tokenizer, TokenType

from runner.compile.render import RenderedModel
from runner.compile.tree import TreeIndex
from runner.lint.reading.allowlist import Problem, query_problems
from runner.lint.resolution.shapes import Analysis, Shape
from runner.lint.sql.spark_dialect import SPARK
from runner.lint.sql.spark_grammar import analyzer_refuses, time_window_calls
from runner.lint.sql.spark_parser import spark_syntax_error
from runner.project.loader import Project

__all__ = ["ModelContext", "SyntaxProblem", "parse_sql"]


@dataclass(frozen=True)
class SyntaxProblem:
    """Why the SQL does not parse, and where (1-based line and column, when known); ``rule``
    is the guard rule that reports it instead of ``syntax`` when the guard refuses what lint's
    reader could not read (see :func:`_identifier_clause`)."""

    message: str
    line: int | None
    column: int | None
    rule: str = "syntax"
    hint: str | None = None


def _line_col(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


_TOKEN = re.compile(r"<Token token_type: TokenType\.(\w+), text: (.*?), line: \d+.*?>")
_CLASS = re.compile(r"<class 'sqlglot\.[\w.]*\.(\w+)'>")


def _readable(message: str) -> str:
    """sqlglot's token reprs in a parse error, as the text a user wrote."""
    message = _TOKEN.sub(lambda m: "the end of the SQL" if m.group(1) == "SENTINEL"
                         else f"'{m.group(2)}'", message)
    return _CLASS.sub(lambda m: m.group(1).upper(), message)


_OPEN = frozenset({TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.CASE})
_CLOSE = frozenset({TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.END})


def _too_deep(tokens: list[Token], sql: str, max_depth: int) -> SyntaxProblem | None:
    """Where the SQL nests parentheses, brackets or CASE deeper than ``max_depth`` (the
    parser recurses per level: deeper input would exhaust Python's stack)."""
    depth = 0
    for token in tokens:
        if token.token_type in _OPEN:
            depth += 1
            if depth > max_depth:
                line, col = _line_col(sql, token.start)
                return SyntaxProblem(f"the SQL nests parentheses, brackets or CASE more than "
                                     f"{max_depth} deep", line, col)
        elif token.token_type in _CLOSE:
            depth -= 1
    return None


#: The start of a problem found by sqlglot in SQL Spark's own parser accepts: lint reads the SQL
#: with sqlglot, and refuses what it cannot read (the rules could not check it).
_SQLGLOT_ONLY = "Spark's parser accepts this, but lint's SQL reader (sqlglot) does not: "


def _spark_refuses(sql: str) -> SyntaxProblem | None:
    """Why Spark's own parser refuses ``sql`` (:mod:`runner.lint.sql.spark_parser`), or None."""
    try:
        refused = spark_syntax_error(sql)
    except RecursionError:
        return SyntaxProblem("the SQL nests too deeply to parse", 1, 1)
    return None if refused is None else SyntaxProblem(refused.message, refused.line,
                                                      refused.column)


def _identifier_clause(tokens: list[Token], sql: str) -> SyntaxProblem | None:
    """``IDENTIFIER(...)`` where sqlglot cannot read the SQL (naming a function,
    ``IDENTIFIER('f')(x)``, or an alias, ``1 AS IDENTIFIER('c')``): the guard refuses every
    ``IDENTIFIER(...)`` (a name made from a string at run time), so that is the refusal, not
    lint's reader. A backquoted `` `identifier`(x) `` is a call of a function of that name."""
    for token, after in zip(tokens, tokens[1:]):
        if token.token_type == TokenType.VAR and token.text.upper() == "IDENTIFIER" \
                and after.token_type == TokenType.L_PAREN:
            return SyntaxProblem("IDENTIFIER(...) names a table, column or function from a "
                                 "string Spark resolves at run time",
                                 *_line_col(sql, token.start), rule="unsafe-table",
                                 hint="write the name itself (tables through ref() or "
                                 "source())")
    return None


def _first_statement(tokens: list[Token], sql: str) -> str:
    """The text up to the end of its first statement: Spark parses one statement, and a
    second one is single-select's to report (a model is one query)."""
    for i, token in enumerate(tokens[:-1]):
        if token.token_type == TokenType.SEMICOLON and tokens[i + 1].token_type != \
                TokenType.SEMICOLON:
            return sql[:token.end + 1]
    return sql


def _sqlglot_problem(e: ParseError) -> SyntaxProblem:
    """sqlglot's parse error, where it is (in SQL Spark's parser accepts)."""
    first = e.errors[0] if e.errors else {}
    line, col, highlight = first.get("line"), first.get("col"), first.get("highlight") or ""
    if isinstance(col, int) and highlight and "\n" not in highlight:
        col -= len(highlight) - 1  # sqlglot reports the token's last column; we use its first
    return SyntaxProblem(_SQLGLOT_ONLY + _readable(str(first.get("description") or e)), line, col)


def _token_problem(tokenizer: Tokenizer, sql: str, e: TokenError) -> SyntaxProblem:
    """sqlglot's tokenizer error, where it starts (what Spark's parser accepts and sqlglot
    cannot read)."""
    # where the failing token starts (a private attribute: absent in compiled builds)
    start = getattr(getattr(tokenizer, "_core", tokenizer), "_start", None)
    line, col = _line_col(sql, start) if isinstance(start, int) else (None, None)
    cause = str(e.__cause__ if isinstance(e.__cause__, TokenError) else e).split(" from ")[0]
    if cause.startswith("Missing "):
        cause = f"missing closing {cause[8:]} (unterminated string, name or comment)"
    return SyntaxProblem(_SQLGLOT_ONLY + cause, line, col)


def parse_sql(sql: str, *, max_chars: int = 2_000_000, max_depth: int = 40
              ) -> tuple[tuple[exp.Expr, ...], SyntaxProblem | None]:
    """Parse Spark SQL into its statements (empty ones dropped), or say why it does not parse.

    Spark's own grammar decides (:mod:`runner.lint.sql.spark_parser`); then the few refusals that
    follow Spark's parse (:func:`~runner.lint.sql.spark_grammar.analyzer_refuses`); then what
    sqlglot, which reads the tree the rules check, cannot read is refused as such. sqlglot
    parses first all the same: SQL too deep for it is refused before Spark's grammar spends
    its time on it.

    SQL longer than ``max_chars`` or nested deeper than ``max_depth`` is not parsed (a
    problem at its start, or where it gets too deep): parsing is bounded by its input.
    """
    if len(sql) > max_chars:
        return (), SyntaxProblem(f"the rendered SQL has {len(sql):,} characters; lint parses "
                                 f"at most {max_chars:,}", 1, 1)
    dialect = SPARK
    tokenizer = dialect.tokenizer()
    try:
        tokens = tokenizer.tokenize(sql)
    except TokenError as e:
        return (), _spark_refuses(sql) or _token_problem(tokenizer, sql, e)
    deep = _too_deep(tokens, sql, max_depth)
    if deep is not None:
        return (), deep
    after = analyzer_refuses(tokens)
    time_window_calls(tokens)
    try:
        parsed, unread = dialect.parser().parse(tokens, sql), None
    except RecursionError:  # before Spark's grammar, whose cold prediction is slow this deep
        return (), SyntaxProblem("the SQL nests too deeply to parse", 1, 1)
    except ParseError as e:
        parsed, unread = [], _sqlglot_problem(e)
    if tokens:  # a text of comments only is single-select's (no statement), not a syntax error
        refused = _spark_refuses(_first_statement(tokens, sql))
        if refused is not None:
            return (), refused
    if after is not None:
        return (), SyntaxProblem(after.message, *_line_col(sql, after.offset))
    if unread is not None:
        return (), _identifier_clause(tokens, sql) or unread
    return tuple(s for s in parsed if s is not None), None


@dataclass
class ModelContext:
    """One model as the rules see it.

    Attributes:
        project: the project.
        model: the rendered model (name, path, SQL, config, refs).
        statements: the parsed statements (empty when the SQL does not parse).
        syntax: why the SQL does not parse, or None.
        scope: sqlglot's scope tree of the query (see the property).
        analysis: name resolution of the model's query (None unless it is one query).
        upstream: lower-cased model name -> inferred shape of models linted before this one.
        models: lower-cased name -> name of every model of the project.
    """

    project: Project
    model: RenderedModel
    statements: tuple[exp.Expr, ...]
    syntax: SyntaxProblem | None
    analysis: Analysis | None = None
    upstream: Mapping[str, Shape | None] | None = None
    #: lower-cased name -> name of every model of the project (the linter builds it once)
    models: Mapping[str, str] | None = None
    #: lower-cased view -> how a model reads it (``{{ source('crm', 'customers') }}``) of
    #: every declared source table and seed
    lookups: Mapping[str, str] | None = None

    @property
    def query(self) -> exp.Query | None:
        """The model's single query, when it is exactly one (else None)."""
        if len(self.statements) == 1 and isinstance(self.statements[0], exp.Query):
            return self.statements[0]
        return None

    @cached_property
    def nodes(self) -> TreeIndex:
        """The nodes of the model's query statements by type, found in one walk and shared by
        the guard, the ANSI and analyzer rules and ``Step.reads`` (built after name
        resolution, which changes no structure)."""
        return TreeIndex(s for s in self.statements if isinstance(s, exp.Query))

    @cached_property
    def guard_problems(self) -> tuple[Problem, ...]:
        """What the guard (:mod:`.allowlist`) refuses in the model's own query
        statements: found once per model, read by each guard rule."""
        models = self.models if self.models is not None else {
            m.name.lower(): m.name for m in self.project.models}
        refs = {r.lower() for r in self.model.refs} | {v.lower() for v in self.model.lookups}
        return tuple(query_problems(self.nodes, models=models, refs=refs,
                                    lookups=self.lookups or {}))

    @cached_property
    def scope(self) -> Scope | None:
        """sqlglot's scope tree of the query (None when it is not one query, or when sqlglot
        cannot build the tree)."""
        query = self.query
        if query is None:
            return None
        try:
            return build_scope(query.unnest())
        except OptimizeError:
            return None

    @property
    def output_names(self) -> dict[str, str] | None:
        """Lower-cased -> declared output column names; None when not fully known."""
        if self.analysis is None or self.analysis.shape.open:
            return None
        return {n.lower(): n for n in self.analysis.shape.names}

    def position(self, node: exp.Expr | None) -> tuple[int | None, int | None]:
        """1-based line and column of ``node`` (its first token) in the model's file."""
        line, column, _ = self.locate(node)
        return line, column

    def locate(self, node: exp.Expr | None) -> tuple[int | None, int | None, str]:
        """Where ``node`` is in the model's file (see :meth:`source_position`), and a note
        naming the macro it comes from, if any."""
        line, column = self._rendered_position(node)
        text = node.name if isinstance(node, (exp.Identifier, exp.Column)) else None
        return self.source_position(line, column, text)

    def source_position(self, line: int | None, column: int | None, text: str | None = None
                        ) -> tuple[int | None, int | None, str]:
        """The file's line and column of a rendered SQL position: after Jinja loops, macros
        and multi-line tags the rendered text's lines are not the file's."""
        source_map = self.model.source_map
        if source_map is None:
            return line, column, ""
        return source_map.locate(line, column, text)

    def _rendered_position(self, node: exp.Expr | None) -> tuple[int | None, int | None]:
        """1-based line and column of ``node`` (its first token) in the rendered SQL."""
        if node is None:
            return None, None
        best: int | None = None
        for n in node.walk(bfs=False):
            meta = n._meta  # noqa: SLF001 - .meta would allocate a dict on every node
            start = meta.get("start") if meta else None
            if isinstance(start, int) and (best is None or start < best):
                best = start
        if best is None:
            return None, None
        return _line_col(self.model.sql, best)
