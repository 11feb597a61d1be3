"""What Spark refuses after its parser accepted it, and sqlglot would accept: checked on tokens.

Spark's own grammar (:mod:`.spark_parser`) decides what parses. A few texts parse
in Spark and are refused right after, by its AST builder or its analyzer, while sqlglot reads
them as something else:

- a trailing comma before a clause (``SELECT a, FROM t``): Spark's grammar takes ``FROM`` for
  a column and ``t`` for its alias, and its analyzer refuses the column;
- ``DISTINCT`` with nothing after it (``count(DISTINCT)``): a column named ``distinct``;
- PostgreSQL's ``DISTINCT ON (a)``: a call of a function ``on``, which Spark does not have;
- an empty ``IN ()`` or ``TABLESAMPLE ()``, a window name defined twice in a ``WINDOW``
  clause: refused by Spark's AST builder (``[INVALID_SQL_SYNTAX.EMPTY_IN_PREDICATE]``,
  ``[INVALID_SQL_SYNTAX.REPETITIVE_WINDOW_DEFINITION]``);
- the unit of ``TIMEDIFF``, ``TIMESTAMPDIFF``, ``DATEADD``... (three arguments) given as a
  string (``TIMEDIFF('MINUTE', a, b)``): the grammar's ``invalidUnit=stringLit``, which the AST
  builder refuses (``[INVALID_PARAMETER_VALUE.DATETIME_UNIT]``).

:func:`analyzer_refuses` finds these on sqlglot's token stream, after Spark's grammar accepted
the text. The cases come from running a corpus of models through both (``tests/spark/
test_parser_agreement.py``).

Checked on tokens, never on the text: strings, quoted names and comments are single tokens
(or none), so ``'a, FROM'`` in a literal is not a trailing comma.

>>> from sqlglot.dialects.dialect import Dialect
>>> tokens = Dialect.get_or_raise("spark").tokenizer().tokenize("SELECT a, FROM t")
>>> analyzer_refuses(tokens).message
'trailing comma before FROM: Spark refuses it'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlglot.tokens import Token, TokenType

__all__ = ["GrammarProblem", "analyzer_refuses", "time_window_calls"]

T = TokenType

#: Tokens that always start a clause (reserved words or two-word keywords: never a column).
_CLAUSES = frozenset({T.FROM, T.WHERE, T.GROUP_BY, T.HAVING, T.ORDER_BY, T.SORT_BY,
                      T.DISTRIBUTE_BY, T.CLUSTER_BY, T.UNION, T.EXCEPT, T.INTERSECT, T.QUALIFY,
                      T.SELECT})
#: A join's side or kind: also a column's name (``left``, ``full``) or a function's
#: (``left(s, 1)``) unless a join word follows.
_JOIN_WORDS = frozenset({T.LEFT, T.RIGHT, T.FULL, T.INNER, T.CROSS, T.NATURAL, T.SEMI,
                         T.ANTI, T.OUTER})
_CLOSERS = frozenset({T.R_PAREN, T.R_BRACKET, T.SEMICOLON})
#: Tokens after which ``()`` (an empty list) is refused.
_NO_EMPTY_LIST = frozenset({T.IN, T.TABLE_SAMPLE})
#: The grammar's ``timestampadd`` and ``timestampdiff`` forms: ``name(unit, a, b)``.
_UNIT_CALLS = frozenset({"TIMESTAMPADD", "DATEADD", "DATE_ADD", "TIMESTAMPDIFF", "DATEDIFF",
                         "DATE_DIFF", "TIMEDIFF"})


@dataclass(frozen=True)
class GrammarProblem:
    """What Spark would refuse, and the offset in the SQL where it starts."""

    message: str
    offset: int


def _name(token: Token | None) -> str:
    return "the end of the SQL" if token is None else token.text.upper()


def _is_clause(tokens: Sequence[Token], i: int) -> bool:
    """Whether ``tokens[i]`` starts a clause, a join or a ``LATERAL VIEW``. Spark takes most
    keywords as names too (a column may be called ``offset``, ``window`` or ``left``): such a
    word starts a clause only when what follows it does (``LIMIT 10``, ``WINDOW w AS``,
    ``LEFT JOIN``)."""
    kind = tokens[i].token_type
    after = tokens[i + 1].token_type if i + 1 < len(tokens) else None
    if kind in _CLAUSES:
        return True
    if kind == T.LATERAL:
        return after == T.VIEW
    if kind in (T.LIMIT, T.OFFSET):
        return after in (T.NUMBER, T.ALL)
    if kind == T.WINDOW:
        return (after in (T.VAR, T.IDENTIFIER) and i + 2 < len(tokens)
                and tokens[i + 2].token_type == T.ALIAS)
    if kind == T.JOIN:
        return after not in (None, T.COMMA, T.FROM, T.ALIAS, T.R_PAREN)
    return kind in _JOIN_WORDS and (after == T.JOIN or after in _JOIN_WORDS)


def _ends_list(tokens: Sequence[Token], i: int) -> bool:
    return i >= len(tokens) or tokens[i].token_type in _CLOSERS or _is_clause(tokens, i)


#: How a query starts; anything else (a command) is left to the not-a-query rule's message.
_QUERY_START = frozenset({T.SELECT, T.WITH, T.L_PAREN, T.FROM, T.VALUES})


def _window_names(tokens: Sequence[Token], i: int) -> list[Token]:
    """The names a ``WINDOW`` clause starting at ``tokens[i]`` defines (``w AS (...)`` or
    ``v AS w``, separated by commas)."""
    names: list[Token] = []
    j = i + 1
    while j + 2 < len(tokens) and tokens[j + 1].token_type == T.ALIAS:
        names.append(tokens[j])
        j += 2
        if tokens[j].token_type == T.L_PAREN:  # skip the spec to its closing parenthesis
            depth = 0
            while j < len(tokens):
                depth += {T.L_PAREN: 1, T.R_PAREN: -1}.get(tokens[j].token_type, 0)
                j += 1
                if depth == 0:
                    break
        else:
            j += 1
        if j >= len(tokens) or tokens[j].token_type != T.COMMA:
            break
        j += 1
    return names


def _repeated_window(tokens: Sequence[Token], i: int) -> GrammarProblem | None:
    seen: set[str] = set()
    for name in _window_names(tokens, i):
        if name.text in seen:  # Spark compares the names as written
            return GrammarProblem(f"window {name.text} is defined twice: Spark refuses it",
                                  name.start)
        seen.add(name.text)
    return None


def _string_unit(tokens: Sequence[Token], i: int) -> GrammarProblem | None:
    """``TIMEDIFF('MINUTE', a, b)``: a unit call of three arguments whose first is one string
    literal (``unit=datetimeUnit | invalidUnit=stringLit`` in Spark's grammar; a longer first
    argument, ``'MINUTE' || ''``, makes it an ordinary call)."""
    if (tokens[i].text.upper() not in _UNIT_CALLS or (i > 0 and tokens[i - 1].token_type == T.DOT)
            or i + 3 >= len(tokens) or tokens[i + 1].token_type != T.L_PAREN
            or tokens[i + 2].token_type != T.STRING or tokens[i + 3].token_type != T.COMMA):
        return None
    depth, commas = 0, 0
    for token in tokens[i + 1:]:
        depth += {T.L_PAREN: 1, T.R_PAREN: -1}.get(token.token_type, 0)
        commas += depth == 1 and token.token_type == T.COMMA
        if depth == 0:
            break
    if commas != 2:
        return None
    name, unit = tokens[i].text.upper(), tokens[i + 2]
    return GrammarProblem(f"[INVALID_PARAMETER_VALUE.DATETIME_UNIT] {name}'s unit is the string "
                          f"'{unit.text}': Spark takes a unit word there ({name}("
                          f"{unit.text.upper()}, ...))", unit.start)


def _is_distinct_from(tokens: Sequence[Token], i: int) -> bool:
    """Whether the DISTINCT at ``tokens[i]`` is the comparison ``a IS [NOT] DISTINCT FROM b``
    (its FROM is no clause)."""
    before = [t.token_type for t in tokens[max(0, i - 2):i]]
    return before[-1:] == [T.IS] or before == [T.IS, T.NOT]


def analyzer_refuses(tokens: Sequence[Token]) -> GrammarProblem | None:
    """The first place where Spark refuses, after parsing, what sqlglot would accept, or None
    (also for a text that is not a query: ``not-a-query`` says what is wrong with it)."""
    if not tokens or tokens[0].token_type not in _QUERY_START:
        return None
    for i, token in enumerate(tokens):
        kind = token.token_type
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if kind == T.COMMA and _ends_list(tokens, i + 1):
            return GrammarProblem(f"trailing comma before {_name(nxt)}: Spark refuses it",
                                  token.start)
        if kind == T.DISTINCT and _ends_list(tokens, i + 1) and not _is_distinct_from(tokens, i):
            return GrammarProblem(f"DISTINCT has nothing after it (before {_name(nxt)}): "
                                  "Spark refuses it", token.start)
        if (kind == T.DISTINCT and nxt is not None and nxt.token_type == T.ON
                and i + 2 < len(tokens) and tokens[i + 2].token_type == T.L_PAREN):
            return GrammarProblem("DISTINCT ON is PostgreSQL's: Spark reads on(...) as a "
                                  "function, which it does not have; use row_number() OVER "
                                  "(PARTITION BY ...) = 1, or GROUP BY", nxt.start)
        if kind == T.WINDOW and _is_clause(tokens, i):
            repeated = _repeated_window(tokens, i)
            if repeated is not None:
                return repeated
        if (kind in _NO_EMPTY_LIST and nxt is not None and nxt.token_type == T.L_PAREN
                and i + 2 < len(tokens) and tokens[i + 2].token_type == T.R_PAREN):
            return GrammarProblem(f"empty list after {token.text.upper()}: Spark refuses it",
                                  nxt.start)
        if kind == T.VAR:
            unit = _string_unit(tokens, i)
            if unit is not None:
                return unit
    return None


def time_window_calls(tokens: Sequence[Token]) -> None:
    """Mark ``window(`` as a call, not the WINDOW clause, where sqlglot would stop at it:
    ``GROUP BY window(ts, '1 minute'), country`` is Spark's time window (sqlglot takes a
    WINDOW token right after ``GROUP BY`` for the start of a ``WINDOW w AS (...)`` clause and
    then fails; after a comma it already reads the call). The WINDOW clause is never followed
    by ``(``, so the token is retyped in place, before parsing."""
    for i, token in enumerate(tokens[:-1]):
        if token.token_type == T.WINDOW and tokens[i + 1].token_type == T.L_PAREN:
            token.token_type = T.VAR
