"""Literals as Spark's parser reads them, checked from the SQL's tokens (sqlglot turns ``128Y``
into a cast and ``DATE 'x'`` into one, and checks neither):

- fractional numbers out of their type's range: ``1E309``, ``3.5e38F``
  (``[INVALID_NUMERIC_LITERAL_RANGE]``), a decimal of more than 38 digits
  (``[DECIMAL_PRECISION_EXCEEDS_MAX_PRECISION]``); typed integers (``128Y``, ``32768S``) are
  refused with Spark's parser's own message by :mod:`runner.lint.sql.spark_parser`;
- typed literals whose text is no such value: ``DATE 'mar 11 2016'``, ``DATE '2016-02-30'``,
  ``TIMESTAMP '2016-03-11 25:00:00'`` (``[INVALID_TYPED_LITERAL]``);
- interval strings that do not match their unit: ``INTERVAL '1.5' DAY``, ``INTERVAL '1-2' DAY``,
  ``INTERVAL '1 2' YEAR TO MONTH``, ``INTERVAL '1 dya'`` (``[INVALID_INTERVAL_FORMAT]``...),
  that mix year-month and day-time units (``'1 month 1 day'``, ``_LEGACY_ERROR_TEMP_0029``);
  a unit-to-unit string is read as Spark's ``IntervalUtils`` reads it
  (:mod:`runner.lint.sql.interval_strings`: ``'-\\t2-2' YEAR TO MONTH``, ``'178956970-8' YEAR TO
  MONTH``, ``'106751992 04' DAY TO HOUR``), and a count of days is one a day-time interval holds
  (``INTERVAL '2147483647' DAY``: ``[INTERVAL_ARITHMETIC_OVERFLOW.WITHOUT_SUGGESTION]``).

When in doubt it does not flag: a spelling Spark may read (time zones, time-only timestamps,
years of 5 to 7 digits, multi-unit ``DAY TO SECOND`` strings) passes.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation

from sqlglot.tokens import Token, TokenType

from runner.errors import Violation
from runner.lint.checks.rules import ModelRule
from runner.lint.reading.context import ModelContext
from runner.lint.reading.sql_tokens import tokens, violation_at
from runner.lint.sql.interval_strings import UNIT_PAIRS, days_overflow, unit_to_unit_problem

__all__ = ["InvalidLiteral", "literal_problems"]

_FRACTIONAL = {"D": ("DOUBLE", Decimal("1.7976931348623157E+308")),
               "F": ("FLOAT", Decimal("3.4028235E+38"))}
_OPERAND_END = frozenset({TokenType.VAR, TokenType.IDENTIFIER, TokenType.NUMBER,
                          TokenType.STRING, TokenType.R_PAREN, TokenType.R_BRACKET,
                          TokenType.NULL, TokenType.TRUE, TokenType.FALSE})
_DATE = re.compile(r"[+-]?\d{4,7}(?:-(\d{1,2})(?:-(\d{1,2})(?:[ T].*)?)?)?", re.S)
_DATETIME = re.compile(r"[+-]?(\d{4})-(\d{1,2})-(\d{1,2})[ T](\d{1,2}):(\d{1,2})"
                       r"(?::(\d{1,2}))?(?:[.,+\-zZ ].*)?", re.S)
#: Special values some Spark versions read (``DATE 'today'``): left to Spark.
_SPECIAL = frozenset({"epoch", "now", "today", "yesterday", "tomorrow", "allballs"})
_TYPED = {TokenType.DATE: "DATE", TokenType.TIMESTAMP: "TIMESTAMP",
          TokenType.TIMESTAMPTZ: "TIMESTAMP",
          TokenType.TIMESTAMPNTZ: "TIMESTAMP_NTZ", TokenType.TIMESTAMPLTZ: "TIMESTAMP_LTZ"}
_INTEGER = r"\s*[+-]?\s*\d+\s*"
#: A unit -> the pattern its text matches (None: not checked).
_UNIT_TEXT: dict[str, str | None] = {
              "YEAR": _INTEGER, "MONTH": _INTEGER, "WEEK": _INTEGER, "DAY": _INTEGER,
              "HOUR": _INTEGER, "MINUTE": _INTEGER, "MILLISECOND": None, "MICROSECOND": None,
              "SECOND": r"\s*[+-]?\s*(\d+(\.\d*)?|\.\d+)\s*"}
#: The units Spark's grammar reads after an interval's string (``unitInMultiUnits``, plural
#: folded): any other word there is the literal's alias.
_GRAMMAR_UNITS = frozenset({"NANOSECOND", "MICROSECOND", "MILLISECOND", "SECOND", "MINUTE",
                            "HOUR", "DAY", "WEEK", "MONTH", "YEAR"})
#: A unit-less interval string that is no number-unit pair at all: ``'1'``, ``'1.2'``, ``'+'``,
#: ``'3-3'``.
_NO_UNIT = re.compile(r"\s*[+-]?\s*[\d.]*\s*|\s*[+-]?\s*\d+-\d+\s*")
_WORD = re.compile(r"[^\W\d_]+")
#: A number-unit pair of a multi-unit interval string (``-1 month``).
_PAIR = re.compile(r"([+-]?\s*\d+(?:\.\d+)?)\s*([a-z]+)")
_UNITS = frozenset({"year", "month", "week", "day", "hour", "minute", "second", "millisecond",
                    "microsecond"})


def _negated(toks: tuple[Token, ...], k: int) -> bool:
    """The number at ``k`` has a unary minus (``-128Y``, not ``5 -128Y``)."""
    return k > 0 and toks[k - 1].token_type == TokenType.DASH and (
        k < 2 or toks[k - 2].token_type not in _OPERAND_END)


def _number(toks: tuple[Token, ...], k: int) -> str | None:
    """Why the number at ``k`` (with its suffix) is out of range, or None."""
    text = toks[k].text
    suffix = ""
    if (k + 2 < len(toks) and toks[k + 1].token_type == TokenType.DCOLON
            and toks[k + 1].start == toks[k].start):  # 128Y: sqlglot's cast, one token long
        suffix = toks[k + 2].text.upper()
    try:
        value = Decimal(text)
    except InvalidOperation:
        return None
    if _negated(toks, k):
        value = -value
    if suffix in ("Y", "S", "L"):  # Spark's parser refuses these: runner/lint/spark_parser
        return None
    double = suffix in _FRACTIONAL or (not suffix and "e" in text.lower())
    if double:
        name, limit = _FRACTIONAL.get(suffix, _FRACTIONAL["D"])
        if abs(value) > limit:
            return (f"[INVALID_NUMERIC_LITERAL_RANGE] {text}{suffix} is out of {name}'s range "
                    f"(at most {limit})")
        return None
    if suffix in ("", "BD") and "e" not in text.lower():
        digits = len(value.as_tuple().digits)
        exponent = value.as_tuple().exponent
        scale = -exponent if isinstance(exponent, int) and exponent < 0 else 0
        precision = max(digits, scale)
        if precision > 38 and (suffix or "." in text or digits > 38):
            return (f"[DECIMAL_PRECISION_EXCEEDS_MAX_PRECISION] {text}{suffix} has {precision}"
                    " digits; a DECIMAL has at most 38")
    return None


def _date_text(text: str, kind: str) -> str | None:
    """Why ``text`` is no ``kind`` value (DATE, TIMESTAMP...), when certain; else None."""
    text = text.strip()
    if text.lower() in _SPECIAL:
        return None
    if kind != "DATE" and (not text or text[0] in "Tt" or ":" in text.split("-")[0]):
        return None  # a time of day only: Spark reads it
    if not text or not (text[0].isdigit() or text[0] in "+-"):
        return "it does not start with a year"
    match = _DATETIME.fullmatch(text) if kind != "DATE" else None
    if match is not None:
        year, month, day, hour, minute, second = (int(g) if g else 0 for g in match.groups())
        if not (1 <= month <= 12 and 1 <= day <= calendar.monthrange(year % 400 or 400,
                                                                       month)[1]):
            return "no such day"
        if hour > 23 or minute > 59 or second > 59:
            return "no such time of day"
        return None
    match = _DATE.fullmatch(text) if kind == "DATE" else None
    if match is not None and match.group(2):
        year = int(re.match(r"[+-]?(\d+)", text).group(1))  # type: ignore[union-attr]
        month, day = int(match.group(1)), int(match.group(2))
        if not (1 <= month <= 12 and 1 <= day <= calendar.monthrange(year % 400 or 400,
                                                                       month)[1]):
            return "no such day"
    return None


def _interval(toks: tuple[Token, ...], k: int) -> str | None:
    """Why the interval literal at ``k`` (``INTERVAL '...' UNIT [TO UNIT]``) is refused."""
    j = k + 1
    if j < len(toks) and toks[j].token_type == TokenType.DASH:
        j += 1
    if j >= len(toks) or toks[j].token_type != TokenType.STRING:
        return None
    text = toks[j].text
    words: list[str] = []
    for t in toks[j + 1:j + 4]:  # the unit words right after the string (not an alias's AS)
        if t.token_type != TokenType.VAR:
            break
        words.append(t.text.upper())
    unit = None
    if words[:1] and words[0].rstrip("S") == "NANOSECOND":
        return f"[INVALID_INTERVAL_FORMAT.INVALID_UNIT] INTERVAL '{text}' {words[0]}: " \
               "Spark's intervals have no nanoseconds"
    if words[:1] and words[0].rstrip("S") not in _GRAMMAR_UNITS:
        words = []  # no unit of Spark's grammar: an alias (INTERVAL '1' x is INTERVAL '1')
    if words[:1] and words[0].rstrip("S") in _UNIT_TEXT:
        unit = words[0].rstrip("S")
        if words[1:2] == ["TO"] and len(words) > 2:
            unit = f"{unit} TO {words[2].rstrip('S')}"
            if unit not in UNIT_PAIRS:
                return (f"[INVALID_INTERVAL_FORMAT.UNSUPPORTED_FROM_TO_EXPRESSION] INTERVAL "
                        f"'{text}' {unit}: Spark has no such interval")
    if unit in UNIT_PAIRS:
        problem = unit_to_unit_problem(text, unit, negated=j > k + 1)
        return f"[{problem[0]}] INTERVAL '{text}' {unit}: {problem[1]}" if problem else None
    if unit is None and words:
        return None  # a unit lint does not know, or an alias: Spark's to judge
    if unit is None:  # INTERVAL '1 day 2 hours': number-unit pairs
        if _NO_UNIT.fullmatch(text):
            return f"[INVALID_TYPED_LITERAL] INTERVAL '{text}' names no unit"
        words = [w.lower() for w in _WORD.findall(text)]
        bad = [w for w in words if w.rstrip("s") not in _UNITS and w != "interval"]
        if bad:
            return f"[INVALID_TYPED_LITERAL] INTERVAL '{text}': {bad[0]} is no unit"
        return _mixed_units(text)
    pattern = _UNIT_TEXT.get(unit)
    if pattern is not None and re.fullmatch(pattern, text):
        why = days_overflow(text, unit, negated=j > k + 1)
        return f"[INTERVAL_ARITHMETIC_OVERFLOW.WITHOUT_SUGGESTION] INTERVAL '{text}' {unit}: " \
            f"{why}" if why else None
    if pattern is None:
        return None
    return (f"[INVALID_INTERVAL_FORMAT] INTERVAL '{text}' {unit}: the text does not match "
            f"{unit} ({'an integer' if pattern == _INTEGER else 'its format'})")


def _mixed_units(text: str) -> str | None:
    """Spark's AST builder refuses an interval string with both year-month units and day-time
    units (ANSI intervals are one or the other), even at zero: ``'0 month 1 day'``."""
    units = {u.rstrip("s") for _, u in _PAIR.findall(text.lower())}
    if units & {"year", "month"} and units - {"year", "month"}:
        return (f"[_LEGACY_ERROR_TEMP_0029] Cannot mix year-month and day-time fields: "
                f"INTERVAL '{text}'")
    return None


def literal_problems(sql: str) -> Iterator[tuple[int, str]]:
    """(offset, message) of each literal Spark's parser refuses in ``sql``."""
    toks = tokens(sql)
    for k, tok in enumerate(toks):
        kind = tok.token_type
        if kind == TokenType.NUMBER:
            why = _number(toks, k)
            if why:
                yield (toks[k - 1].start if _negated(toks, k) else tok.start), why
        elif kind in _TYPED and k + 1 < len(toks) and toks[k + 1].token_type == TokenType.STRING \
                and not (k > 0 and toks[k - 1].token_type in (TokenType.DCOLON, TokenType.ALIAS)):
            why = _date_text(toks[k + 1].text, _TYPED[kind])
            if why:
                yield tok.start, (f"[INVALID_TYPED_LITERAL] {_TYPED[kind]} '{toks[k + 1].text}'"
                                  f" is no {_TYPED[kind]} value: {why}")
        elif kind == TokenType.INTERVAL:
            why = _interval(toks, k)
            if why:
                yield tok.start, why


class InvalidLiteral(ModelRule):
    """Literals hold values of their type: numbers in range ([INVALID_NUMERIC_LITERAL_RANGE],
    [DECIMAL_PRECISION_EXCEEDS_MAX_PRECISION]), dates and timestamps that exist
    ([INVALID_TYPED_LITERAL]), interval strings that match their unit
    ([INVALID_INTERVAL_FORMAT])."""

    id = "invalid-literal"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        if ctx.query is None:
            return
        for offset, why in literal_problems(ctx.model.sql):
            yield violation_at(self, ctx, offset, why,
                               "write a value of the literal's type (docs/COMMANDS.md)")
