"""What rules see of one model: its rendered SQL parsed once, and name resolution's findings."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, TokenError

from ..project import Project
from ..render import RenderedModel
from .shapes import Analysis, Shape

__all__ = ["ModelContext", "SyntaxProblem", "parse_sql"]


@dataclass(frozen=True)
class SyntaxProblem:
    """Why the SQL does not parse, and where (1-based line and column, when known)."""

    message: str
    line: int | None
    column: int | None


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


def parse_sql(sql: str) -> tuple[tuple[exp.Expression, ...], SyntaxProblem | None]:
    """Parse Spark SQL into its statements (empty ones dropped), or say why it does not parse."""
    dialect = Dialect.get_or_raise("spark")
    tokenizer = dialect.tokenizer()
    try:
        tokens = tokenizer.tokenize(sql)
    except TokenError as e:
        # where the failing token starts (a private attribute: absent in compiled builds)
        start = getattr(getattr(tokenizer, "_core", tokenizer), "_start", None)
        line, col = _line_col(sql, start) if isinstance(start, int) else (None, None)
        cause = str(e.__cause__ if isinstance(e.__cause__, TokenError) else e).split(" from ")[0]
        if cause.startswith("Missing "):
            cause = f"missing closing {cause[8:]} (unterminated string, name or comment)"
        return (), SyntaxProblem(cause, line, col)
    try:
        parsed = dialect.parser().parse(tokens, sql)
    except ParseError as e:
        first = e.errors[0] if e.errors else {}
        line, col, highlight = first.get("line"), first.get("col"), first.get("highlight") or ""
        if isinstance(col, int) and highlight and "\n" not in highlight:
            col -= len(highlight) - 1  # sqlglot reports the token's last column; we use its first
        return (), SyntaxProblem(_readable(str(first.get("description") or e)), line, col)
    return tuple(s for s in parsed if s is not None), None


@dataclass
class ModelContext:
    """One model as the rules see it.

    Attributes:
        project: the project.
        model: the rendered model (name, path, SQL, config, refs).
        statements: the parsed statements (empty when the SQL does not parse).
        syntax: why the SQL does not parse, or None.
        analysis: name resolution of the model's query (None unless it is one query).
        upstream: lower-cased model name -> inferred shape of models linted before this one.
    """

    project: Project
    model: RenderedModel
    statements: tuple[exp.Expression, ...]
    syntax: SyntaxProblem | None
    analysis: Analysis | None = None
    upstream: Mapping[str, Shape | None] | None = None

    @property
    def query(self) -> exp.Query | None:
        """The model's single query, when it is exactly one (else None)."""
        if len(self.statements) == 1 and isinstance(self.statements[0], exp.Query):
            return self.statements[0]
        return None

    @property
    def output_names(self) -> dict[str, str] | None:
        """Lower-cased -> declared output column names; None when not fully known."""
        if self.analysis is None or self.analysis.shape.open:
            return None
        return {n.lower(): n for n in self.analysis.shape.names}

    def position(self, node: exp.Expression | None) -> tuple[int | None, int | None]:
        """1-based line and column of ``node`` (its first token) in the rendered SQL."""
        if node is None:
            return None, None
        best: int | None = None
        for n in node.walk(bfs=False):
            meta = n._meta  # reading .meta would allocate a dict on every node
            start = meta.get("start") if meta else None
            if isinstance(start, int) and (best is None or start < best):
                best = start
        if best is None:
            return None, None
        return _line_col(self.model.sql, best)
