"""The unit tests a ``models/*.yml`` declares (:mod:`runner.model_tests.spec` reads them,
:mod:`runner.model_tests.dbt_units` converts dbt's top-level ``unit_tests:`` to them) and the
error every ``models/*.yml`` problem is."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, Field, PrivateAttr

from runner.errors import ConfigError
from runner.project.data_tests import Strict as _Strict

__all__ = ["Expect", "Given", "SpecError", "UnitTest"]


class SpecError(ConfigError):
    """A ``models/*.yml`` file is wrong: a configuration error (exit code 2, COMMANDS.md),
    found by ``runner compile`` and reported alike by ``test`` and ``docs``."""


def _event(value: Any) -> Any:
    if isinstance(value, (str, Mapping)):
        return dict(value) if isinstance(value, Mapping) else value
    raise ValueError(f"an event is a JSON object (a mapping) or a raw line (a string); got "
                     f"{type(value).__name__} {value!r}: quote it to send it as a raw line")


def _row(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    raise ValueError(f"a row is a mapping of column -> value; got {type(value).__name__} "
                     f"{value!r}")


Event = Annotated[Any, AfterValidator(_event)]
Row = Annotated[Any, AfterValidator(_row)]


class Given(_Strict):
    events: tuple[Event, ...] = ()
    prior_rows: tuple[Row, ...] = ()
    # rows of the sources (``<source>.<table>``) and seeds (``<name>``) the model joins; a
    # seed not given is read from its CSV file, a source not given is an error
    sources: dict[str, tuple[Row, ...]] = Field(default_factory=dict)
    seeds: dict[str, tuple[Row, ...]] = Field(default_factory=dict)
    # rows of upstream models (dbt's ``input: ref('model')``): the model is not run, its rows
    # are these
    models: dict[str, tuple[Row, ...]] = Field(default_factory=dict)


class Expect(_Strict):
    rows: tuple[Row, ...]
    dead_letters: tuple[str, ...] | None = None


class UnitTest(_Strict):
    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    description: str | None = None
    given: Given
    expect: Expect
    #: ``path:line`` of a test declared apart from its model (dbt's top-level unit_tests:)
    _origin: str = PrivateAttr(default="")

    @property
    def origin(self) -> str:
        """``path:line`` of a test declared apart from its model; "" for one in its spec."""
        return self._origin

    def declared_at(self, where: str) -> UnitTest:
        """This test, recorded as declared at ``where`` (``path:line``)."""
        self._origin = where
        return self
