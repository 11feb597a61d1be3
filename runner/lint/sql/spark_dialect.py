"""The SQL dialect lint reads models in: sqlglot's Spark, where it reads Spark SQL that Spark's
own parser accepts differently or not at all. Only what differs is overridden:

- ``a >>> b``: Spark's unsigned right shift, read as the call ``shiftrightunsigned(a, b)``
  (the function Spark's parser makes of it);
- ``INTERVAL 1 YEAR -2 MONTHS``: one literal whose units carry signs, read as the sum of its
  signed parts (not as a subtraction of a column ``MONTHS``);
- ``INTERVAL (-30) DAY``: not a literal (an interval's value is a signed number or string,
  never a parenthesised expression) but the call ``interval(-30)`` aliased ``DAY``, as
  Spark's grammar reads it (the runner's run-time guard then refuses the call);
- ``PIVOT (sum(a) + 1 AS s FOR ...)``: a pivot aggregates with any expression over aggregates;
- ``j:a.b``: the path into a JSON string or VARIANT column;
- ``TIMEDIFF(HOUR, a, b)``: the grammar's other name of ``TIMESTAMPDIFF(HOUR, a, b)``;
- ``GEOGRAPHY(ANY)`` / ``GEOMETRY(ANY)``: a spatial type of any SRID (``ANY`` is a parameter,
  not the ``ANY(...)`` aggregate);
- ``SELECT all FROM t``: the select list is the column ``all`` (no quantifier without a
  list); ``OVER (ORDER BY all)`` orders by a column ``all`` (ORDER BY ALL is a query's);
- ``|> DROP a, b.c``: the pipe operator that drops columns, read as
  ``SELECT * EXCEPT (a, b.c)`` over the query before it (what Spark's plan is).

Every parse of SQL in lint goes through :data:`SPARK` (the model's query and each config
fragment): the rules and the guard read the same tree. The tree is lint's alone: the runner
runs the model's rendered text, never SQL generated from this tree.

>>> import sqlglot
>>> sqlglot.parse_one("SELECT a >>> 2 AS u", read=SPARK).sql("spark")
'SELECT SHIFTRIGHTUNSIGNED(a, 2) AS u'
>>> sqlglot.parse_one("SELECT INTERVAL 1 YEAR -2 MONTHS AS i", read=SPARK).sql("spark")
"SELECT INTERVAL '1' YEAR + INTERVAL '-2' MONTHS AS i"
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.dialect import build_date_delta
from sqlglot.dialects.spark import Spark
from sqlglot.parsers.spark import SparkParser
from sqlglot.tokens import Token, TokenType

__all__ = ["SPARK", "RunnerSpark"]


class _Unsigned(exp.Expression):
    """The right operand of ``>>>`` while the shift is being read (never left in a tree)."""

    arg_types = {"this": True}


def _adjacent(a: Token | None, b: Token | None) -> bool:
    return a is not None and b is not None and a.end + 1 == b.start


_TIMESTAMPDIFF = build_date_delta(exp.TimestampDiff)


def _timediff(args: list[exp.Expr]) -> exp.Expr:
    """``TIMEDIFF(unit, a, b)`` is Spark's grammar's ``TIMESTAMPDIFF``; any other call of
    ``timediff`` stays a call of a function Spark does not have."""
    if len(args) == 3:
        return _TIMESTAMPDIFF(args)
    return exp.Anonymous(this="TIMEDIFF", expressions=args)


def _pipe_drop(parser: _Parser, query: exp.Select) -> exp.Select:
    """``|> DROP a, b.c``: ``SELECT * EXCEPT (a, b.c)`` over the query so far."""
    parser._advance()  # noqa: SLF001 - DROP
    columns = parser._parse_csv(lambda: _dotted_name(parser))  # noqa: SLF001
    dropped = parser._build_pipe_cte(query, [exp.Star(except_=columns)])  # noqa: SLF001
    # a CTE of its own: the next operator (``|> SELECT``) rewrites the outer SELECT's list
    return parser._build_pipe_cte(dropped, [exp.Star()])  # noqa: SLF001


def _dotted_name(parser: _Parser) -> exp.Expr | None:
    """A column or a path into its fields, any word a name (``outer.middle.inner``: Spark's
    non-reserved words name columns; sqlglot's column reader refuses some)."""
    parts = [parser._parse_id_var(any_token=True)]  # noqa: SLF001
    while parts[-1] is not None and parser._match(TokenType.DOT):  # noqa: SLF001
        parts.append(parser._parse_id_var(any_token=True))  # noqa: SLF001
    idents = [p for p in parts if isinstance(p, exp.Identifier)]
    if len(idents) != len(parts):
        return None
    head = min(len(idents), 4)  # sqlglot's layout: catalog.db.table.column, then fields
    node: exp.Expr = exp.Column(**dict(zip(("this", "table", "db", "catalog"),
                                           reversed(idents[:head]))))
    for ident in idents[head:]:
        node = exp.Dot(this=node, expression=ident)
    return node


class _Parser(SparkParser):
    FUNCTIONS = {**SparkParser.FUNCTIONS, "TIMEDIFF": _timediff}
    PIPE_SYNTAX_TRANSFORM_PARSERS = {**SparkParser.PIPE_SYNTAX_TRANSFORM_PARSERS,
                                     "DROP": _pipe_drop}

    _unsigned = False

    def _parse_term(self, parse_mod: bool = True) -> exp.Expr | None:
        # sqlglot reads `>>` and then the right operand here: a third `>` right after it is
        # Spark's `>>>` (tokens are single `>`: `array<array<int>>` closes two types)
        prev, before = self._prev, self._tokens[self._index - 2] if self._index > 1 else None
        if (self._curr is not None and self._curr.token_type == TokenType.GT
                and prev is not None and prev.token_type == TokenType.GT
                and before is not None and before.token_type == TokenType.GT
                and _adjacent(before, prev) and _adjacent(prev, self._curr)):
            self._advance()
            operand = super()._parse_term(parse_mod)
            self._unsigned = True
            return _Unsigned(this=operand)
        return super()._parse_term(parse_mod)

    def _parse_bitwise(self) -> exp.Expr | None:
        this = super()._parse_bitwise()
        if self._unsigned and this is not None:
            self._unsigned = False
            for shift in reversed(list(this.find_all(exp.BitwiseRightShift))):  # inner first
                if isinstance(shift.expression, _Unsigned):
                    call = exp.Anonymous(this="shiftrightunsigned",
                                         expressions=[shift.this, shift.expression.this])
                    this = call if shift is this else this
                    shift.replace(call)
        return this

    def _parse_interval(self, require_interval: bool = True, parse_function_unit: bool = True
                        ) -> exp.Add | exp.Interval | None:
        if (require_interval and self._curr is not None
                and self._curr.token_type == TokenType.INTERVAL
                and self._next is not None and self._next.token_type == TokenType.L_PAREN):
            return None  # INTERVAL (...): a call of a function named interval
        interval = super()._parse_interval(require_interval, parse_function_unit)
        # a signed value and its unit continue the literal (super continues unsigned ones)
        while interval is not None and self._signed_unit_follows():
            rest = super()._parse_interval(False, parse_function_unit)
            if rest is None:
                break
            interval = self.expression(exp.Add(this=interval, expression=rest))
        return interval

    def _signed_unit_follows(self) -> bool:
        sign, value, unit = (self._tokens[self._index + k] if self._index + k < len(self._tokens)
                             else None for k in range(3))
        return (sign is not None and sign.token_type in (TokenType.DASH, TokenType.PLUS)
                and value is not None and value.token_type in (TokenType.NUMBER,
                                                               TokenType.STRING)
                and unit is not None
                and unit.text.upper() in self.dialect.VALID_INTERVAL_UNITS)

    def _parse_type_size(self) -> exp.DataTypeParam | None:
        # GEOGRAPHY(ANY): the word, not the start of an ANY(...) call
        nxt = self._next
        if (self._curr is not None and self._curr.token_type == TokenType.ANY
                and nxt is not None and nxt.token_type == TokenType.R_PAREN):
            self._advance()
            return self.expression(exp.DataTypeParam(this=exp.var("ANY")))
        return super()._parse_type_size()

    def _build_pipe_cte(self, query: exp.Query, expressions: list[exp.Expr],
                        alias_cte: exp.TableAlias | None = None) -> exp.Select:
        # `|> AS t`: sqlglot's select reads FROM the alias node itself; Spark reads the
        # relation t (the CTE this builds), whose columns `t.x` then names
        select = super()._build_pipe_cte(query, expressions, alias_cte)
        from_ = select.args.get("from_")
        if from_ is not None and isinstance(from_.this, exp.TableAlias):
            from_.set("this", exp.Table(this=from_.this.this.copy()))
        return select

    def _parse_pivot_aggregation(self) -> exp.Expr | None:
        index = self._index
        func = super()._parse_pivot_aggregation()
        if func is None or self._curr is None or self._curr.token_type in (TokenType.COMMA,
                                                                         TokenType.FOR):
            return func
        self._retreat(index)  # Spark: any named expression over aggregates (sum(a) + 1 AS s)
        return self._parse_expression()

    def _parse_window(self, this: exp.Expr | None, alias: bool = False) -> exp.Expr | None:
        window = super()._parse_window(this, alias)
        order = window.args.get("order") if isinstance(window, exp.Window) else None
        for ordered in order.expressions if isinstance(order, exp.Order) else ():
            if isinstance(ordered.this, exp.Var) and ordered.this.name.upper() == "ALL":
                # ORDER BY ALL orders a query by its select list; in a window it is a column
                ident = exp.to_identifier(ordered.this.name)
                token = next((t for t in reversed(self._tokens[:self._index])
                              if t.text.upper() == "ALL"), None)
                if token is not None:
                    ident.update_positions(token)
                ordered.set("this", exp.column(ident))
        return window

    def _parse_projections(self) -> tuple[list[exp.Expr], list[exp.Expr] | None]:
        projections, other = super()._parse_projections()
        prev = self._prev
        if not projections and prev is not None and prev.token_type == TokenType.ALL:
            # SELECT all FROM t: no list after a quantifier, so Spark's grammar reads the
            # word as the select list, a column named all
            ident = exp.to_identifier(prev.text)
            ident.update_positions(prev)
            projections = [exp.column(ident)]
        return projections, other


class RunnerSpark(Spark):
    """sqlglot's Spark dialect, reading what Spark's parser reads (see the module)."""

    class Parser(_Parser):
        COLON_IS_VARIANT_EXTRACT = True
        COLON_CHAIN_IS_SINGLE_EXTRACT = False


#: The dialect lint parses in.
SPARK = RunnerSpark()
