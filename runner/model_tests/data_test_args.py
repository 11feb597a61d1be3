"""The data tests a ``models/*.yml`` declares (``not_null``, ``unique``, ``accepted_values``,
``relationships``): their arguments, validated strictly (:mod:`runner.model_tests.spec`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator

from runner.errors import did_you_mean
from runner.project.config import validation_message

__all__ = ["DATA_TESTS", "AcceptedValues", "DataTest", "DataTestItem", "NotNull",
           "Relationships", "Strict", "TestArgs", "Unique"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _TestArgs(Strict):
    severity: Literal["error", "warn"] = "error"


class NotNull(_TestArgs):
    """Every row has a value in the column."""


class Unique(_TestArgs):
    """No two rows share a value (column level; nulls ignored, as dbt does) or a key
    (model level: ``columns``, default the merge ``unique_key``; exactly one row per key)."""

    columns: tuple[str, ...] = ()

    @field_validator("columns", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return (value,) if isinstance(value, str) else value


class AcceptedValues(_TestArgs):
    """Every non-null value is one of ``values``."""

    values: tuple[Any, ...] = Field(min_length=1)


_REF = re.compile(r"""^\s*ref\(\s*['"]([A-Za-z_][A-Za-z0-9_]*)['"]\s*\)\s*$""")


class Relationships(_TestArgs):
    """Every non-null value exists in model ``to``'s column ``field``."""

    to: str
    field: str

    @field_validator("to")
    @classmethod
    def _unref(cls, value: str) -> str:
        match = _REF.match(value)
        return match.group(1) if match else value.strip()


TestArgs = NotNull | Unique | AcceptedValues | Relationships

DATA_TESTS: dict[str, type[TestArgs]] = {
    "not_null": NotNull, "unique": Unique, "accepted_values": AcceptedValues,
    "relationships": Relationships,
}
"""Data test name -> the model of its arguments."""


@dataclass(frozen=True)
class DataTest:
    """One declared data test: its kind, its arguments and where it was declared."""

    kind: str
    args: TestArgs
    column: str | None  # None: declared at model level


def _data_test(value: Any) -> DataTest:
    """``not_null`` | ``{unique: {columns: [...]}}`` | ``{accepted_values: {values: [...]}}``."""
    if isinstance(value, str):
        kind, raw = value, None
    elif isinstance(value, Mapping) and len(value) == 1:
        kind, raw = next(iter(value.items()))
    else:
        raise ValueError("a data test is a name (not_null) or a one-key mapping "
                         "({accepted_values: {values: [...]}})")
    if kind not in DATA_TESTS:
        raise ValueError(f"unknown data test '{kind}'" + did_you_mean(kind, DATA_TESTS)
                         + f"; known: {', '.join(DATA_TESTS)}")
    try:
        args = DATA_TESTS[kind].model_validate(raw or {})
    except ValidationError as e:
        raise ValueError(f"{kind}: " + "; ".join(m for _, m in validation_message(
            e, DATA_TESTS[kind]))) from None
    return DataTest(kind, args, None)


DataTestItem = Annotated[Any, AfterValidator(lambda v: _data_test(v))]


