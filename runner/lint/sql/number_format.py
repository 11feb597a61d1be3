"""The number formats of ``to_number``/``try_to_number`` as Spark's ``ToNumberParser`` checks
them before it reads any value: a constant format it refuses is ``[INVALID_FORMAT.<reason>]``.

A port of ``ToNumberParser.formatTokens`` and ``validateFormatString`` (Spark's
``sql/catalyst/.../util/ToNumberParser.scala``): the format becomes tokens (digit runs, ``.``
or ``D``, ``,`` or ``G``, ``$``, ``S``, ``MI``, ``PR``, anything else unrecognised), digit runs
and thousands separators next to each other make one group, and the checks run in Spark's order.

>>> number_format_problem("999G")
'CONT_THOUSANDS_SEPS'
>>> number_format_problem("99G999D999G999")
'THOUSANDS_SEPS_MUST_BEFORE_DEC'
>>> number_format_problem("S$999,099.99") is None
True
"""

from __future__ import annotations

__all__ = ["number_format_problem"]

#: Token kinds: a digit run and a thousands separator are grouped into "digits".
_DIGITS, _POINT, _SEP, _DOLLAR, _SIGN, _MINUS, _OPEN, _CLOSE = (
    "digits", "point", "sep", "dollar", "S", "MI", "open", "close")
#: The order Spark requires: [PR] [MI|S] [$] [digits] [.|D] [digits] [$] [PR|MI|S].
_ORDER = ((_OPEN,), (_MINUS, _SIGN), (_DOLLAR,), (_DIGITS,), (_POINT,), (_DIGITS,), (_DOLLAR,),
          (_MINUS, _SIGN, _CLOSE))
_SINGLE = {".": _POINT, "D": _POINT, ",": _SEP, "G": _SEP, "$": _DOLLAR, "S": _SIGN}


def _tokens(fmt: str) -> list[str | tuple[str, ...]]:
    """Spark's ``formatTokens``: a group of digit runs and separators is a tuple of them
    (``"d"``, ``"sep"``); anything else a kind (an unrecognised character its own text)."""
    tokens: list[str] = []
    i = 0
    while i < len(fmt):
        char = fmt[i]
        if char in "09":
            while i < len(fmt) and fmt[i] in "09":
                i += 1
            tokens.append("d")
            continue
        if char in _SINGLE:
            tokens.append(_SINGLE[char])
        elif fmt[i:i + 2] == "MI":
            tokens.append(_MINUS)
            i += 1
        elif fmt[i:i + 2] == "PR":
            tokens.insert(0, _OPEN)
            tokens.append(_CLOSE)
            i += 1
        else:
            tokens.append("char " + char)
        i += 1
    grouped: list[str | tuple[str, ...]] = []
    group: list[str] = []
    for token in tokens:
        if token in ("d", _SEP):
            group.append(token)
            continue
        if group:
            grouped.append(tuple(group))
            group = []
        grouped.append(token)
    if group:
        grouped.append(tuple(group))
    return grouped


def _kind(token: str | tuple[str, ...]) -> str:
    return _DIGITS if isinstance(token, tuple) else token


def number_format_problem(fmt: str) -> str | None:
    """The ``INVALID_FORMAT`` subclass Spark refuses the number format ``fmt`` with, or None."""
    if not fmt:
        return "EMPTY"
    tokens = _tokens(fmt)
    kinds = [_kind(t) for t in tokens]
    if _DIGITS not in kinds:
        return "WRONG_NUM_DIGIT"
    dollar = kinds.index(_DOLLAR) if _DOLLAR in kinds else -1
    point = kinds.index(_POINT) if _POINT in kinds else -1
    if kinds.index(_DIGITS) < dollar:
        return "CUR_MUST_BEFORE_DIGIT"
    if point != -1 and point < dollar:
        return "CUR_MUST_BEFORE_DEC"
    groups = [(i, t) for i, t in enumerate(tokens) if isinstance(t, tuple)]
    for _, group in (g for g in groups if point == -1 or g[0] < point):
        seps = [j for j, t in enumerate(group) if t == _SEP]
        if any(j in (0, len(group) - 1) or group[j - 1] == _SEP or group[j + 1] == _SEP
               for j in seps):
            return "CONT_THOUSANDS_SEPS"
    if any(_SEP in group for i, group in groups if point != -1 and i > point):
        return "THOUSANDS_SEPS_MUST_BEFORE_DEC"
    if any(kinds.count(k) > 1 for k in (_POINT, _SIGN, _MINUS, _DOLLAR, _CLOSE)):
        return "WRONG_NUM_TOKEN"
    at = 0
    for allowed in _ORDER:
        if at < len(kinds) and kinds[at] in allowed:
            at += 1
    return "UNEXPECTED_TOKEN" if at < len(kinds) else None
