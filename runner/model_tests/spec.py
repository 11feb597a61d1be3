"""Strict models of ``models/<model>.yml``: descriptions, data tests and unit tests.

One YAML file per model, next to its SQL file and named after it::

    description: One row per request.
    columns:
      - name: eventId
        description: The event's id.
        data_tests: [not_null, unique]
      - name: status_class
        data_tests:
          - accepted_values: {values: [ok, client_error, server_error]}
    data_tests:                    # model-level: unique over a key (default: the merge key)
      - unique: {columns: [eventId, endpoint]}
    unit_tests:
      - name: classifies_server_errors
        given:
          events:                  # as they arrive on the stream: objects, or raw lines
            - {eventId: e1, timestamp: "2026-01-01T00:00:00Z", request: {status_code: 503}}
          prior_rows: []           # the model's table before the batch (merge models)
        expect:
          rows:                    # the table after the batch; only the columns listed
            - {eventId: e1, status_class: server_error}
          dead_letters: []         # reasons (substrings), in input order; omit: none allowed

Validated once, here: unknown keys, unknown data tests and wrong shapes are errors naming the
file, the line and the key (with a "did you mean").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator

from runner.errors import RunnerError, did_you_mean
from runner.project.config import load_yaml, validation_message, yaml_line
from runner.project.loader import Project

__all__ = [
    "AcceptedValues",
    "ColumnSpec",
    "DATA_TESTS",
    "DataTest",
    "ModelSpec",
    "NotNull",
    "Relationships",
    "SpecError",
    "Unique",
    "UnitTest",
    "load_specs",
    "parse_model_spec",
]


class SpecError(RunnerError):
    """A ``models/<model>.yml`` file (or the test data in it) is wrong (exit code 1)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _TestArgs(_Strict):
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


_DataTestItem = Annotated[Any, AfterValidator(lambda v: _data_test(v))]


class ColumnSpec(_Strict):
    name: str = Field(min_length=1)
    description: str | None = None
    data_tests: tuple[_DataTestItem, ...] = ()


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


class Expect(_Strict):
    rows: tuple[Row, ...]
    dead_letters: tuple[str, ...] | None = None


class UnitTest(_Strict):
    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    description: str | None = None
    given: Given
    expect: Expect


class ModelSpec(_Strict):
    """The whole of ``models/<model>.yml``."""

    description: str | None = None
    columns: tuple[ColumnSpec, ...] = ()
    data_tests: tuple[_DataTestItem, ...] = ()
    unit_tests: tuple[UnitTest, ...] = ()
    #: declared sources, validated when the project loads (:mod:`runner.project.sources`)
    sources: Any = Field(default=None, exclude=True, repr=False)

    # set by parse_model_spec, not by the YAML
    model: str = Field(default="", exclude=True)
    path: str = Field(default="", exclude=True)
    text: str = Field(default="", exclude=True, repr=False)

    @field_validator("data_tests")
    @classmethod
    def _model_level(cls, value: tuple[Any, ...]) -> tuple[Any, ...]:
        for t in value:
            if t.kind != "unique":
                raise ValueError(f"model-level data_tests may only hold 'unique' (got "
                                 f"'{t.kind}'): declare it under columns: - name: ...")
        return value

    def all_data_tests(self) -> list[DataTest]:
        """Model-level tests, then each column's, in file order."""
        out: list[DataTest] = list(self.data_tests)
        for col in self.columns:
            out += [DataTest(t.kind, t.args, col.name) for t in col.data_tests]
        return out

    def column(self, name: str) -> ColumnSpec | None:
        return next((c for c in self.columns if c.name.lower() == name.lower()), None)

    def line_of(self, *loc: str | int) -> int | None:
        """1-based line of a key path (``unit_tests, 0, expect``) in this file."""
        return yaml_line(self.text, loc)


