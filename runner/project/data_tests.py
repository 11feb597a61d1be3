"""The data tests a ``models/*.yml`` declares and their arguments, validated strictly
(:mod:`runner.model_tests.spec` for models; :mod:`runner.project.source_keys` for the keys a
source declares: here, in ``project/``, since both read it), in every shape dbt writes them::

    - not_null
    - unique: {config: {where: "amount > 0", severity: warn}}     # dbt's config:
    - accepted_values: {values: [a, b], severity: warn}             # keys at the top
    - accepted_values: {arguments: {values: [a, b]}}                # dbt 1.10's arguments:
    - dbt_utils.accepted_range: {min_value: 0, inclusive: true}     # dbt_utils' prefix
    - positive_amount                                               # tests/generic/*.sql

Built-ins: ``not_null``, ``unique``, ``accepted_values``, ``relationships`` (checked with
pyarrow, no Spark, unless ``where:`` is given) and ``expression_is_true``,
``unique_combination_of_columns``, ``accepted_range`` (dbt_utils' names and arguments, run as
SQL: :mod:`runner.model_tests.generic`). Any other name is a generic test macro of the
project's ``tests/generic/*.sql`` (its arguments are checked against the macro's parameters
when the suite is collected).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    WrapValidator,
    field_validator,
    model_validator,
)

from runner.errors import did_you_mean
from runner.project.config import validation_message

__all__ = ["DATA_TESTS", "MODEL_LEVEL", "SQL_TESTS", "AcceptedRange", "AcceptedValues",
           "DataTest", "DataTestItem", "ExpressionIsTrue", "Generic", "NotNull",
           "Relationships", "Strict", "TestArgs", "TestConfig", "Unique", "UniqueCombination",
           "parse_data_test"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TestConfig(Strict):
    """dbt's test configs (given under ``config:`` or next to the arguments)."""

    severity: Literal["error", "warn"] = "error"
    #: a SQL predicate: the test sees only the rows it keeps (dbt's ``where``)
    where: str | None = Field(default=None, min_length=1)
    enabled: bool = True
    name: str | None = Field(default=None, min_length=1)  # the name results show
    tags: tuple[str, ...] = ()
    meta: dict[str, Any] = Field(default_factory=dict)
    description: str | None = None

    @field_validator("severity", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value  # dbt accepts ERROR/WARN


class NotNull(TestConfig):
    """Every row has a value in the column."""


class Unique(TestConfig):
    """No two rows share a value (column level; nulls ignored, as dbt does) or a key
    (model level: ``columns``, default the merge ``unique_key``; exactly one row per key)."""

    columns: tuple[str, ...] = ()

    @field_validator("columns", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return (value,) if isinstance(value, str) else value


class AcceptedValues(TestConfig):
    """Every non-null value is one of ``values``."""

    values: tuple[Any, ...] = Field(min_length=1)
    quote: bool = True  # dbt's; values are always compared as typed literals here


_REF = re.compile(r"""^\s*ref\(\s*['"]([A-Za-z_][A-Za-z0-9_]*)['"]\s*\)\s*$""")


class Relationships(TestConfig):
    """Every non-null value exists in model ``to``'s column ``field``."""

    to: str
    field: str

    @field_validator("to")
    @classmethod
    def _unref(cls, value: str) -> str:
        match = _REF.match(value)
        return match.group(1) if match else value.strip()


class ExpressionIsTrue(TestConfig):
    """dbt_utils' ``expression_is_true``: every row satisfies ``expression`` (at column
    level: ``<column> <expression>``, e.g. ``expression: ">= 0"``)."""

    expression: str = Field(min_length=1)


class UniqueCombination(TestConfig):
    """dbt_utils' ``unique_combination_of_columns``: no two rows share these values."""

    combination_of_columns: tuple[str, ...] = Field(min_length=1)
    quote_columns: bool = False


class AcceptedRange(TestConfig):
    """dbt_utils' ``accepted_range``: every non-null value is within the bounds (each a
    number or a SQL expression; ``inclusive`` for both)."""

    min_value: Any = None
    max_value: Any = None
    inclusive: bool = True

    @model_validator(mode="after")
    def _a_bound(self) -> AcceptedRange:
        if self.min_value is None and self.max_value is None:
            raise ValueError("give min_value, max_value or both")
        return self


class Generic(TestConfig):
    """A test macro of ``tests/generic/*.sql``: its arguments are the macro's parameters."""

    model_config = ConfigDict(extra="allow", frozen=True)

    @property
    def arguments(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


TestArgs = (NotNull | Unique | AcceptedValues | Relationships | ExpressionIsTrue
            | UniqueCombination | AcceptedRange | Generic)

DATA_TESTS: dict[str, type[TestConfig]] = {
    "not_null": NotNull, "unique": Unique, "accepted_values": AcceptedValues,
    "relationships": Relationships, "expression_is_true": ExpressionIsTrue,
    "unique_combination_of_columns": UniqueCombination, "accepted_range": AcceptedRange,
}
"""Built-in data test name -> the model of its arguments."""

#: Built-ins that are SQL (the others run as SQL only with ``where:``).
SQL_TESTS = frozenset({"expression_is_true", "unique_combination_of_columns", "accepted_range"})
#: Built-ins a model (not a column) may declare; generic test macros may be declared at both.
MODEL_LEVEL = frozenset({"unique", "expression_is_true", "unique_combination_of_columns"})
_PREFIXES = ("dbt_utils.", "dbt.")
_CONFIG = frozenset(TestConfig.model_fields)


@dataclass(frozen=True)
class DataTest:
    """One declared data test: its kind, its arguments and where it was declared."""

    kind: str
    args: TestArgs
    column: str | None  # None: declared at model level

    @property
    def generic(self) -> bool:
        """A test macro of the project's ``tests/generic/``."""
        return isinstance(self.args, Generic)

    @property
    def sql(self) -> bool:
        """Runs as SQL on Spark (:mod:`runner.model_tests.generic`), not with pyarrow."""
        return self.generic or self.kind in SQL_TESTS or self.args.where is not None


def _flatten(kind: str, raw: Any) -> dict[str, Any]:
    """dbt's ``{arguments: {...}, config: {...}, <either at the top>}`` as one mapping."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ValueError(f"{kind}: its arguments are a mapping ({{values: [...]}}), got "
                         f"{type(raw).__name__} {raw!r}")
    out = {k: v for k, v in raw.items() if k not in ("arguments", "config")}
    for part in ("arguments", "config"):
        given = raw.get(part) or {}
        if not isinstance(given, Mapping):
            raise ValueError(f"{kind}.{part}: a mapping, got {type(given).__name__}")
        for key, value in given.items():
            if key in out:
                raise ValueError(f"{kind}: '{key}' is given twice (under {part}: and beside "
                                 "it); give it once")
            if part == "config" and key not in _CONFIG:
                raise ValueError(f"{kind}.config: unknown key '{key}'"
                                 + did_you_mean(str(key), sorted(_CONFIG))
                                 + f"; known: {', '.join(sorted(_CONFIG))}")
            out[key] = value
    return out


def _data_test(value: Any, generic: frozenset[str]) -> DataTest:
    """``not_null`` | ``{unique: {columns: [...]}}`` | ``{accepted_values: {values: [...]}}``
    | ``{<generic test>: {<its arguments>, config: {...}}}``."""
    if isinstance(value, str):
        kind, raw = value, None
    elif isinstance(value, Mapping) and len(value) == 1:
        kind, raw = next(iter(value.items()))
    else:
        raise ValueError("a data test is a name (not_null) or a one-key mapping "
                         "({accepted_values: {values: [...]}})")
    kind = str(kind)
    for prefix in _PREFIXES:
        if kind.startswith(prefix) and kind[len(prefix):] in DATA_TESTS:
            kind = kind[len(prefix):]
    model: type[TestConfig]
    if kind in DATA_TESTS:
        model = DATA_TESTS[kind]
    elif kind in generic:
        model = Generic
    else:
        known = [*DATA_TESTS, *sorted(generic)]
        raise ValueError(f"unknown data test '{kind}'" + did_you_mean(kind, known)
                         + f"; known: {', '.join(known)} (a test macro of your own goes in "
                           "tests/generic/<name>.sql: {% test <name>(model, column_name) %})")
    try:
        args = model.model_validate(_flatten(kind, raw))
    except ValidationError as e:
        raise ValueError(f"{kind}: " + "; ".join(m for _, m in validation_message(
            e, model))) from None
    return DataTest(kind, args, None)  # type: ignore[arg-type]


def parse_data_test(value: Any, generic: frozenset[str] = frozenset()) -> DataTest:
    """One ``data_tests:`` entry as dbt writes it (``generic``: the project's test macros).

    Raises:
        ValueError: an unknown test (with "did you mean"), arguments that do not fit it.
    """
    return _data_test(value, generic)


def _validate_item(value: Any, _handler: Any, info: ValidationInfo) -> DataTest:
    context = info.context if isinstance(info.context, Mapping) else {}
    return _data_test(value, frozenset(context.get("generic_tests", ())))


DataTestItem = Annotated[Any, WrapValidator(_validate_item)]
"""One entry of a ``data_tests:`` list; the validation context's ``generic_tests`` names the
project's test macros."""
