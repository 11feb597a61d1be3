"""The calls of Spark built-ins in a model, read from its SQL's tokens as Spark sees them:
each call's signature (:mod:`runner.lint.spark_types.builtins`), where its name starts, its
arguments (by position or name, lambdas, NULL literals) mapped to sqlglot's nodes, and whether an
OVER clause follows. sqlglot's nodes rename, merge and drop arguments, so the calls are read from
what was written; the grammar's own forms (``trim(BOTH 'x' FROM s)``, ``count(DISTINCT a)``,
``DATE_ADD(DAY, 1, d)``) and types (``DECIMAL(10, 2)``) are no calls here.

Its own module so that the rules that judge calls (:mod:`runner.lint.checks.signatures`) and the
checks of their argument values (:mod:`runner.lint.checks.call_values`) both read :class:`Call` from
here, one way.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.tokens import Token, TokenType

from runner.lint.reading.context import ModelContext
from runner.lint.reading.sql_tokens import tokens as sql_tokens
from runner.lint.spark_types.builtins import Signature, signature

__all__ = ["OPERAND_END", "Arg", "Call", "calls", "sql_text"]

#: Tokens that end an operand: a ``+`` after one is binary.
OPERAND_END = frozenset({
    TokenType.VAR, TokenType.IDENTIFIER, TokenType.NUMBER, TokenType.STRING, TokenType.R_PAREN,
    TokenType.R_BRACKET, TokenType.NULL, TokenType.TRUE, TokenType.FALSE, TokenType.END,
    TokenType.STAR})



@dataclass(frozen=True)
class Arg:
    """One argument of a call as written: its node (None when lint cannot tell which it is),
    its name when passed by name (``k => v``), whether it is a lambda (``x -> ...``)."""

    node: exp.Expr | None
    start: int
    name: str | None = None
    is_lambda: bool = False
    is_null: bool = False  # the NULL literal (sqlglot keeps no position for it: no node)


@dataclass(frozen=True)
class Call:
    """A call of a built-in, read from the SQL's tokens (sqlglot's nodes rename, merge and
    drop arguments; Spark sees what was written): the signature, where its name starts in
    the rendered SQL, its arguments."""

    signature: Signature
    start: int
    args: tuple[Arg, ...]
    over: bool = False  # an OVER clause follows

    @property
    def name(self) -> str:
        return self.signature.name


#: Tokens inside a call's parentheses that make it special syntax (``trim(BOTH 'x' FROM s)``,
#: ``count(DISTINCT a)``, ``count(*)``...) or not a call (``EXISTS (SELECT ...)``): skipped.
_SPECIAL = frozenset({
    TokenType.FROM, TokenType.FOR, TokenType.IN, TokenType.DISTINCT, TokenType.ALL,
    TokenType.ORDER_BY, TokenType.WHERE, TokenType.SELECT, TokenType.WITH, TokenType.VALUES,
    TokenType.STAR, TokenType.ALIAS, TokenType.TABLE})
_SPECIAL_WORDS = frozenset({"BOTH", "LEADING", "TRAILING", "PLACING", "IGNORE", "RESPECT",
                            "NULLS"})
#: A name after these is no call: an alias (``AS t(a, b)``, ``VALUES (1) v(a)``), a field, a type.
_NOT_BEFORE_CALL = frozenset({
    TokenType.VAR, TokenType.IDENTIFIER, TokenType.R_PAREN, TokenType.STRING, TokenType.NUMBER,
    TokenType.ALIAS, TokenType.DOT, TokenType.DCOLON, TokenType.COLON})
#: Names that are also syntax: ``x IN (...)``, ``LIKE ANY (...)``, ``> SOME (...)``.
_QUANTIFIERS = frozenset({"in", "any", "some", "all"})
_DATETIME_UNITS = frozenset({
    "YEAR", "YEARS", "QUARTER", "QUARTERS", "MONTH", "MONTHS", "WEEK", "WEEKS", "DAY", "DAYS",
    "DAYOFYEAR", "HOUR", "HOURS", "MINUTE", "MINUTES", "SECOND", "SECONDS", "MILLISECOND",
    "MILLISECONDS", "MICROSECOND", "MICROSECONDS", "NANOSECOND", "NANOSECONDS"})
_TYPE_NAMES = frozenset({"decimal", "dec", "numeric", "char", "varchar", "character"})


def sql_text(node: exp.Expr) -> str:
    """``node`` as Spark SQL, for a message (no comments)."""
    return node.sql(dialect="spark", comments=False)


def _spans(root: exp.Expr) -> dict[tuple[int, int], exp.Expr]:
    """(first offset, last offset) in the SQL -> the outermost node that spans exactly that."""
    order = list(root.walk(bfs=False))
    span: dict[int, tuple[int, int]] = {}
    for node in reversed(order):  # children first
        meta = node._meta  # noqa: SLF001 - .meta would allocate a dict on every node
        lo = meta.get("start") if meta else None
        hi = meta.get("end") if meta else None
        for child in node.iter_expressions():
            s = span.get(id(child))
            if s is not None:
                lo = s[0] if lo is None else min(lo, s[0])
                hi = s[1] if hi is None else max(hi, s[1])
        if isinstance(lo, int) and isinstance(hi, int):
            span[id(node)] = (lo, hi)
    out: dict[tuple[int, int], exp.Expr] = {}
    for node in order:
        s = span.get(id(node))
        if s is not None:
            out.setdefault(s, node)
    return out


def _split(tokens: tuple[Token, ...], open_at: int) -> tuple[list[tuple[int, int]], int] | None:
    """The token ranges ``[i, j)`` of the top-level arguments of the call whose ``(`` is at
    ``open_at``, and the index of its ``)``; None for special syntax."""
    depth, start = 0, open_at + 1
    ranges: list[tuple[int, int]] = []
    for k in range(open_at + 1, len(tokens)):
        kind = tokens[k].token_type
        if kind in (TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.CASE):
            depth += 1
        elif kind in (TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.END):
            if depth == 0:
                if k > start or ranges:
                    ranges.append((start, k))
                return ranges, k
            depth -= 1
        elif depth == 0 and kind == TokenType.COMMA:
            ranges.append((start, k))
            start = k + 1
        elif kind == TokenType.STAR and k > start and \
                tokens[k - 1].token_type in OPERAND_END:
            continue  # a product (a * b), not count(*) or t.*
        elif depth == 0 and (kind in _SPECIAL or tokens[k].text.upper() in _SPECIAL_WORDS):
            return None
    return None


def _arg(tokens: tuple[Token, ...], i: int, j: int, spans: dict[tuple[int, int], exp.Expr],
         keys: list[tuple[int, int]], call: str, sql: str) -> Arg:
    name = None
    first = tokens[i].start if j > i else 0
    kinds = [t.token_type for t in tokens[i:j]]
    if j - i > 2 and kinds[1] == TokenType.FARROW:
        name, i = tokens[i].text, i + 2
    is_lambda = TokenType.ARROW in kinds
    while (j - i > 2 and tokens[i].token_type == TokenType.L_PAREN
           and tokens[j - 1].token_type == TokenType.R_PAREN
           and _split(tokens, i) == ([(i + 1, j - 1)], j - 1)):
        i, j = i + 1, j - 1  # (expr): the node spans what is inside
    node = _covering(spans, keys, tokens[i].start, tokens[j - 1].end) if j > i else None
    is_null = j - i == 1 and tokens[i].token_type == TokenType.NULL
    return Arg(_inside(node, call) or _null_cast(tokens[i:j], sql), first, name, is_lambda,
               is_null)


def _null_cast(tokens: tuple[Token, ...], sql: str) -> exp.Expr | None:
    """``CAST(NULL AS STRING)``: sqlglot keeps no position for NULL or the type, so no node
    spans it; built again from its tokens, the NULL where it is in the SQL."""
    kinds = [t.token_type for t in tokens]
    cast = tokens[0].text.upper() if tokens else ""
    if len(tokens) < 6 or cast not in ("CAST", "TRY_CAST") or \
            kinds[1:4] != [TokenType.L_PAREN, TokenType.NULL, TokenType.ALIAS] or \
            kinds[-1] != TokenType.R_PAREN or TokenType.R_PAREN in kinds[4:-1]:
        return None  # not CAST(NULL AS <type>), or a type with parentheses: left alone
    try:
        to = exp.DataType.build(sql[tokens[4].start:tokens[-2].end + 1], dialect="spark")
    except (ParseError, ValueError):
        return None
    null = exp.Null()
    null.meta.update(start=tokens[2].start, end=tokens[2].end)
    return exp.Cast(this=null, to=to) if cast == "CAST" else exp.TryCast(this=null, to=to)


def _inside(node: exp.Expr | None, call: str) -> exp.Expr | None:
    """``node``, or its one child when ``node`` is the call itself: a call sqlglot keeps no
    position for (``ANY(x)``) spans exactly its one argument."""
    if node is None or node._meta:  # noqa: SLF001 - .meta would allocate a dict
        return node
    own = node.sql_name() if isinstance(node, exp.Func) else node.key
    if own.lower() == call:
        children = list(node.iter_expressions())
        return children[0] if len(children) == 1 else None
    return node


def _covering(spans: dict[tuple[int, int], exp.Expr], keys: list[tuple[int, int]], lo: int,
              hi: int) -> exp.Expr | None:
    """The node that spans ``[lo, hi]`` exactly, else the one node that covers every node
    inside it: sqlglot keeps no position for keywords and types, so ``CAST(x AS INT)``,
    ``array(1, 2)`` or ``-x`` span only what is inside them (None when two nodes side by
    side are the widest: lint cannot tell which the argument is)."""
    exact = spans.get((lo, hi))
    if exact is not None:
        return exact
    inside = [s for s in keys[bisect_left(keys, (lo, -1)):bisect_right(keys, (hi, hi))]
              if s[1] <= hi]
    if not inside:
        return None
    widest = (min(s[0] for s in inside), max(s[1] for s in inside))
    return spans.get(widest)


def _over(tokens: tuple[Token, ...], close: int) -> bool:
    """An OVER clause follows the call whose ``)`` is at ``close`` (after IGNORE/RESPECT NULLS)."""
    k = close + 1
    if k + 1 < len(tokens) and tokens[k].text.upper() in ("IGNORE", "RESPECT") and \
            tokens[k + 1].text.upper() == "NULLS":
        k += 2
    return k < len(tokens) and tokens[k].token_type == TokenType.OVER


def calls(ctx: ModelContext) -> list[Call]:
    """Calls of built-ins with a recorded signature in the model's query, in source order."""
    query = ctx.query
    if query is None:
        return []
    return _calls(ctx.model.sql, query)


