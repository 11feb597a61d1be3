"""The range check Spark's AST builder makes on typed integer literals (``128Y``, ``40000S``,
``9223372036854775808L``) as it builds the plan, right after its grammar accepted the text:
``[INVALID_NUMERIC_LITERAL_RANGE]`` from ``parsePlan``, so a refusal of Spark's parser.

>>> out_of_range("-128Y", "TINYINT_LITERAL") is None
True
>>> out_of_range("128Y", "TINYINT_LITERAL")[:60]
'[INVALID_NUMERIC_LITERAL_RANGE] Numeric literal 128 is outsi'
"""

from __future__ import annotations

__all__ = ["out_of_range"]

#: Token kind -> (type, minimum, maximum).
_RANGES = {"TINYINT_LITERAL": ("tinyint", -2**7, 2**7 - 1),
           "SMALLINT_LITERAL": ("smallint", -2**15, 2**15 - 1),
           "BIGINT_LITERAL": ("bigint", -2**63, 2**63 - 1)}


def out_of_range(text: str, kind: str) -> str | None:
    """Spark's message when the number ``text`` (its sign, digits and type letter, as the
    grammar's ``number`` rule holds it) of token ``kind`` is outside its type, else None."""
    if kind not in _RANGES:
        return None
    name, low, high = _RANGES[kind]
    value = text[:-1]
    if low <= int(value) <= high:
        return None
    return (f"[INVALID_NUMERIC_LITERAL_RANGE] Numeric literal {value} is outside the valid range "
            f"for {name} with minimum value of {low} and maximum value of {high}. Please adjust "
            "the value accordingly.")