def parse_model_spec(text: str, *, model: str, path: str) -> ModelSpec:
    """Parse and validate one model's YAML.

    Raises:
        SpecError: invalid YAML, an unknown key or data test, a wrong shape; names the file,
            the line and the key.
    """
    data = load_yaml(text, path=path, error=SpecError)
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise SpecError("a model's YAML must be a mapping (description, columns, data_tests, "
                        "unit_tests)", path=path)
    for key in ("model", "path", "text"):
        if key in data:
            raise SpecError(f"unknown key '{key}'", path=path, line=yaml_line(text, (key,)),
                            hint="keys: description, columns, data_tests, unit_tests")
    try:
        spec = ModelSpec.model_validate(data)
    except ValidationError as e:
        errors = sorted(e.errors(), key=lambda err: err["type"] != "extra_forbidden")
        loc, message = _explain(errors[0])
        if len(errors) > 1:
            message += f" (and {len(errors) - 1} more problem{'s' * (len(errors) > 2)})"
        raise SpecError(message, path=path, line=yaml_line(text, loc)) from e
    return spec.model_copy(update={"model": model, "path": path, "text": text})


def _dotted(loc: tuple[str | int, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _keys_of(loc: tuple[str | int, ...]) -> list[str]:
    """Valid keys of the mapping that holds ``loc``'s last element."""
    current: Any = ModelSpec
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = (current.model_fields.get(part)
                 if isinstance(current, type) and issubclass(current, BaseModel) else None)
        if field is None:
            return []
        annotation = field.annotation
        args = getattr(annotation, "__args__", ())
        current = next((a for a in (annotation, *args)
                        if isinstance(a, type) and issubclass(a, BaseModel)), None)
        if current is None:
            return []
    if current is ModelSpec:
        return ["description", "columns", "data_tests", "unit_tests", "sources"]
    return (list(current.model_fields)
            if isinstance(current, type) and issubclass(current, BaseModel) else [])


def _explain(err: Any) -> tuple[tuple[str | int, ...], str]:
    """(location, message) of one pydantic error, worded for a YAML author."""
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and (
        p.startswith("function-") or p in ("str", "dict[str,any]"))))
    where = _dotted(loc[:-1])
    prefix = f"{where}: " if where else ""
    if err["type"] == "extra_forbidden":
        name = str(loc[-1])
        return loc, f"{prefix}unknown key '{name}'" + did_you_mean(name, _keys_of(loc))
    if err["type"] == "missing":
        return loc, f"{prefix}missing required key '{loc[-1]}'"
    message = str(err["msg"]).removeprefix("Value error, ")
    shown = f"{_dotted(loc)}: {message}" if loc else message
    if err["type"] != "value_error" and "input" in err and \
            not isinstance(err["input"], (dict, list, tuple)):
        shown += f" (got {err['input']!r})"
    return loc, shown


def load_specs(project: Project) -> dict[str, ModelSpec]:
    """Every ``models/**/<model>.yml`` (or ``.yaml``) of the project, by model name.

    A file may also hold ``sources:`` (declared sources, validated when the project loads:
    :mod:`runner.project.sources`); a file holding only ``sources:`` needs no model of its name.

    Raises:
        SpecError: a YAML file that is invalid or names no model.
    """
    models = {m.name.lower(): m for m in project.models}
    base = project.root / "models"
    specs: dict[str, ModelSpec] = {}
    if not base.is_dir():
        return specs
    files = sorted(p for ext in ("*.yml", "*.yaml") for p in base.rglob(ext) if p.is_file())
    for file in files:
        rel = file.relative_to(project.root).as_posix()
        text = file.read_text(encoding="utf-8")
        data = load_yaml(text, path=rel, error=SpecError)
        model = models.get(file.stem.lower())
        if model is None and isinstance(data, Mapping) and set(data) == {"sources"}:
            continue  # only sources: no model of its name needed
        if model is None:
            raise SpecError(f"no model '{file.stem}' for this file: a model's tests live in "
                            f"models/<model>.yml next to models/<model>.sql"
                            + did_you_mean(file.stem, [m.name for m in project.models]),
                            path=rel, hint="a YAML file that is not named after a model "
                                           "holds only sources:")
        if Path(model.path).parent != Path(rel).parent:
            raise SpecError(f"model '{model.name}' is {model.path}: put its YAML next to it",
                            path=rel)
        if model.name in specs:
            raise SpecError(f"model '{model.name}' has two YAML files: {specs[model.name].path} "
                            f"and {rel}", path=rel)
        specs[model.name] = parse_model_spec(text, model=model.name, path=rel)
    return specs

