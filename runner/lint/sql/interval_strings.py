"""The string of a unit-to-unit interval literal (``INTERVAL '1-2' YEAR TO MONTH``,
``INTERVAL '1 2:03:04.5' DAY TO SECOND``) as Spark's ``IntervalUtils`` reads it: the AST
builder hands the string (negated by a minus before it) to ``fromYearMonthString`` or
``fromDayTimeString``, which trim it (``UTF8String.trimAll``: ASCII whitespace), match it
against one pattern per pair of units, and compute its value with exact arithmetic.

- no match: ``[INVALID_INTERVAL_FORMAT.UNMATCHED_FORMAT_STRING]`` (year-month) or
  ``[...UNMATCHED_FORMAT_STRING_WITH_NOTICE]`` (day-time);
- a year-month field out of range or a total past an INT of months:
  ``[INVALID_INTERVAL_FORMAT.INTERVAL_PARSING]``;
- a day-time field out of range or a total past a LONG of microseconds:
  ``[_LEGACY_ERROR_TEMP_0063]``.

A single-unit day-time literal of days (``INTERVAL '2147483647' DAY``) is a count of days the
AST builder turns into microseconds with ``IntervalUtils.getDuration``: past a LONG it is
``[INTERVAL_ARITHMETIC_OVERFLOW.WITHOUT_SUGGESTION]`` (:func:`days_overflow`).

>>> unit_to_unit_problem("178956970-8", "YEAR TO MONTH", negated=False)[0]
'INVALID_INTERVAL_FORMAT.INTERVAL_PARSING'
>>> unit_to_unit_problem("178956970-8", "YEAR TO MONTH", negated=True) is None
True
>>> unit_to_unit_problem("-\\t2-2", "YEAR TO MONTH", negated=False)[0]
'INVALID_INTERVAL_FORMAT.UNMATCHED_FORMAT_STRING'
>>> unit_to_unit_problem("\\n0 12:34:46.789\\t", "DAY TO SECOND", negated=False) is None
True
"""

from __future__ import annotations

import re

__all__ = ["UNIT_PAIRS", "days_overflow", "unit_to_unit_problem"]