def _calls(sql: str, query: exp.Expr) -> list[Call]:
    tokens = sql_tokens(sql)
    spans: dict[tuple[int, int], exp.Expr] | None = None
    keys: list[tuple[int, int]] = []
    out = []
    for k in range(len(tokens) - 1):
        if tokens[k + 1].token_type != TokenType.L_PAREN:
            continue
        name = tokens[k].text.lower()
        sig = signature(name)
        if sig is None or name == "in" or (k > 0 and tokens[k - 1].token_type in
                                           _NOT_BEFORE_CALL):
            continue
        if tokens[k].token_type == TokenType.NOT:
            continue  # NOT (a, b) IN (...): Spark's grammar reads NOT as the operator
        if name in _QUANTIFIERS and k > 0 and tokens[k - 1].token_type not in (
                TokenType.SELECT, TokenType.COMMA, TokenType.L_PAREN):
            continue
        split = _split(tokens, k + 1)
        if split is None:
            continue
        ranges = split[0]
        unit = tokens[ranges[0][0]] if ranges and ranges[0][1] - ranges[0][0] == 1 else None
        if unit is not None and unit.token_type != TokenType.STRING and \
                unit.text.upper() in _DATETIME_UNITS:
            continue  # DATE_ADD(DAY, 1, d), DATEDIFF(MONTH, a, b): the grammar's unit forms
        if name in _TYPE_NAMES and all(j - i == 1 and tokens[i].token_type == TokenType.NUMBER
                                       for i, j in ranges):
            continue  # DECIMAL(10, 2): a type
        if spans is None:
            spans = _spans(query)
            keys = sorted(spans)
        out.append(Call(sig, tokens[k].start, tuple(_arg(tokens, i, j, spans, keys, name, sql)
                                                    for i, j in ranges), _over(tokens, split[1])))
    return out

