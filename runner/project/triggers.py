"""Processing-time trigger intervals, checked before Spark starts.

>>> validate_interval("5 seconds"), validate_interval("2 minutes"), validate_interval("1 second")
(5.0, 120.0, 1.0)
"""

from __future__ import annotations

import re

from runner.errors import ConfigError

__all__ = ["validate_interval"]

_UNITS = {"millisecond": 0.001, "second": 1.0, "minute": 60.0, "hour": 3600.0, "day": 86400.0}
_INTERVAL = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(millisecond|second|minute|hour|day)s?\s*$",
                       re.IGNORECASE)


def validate_interval(text: str) -> float:
    """Seconds in a Spark processing-time interval like '10 seconds'.

    Raises:
        ConfigError: not '<number> <unit>' with unit millisecond|second|minute|hour|day.
    """
    match = _INTERVAL.match(text)
    if not match:
        raise ConfigError(f"trigger {text!r} is not an interval",
                          hint="write '<number> <unit>', e.g. '1 second', '5 seconds', "
                               "'2 minutes'")
    return float(match.group(1)) * _UNITS[match.group(2).lower()]