#: Java's ``Character.isWhitespace`` over ASCII: what ``UTF8String.trimAll`` trims.
_WHITESPACE = " \t\n\x0b\x0c\r\x1c\x1d\x1e\x1f"
_SIGN = r"([+|-])?"  # Spark's [+|-]: a '|' is a sign too
_SECOND = r"([0-9]{1,2})(\.[0-9]{1,9})?"
#: IntervalUtils' pattern per pair of units (``dayBoundPattern``... in its source).
UNIT_PAIRS: dict[str, re.Pattern[str]] = {name: re.compile(_SIGN + body) for name, body in {
    "YEAR TO MONTH": r"([0-9]+)-([0-9]+)",
    "DAY TO HOUR": r"([0-9]{1,9}) ([0-9]{1,2})",
    "DAY TO MINUTE": r"([0-9]{1,9}) ([0-9]{1,2}):([0-9]{1,2})",
    "DAY TO SECOND": r"([0-9]{1,9}) ([0-9]{1,2}):([0-9]{1,2}):" + _SECOND,
    "HOUR TO MINUTE": r"([0-9]{1,10}):([0-9]{1,2})",
    "HOUR TO SECOND": r"([0-9]{1,10}):([0-9]{1,2}):" + _SECOND,
    "MINUTE TO SECOND": r"([0-9]{1,12}):" + _SECOND,
}.items()}
_INT_MAX, _LONG_MAX = 2 ** 31 - 1, 2 ** 63 - 1
_MICROS = {"DAY": 86_400_000_000, "HOUR": 3_600_000_000, "MINUTE": 60_000_000}
#: The most the leading field holds (Long.MaxValue microseconds in its unit); the others:
#: hours 0-23, minutes 0-59.
_LEADING_MAX = {unit: _LONG_MAX // micros for unit, micros in _MICROS.items()}
_FIELD_MAX = {"HOUR": 23, "MINUTE": 59}


class _OutOfRange(ValueError):
    pass


def _field(text: str, low: int, high: int, name: str) -> int:
    value = int(text)
    if not low <= value <= high:
        raise _OutOfRange(f"{name} {value} outside range [{low}, {high}]")
    return value


def _exact(value: int) -> int:
    if not -_LONG_MAX - 1 <= value <= _LONG_MAX:
        raise _OutOfRange("long overflow")
    return value


def _seconds(whole: str, fraction: str | None) -> int:
    """``parseSecondNano``: seconds and up to 9 fractional digits, truncated to micros."""
    micros = _field(whole, -(_LONG_MAX // 1_000_000), _LONG_MAX // 1_000_000, "second") * \
        1_000_000
    return micros + (int((fraction[1:] + "000000000")[:9]) // 1000 if fraction else 0)


def _day_time(unit: str, groups: tuple[str | None, ...], sign: int) -> int:
    """``toDTInterval``: the interval's microseconds, each field added exactly."""
    names = unit.split(" TO ")
    first, last = names[0], names[1]
    order = ["DAY", "HOUR", "MINUTE", "SECOND"]
    fields = order[order.index(first):order.index(last) + 1]
    values = list(groups)
    micros = 0
    for i, name in enumerate(fields):
        if name == "SECOND":
            micros = _exact(micros + sign * _seconds(values[i] or "0", values[i + 1]))
            break
        high = _LEADING_MAX[name] if i == 0 else _FIELD_MAX[name]
        micros = _exact(micros + sign * _field(values[i] or "0", 0, high, name.lower()) *
                        _MICROS[name])
    return micros


def unit_to_unit_problem(text: str, unit: str, *, negated: bool) -> tuple[str, str] | None:
    """(Spark's error class, why) Spark's parser refuses ``INTERVAL [-]'text' <unit>`` with,
    where ``unit`` is a pair of :data:`UNIT_PAIRS`; None when it takes it (or when the string
    is itself a whole ``INTERVAL '...' ...`` literal, which Spark reads too: not judged)."""
    pattern = UNIT_PAIRS.get(unit)
    if pattern is None:
        return None
    if negated:
        text = text[1:] if text.startswith("-") else f"-{text}"
    trimmed = text.strip(_WHITESPACE)
    if trimmed[:8].lower() == "interval":
        return None
    match = pattern.fullmatch(trimmed)
    year_month = unit == "YEAR TO MONTH"
    if match is None:
        suffix = "" if year_month else "_WITH_NOTICE"
        return (f"INVALID_INTERVAL_FORMAT.UNMATCHED_FORMAT_STRING{suffix}",
                f"the text does not match {unit}'s format")
    sign = -1 if match.group(1) == "-" else 1
    try:
        if year_month:
            years = _field(match.group(2), 0, _INT_MAX // 12, "year")
            total = sign * (years * 12 + _field(match.group(3), 0, 11, "month"))
            if not -_INT_MAX - 1 <= total <= _INT_MAX:
                raise _OutOfRange("integer overflow")
        else:
            _day_time(unit, match.groups()[1:], sign)
    except _OutOfRange as e:
        error = "INVALID_INTERVAL_FORMAT.INTERVAL_PARSING" if year_month else \
            "_LEGACY_ERROR_TEMP_0063"
        return error, str(e)
    return None


def days_overflow(text: str, unit: str, *, negated: bool) -> str | None:
    """Why ``INTERVAL [-]'text' DAY`` (or ``WEEK``) overflows when Spark's AST builder makes it
    a day-time interval (``getDuration``: days times a day's microseconds, exactly), or None.
    Only an integer count of days that fits an INT (more is another error, not judged here)."""
    per_day = {"DAY": 1, "WEEK": 7}.get(unit)
    match = re.fullmatch(r"\s*([+-]?)\s*([0-9]+)\s*", text)
    if per_day is None or match is None:
        return None
    count = int(match.group(2)) * (-1 if match.group(1) == "-" else 1) * (-1 if negated else 1)
    days = count * per_day
    if not -_INT_MAX - 1 <= count <= _INT_MAX or not -_INT_MAX - 1 <= days <= _INT_MAX:
        return None
    if -_LONG_MAX - 1 <= days * _MICROS["DAY"] <= _LONG_MAX:
        return None
    return f"{days} days are more microseconds than a day-time interval holds"
