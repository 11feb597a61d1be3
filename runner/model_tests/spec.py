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

dbt's layout is accepted too: a ``models:`` list in any yml file under ``models/`` (a
``schema.yml`` describing several models), each entry ``{name: <model>, description, columns,
data_tests, unit_tests}``, next to ``sources:`` and dbt's ``version: 2``; ``tests:`` is dbt's
older spelling of ``data_tests:``.

Validated once, here: unknown keys, unknown data tests and wrong shapes are errors naming the
file, the line and the key (with a "did you mean"); :func:`check_specs` checks the names a file
gives against the models' output columns. ``runner compile`` runs both (so ``test``, ``docs``
and ``stream`` meet no yml problem compile did not report): a problem is a configuration error
(exit 2), every problem of every file reported, each at its line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import (
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from runner.errors import ConfigError, did_you_mean
from runner.model_tests.unit_spec import SpecError, UnitTest
from runner.model_tests.yml_explain import explain
from runner.model_tests.yml_lines import dotted, locate
from runner.project.data_tests import (
    DATA_TESTS,
    MODEL_LEVEL,
    AcceptedValues,
    DataTest,
    DataTestItem,
    NotNull,
    Relationships,
    Unique,
)
from runner.project.data_tests import Strict as _Strict
from runner.project.loader import Project
from runner.project.source_keys import older_spelling
from runner.project.yaml_template import load_yaml

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
    "read_specs",
    "spec_error",
]


class ColumnSpec(_Strict):
    name: str = Field(min_length=1)
    description: str | None = None
    data_tests: tuple[DataTestItem, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _tests(cls, data: Any) -> Any:
        return older_spelling(data)


class ModelSpec(_Strict):
    """One model's description and tests: the whole of ``models/<model>.yml``, or one entry
    of a ``models:`` list (``loc``: where the entry is in its file)."""

    description: str | None = None
    columns: tuple[ColumnSpec, ...] = ()
    data_tests: tuple[DataTestItem, ...] = ()
    unit_tests: tuple[UnitTest, ...] = ()
    #: declared sources, validated when the project loads (:mod:`runner.project.sources`)
    sources: Any = Field(default=None, exclude=True, repr=False)

    # set by parse_model_spec, not by the YAML
    model: str = Field(default="", exclude=True)
    path: str = Field(default="", exclude=True)
    text: str = Field(default="", exclude=True, repr=False)
    loc: tuple[str | int, ...] = Field(default=(), exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _tests(cls, data: Any) -> Any:
        return older_spelling(data)

    @field_validator("data_tests")
    @classmethod
    def _model_level(cls, value: tuple[Any, ...]) -> tuple[Any, ...]:
        for t in value:
            if t.kind not in MODEL_LEVEL and not t.generic:
                raise ValueError(f"model-level data_tests may hold {', '.join(sorted(MODEL_LEVEL))}"
                                 f" and test macros (got '{t.kind}'): declare it under "
                                 "columns: - name: ...")
        return value

    def all_data_tests(self) -> list[DataTest]:
        """Model-level tests, then each column's, in file order (not those with
        ``enabled: false``)."""
        out: list[DataTest] = [t for t in self.data_tests if t.args.enabled]
        for col in self.columns:
            out += [DataTest(t.kind, t.args, col.name) for t in col.data_tests if t.args.enabled]
        return out

    def column(self, name: str) -> ColumnSpec | None:
        return next((c for c in self.columns if c.name.lower() == name.lower()), None)

    def line_of(self, *loc: str | int) -> int | None:
        """1-based line of a key path (``unit_tests, 0, expect``) in this file (inside the
        model's entry of a ``models:`` list; ``data_tests`` found spelled ``tests`` too)."""
        return locate(self.text, (*self.loc, *loc))[1]

    def key_of(self, *loc: str | int) -> str:
        """The dotted key path as the file spells it (``models[1].columns[0].tests[0]``)."""
        return dotted(locate(self.text, (*self.loc, *loc))[0])


_FILE_KEYS = ("description", "columns", "data_tests", "unit_tests", "sources")
_ENTRY_KEYS = ("name", "description", "columns", "data_tests", "unit_tests")
_LIST_FILE_KEYS = ("version", "models", "sources", "unit_tests")
_INTERNAL = ("model", "path", "text", "loc")  # ModelSpec fields the YAML may not set


def parse_model_spec(text: str, *, model: str, path: str,
                     generic_tests: Sequence[str] = ()) -> ModelSpec:
    """Parse and validate one model's YAML (the layout of ``models/<model>.yml``).

    Raises:
        SpecError: invalid YAML, an unknown key or data test, a wrong shape; names the file,
            the line and the key (every problem, each at its line).
    """
    data = load_yaml(text, path=path, error=SpecError)
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise SpecError("a model's YAML must be a mapping (description, columns, data_tests, "
                        "unit_tests)", path=path)
    result = _validate(data, text=text, path=path, model=model, prefix=(), root=_FILE_KEYS,
                       generic=generic_tests)
    if isinstance(result, ModelSpec):
        return result
    raise spec_error(result)


def _validate(data: Mapping[str, Any], *, text: str, path: str, model: str,
              prefix: tuple[str | int, ...], root: Sequence[str], generic: Sequence[str] = ()
              ) -> ModelSpec | list[SpecError]:
    """One model's mapping (a whole file, or a ``models:`` entry without its ``name``)."""
    problems = []
    for key in data:
        if key in _INTERNAL or (key == "sources" and "sources" not in root):
            spelled, line = locate(text, (*prefix, key))
            where = dotted(spelled[:-1])
            hint = ("sources: goes at the top level of the file, next to models:"
                    if key == "sources" else f"keys: {', '.join(root)}")
            problems.append(SpecError(f"{where + ': ' if where else ''}unknown key '{key}'",
                                      path=path, line=line, hint=hint))
    if problems:
        return problems
    try:
        spec = ModelSpec.model_validate(data, context={"generic_tests": generic})
    except ValidationError as e:
        errors = sorted(e.errors(), key=lambda err: err["type"] != "extra_forbidden")
        out = []
        for err in errors:
            line, message = explain(err, text=text, prefix=prefix, root=root, top=ModelSpec)
            out.append(SpecError(message, path=path, line=line))
        return out
    return spec.model_copy(update={"model": model, "path": path, "text": text, "loc": prefix})


def spec_error(errors: Sequence[SpecError]) -> SpecError:
    """One error carrying every problem (``also``), in file and line order."""
    ordered = sorted(errors, key=lambda e: (e.path or "", e.line or 0))
    first = ordered[0]
    return SpecError(first.message, path=first.path, line=first.line, hint=first.hint,
                     also=ordered[1:])


def _yml_files(project: Project) -> list[Path]:
    base = project.root / "models"
    if not base.is_dir():
        return []
    return sorted(p for ext in ("*.yml", "*.yaml") for p in base.rglob(ext) if p.is_file())


def read_specs(project: Project) -> tuple[dict[str, ModelSpec], list[SpecError]]:
    """Every model's description and tests from ``models/**/*.yml`` (or ``.yaml``), by model
    name, and every problem found in those files (each naming the file and the line).

    A file is either a model's own (``models/<model>.yml`` next to its SQL: the model's keys at
    the top) or holds dbt's ``models:`` list (any name, any folder under ``models/``); either
    may hold ``sources:`` (validated when the project loads: :mod:`runner.project.sources`) and
    dbt's ``version: 2``. A file holding only ``sources:`` needs no model of its name.
    """
    from runner.model_tests.dbt_units import dbt_unit_tests, is_dbt_format
    from runner.model_tests.generic import test_macros

    models = {m.name.lower(): m for m in project.models}
    names = [m.name for m in project.models]
    specs: dict[str, ModelSpec] = {}
    problems: list[SpecError] = []
    dbt_units: list[tuple[str, UnitTest, str]] = []
    try:
        generic: Sequence[str] = tuple(test_macros(project))
    except ConfigError as e:
        generic = ()
        problems.append(SpecError(e.message, path=e.path, line=e.line, hint=e.hint))

    def add(spec: ModelSpec) -> None:
        first = specs.get(spec.model)
        if first is None:
            specs[spec.model] = spec
            return
        line = first.line_of()
        problems.append(SpecError(
            f"model '{spec.model}' is described twice: in {first.path}"
            + (f":{line}" if line else "") + f" and in {spec.path}:{spec.line_of() or 1}",
            path=spec.path, line=spec.line_of(),
            hint="describe each model once: in its own models/<model>.yml or in one "
                 "models: entry"))

    for file in _yml_files(project):
        loaded = _load(project, file, problems)
        if loaded is None:
            continue
        rel, text, body = loaded
        if is_dbt_format(body.get("unit_tests")):
            found, wrong = dbt_unit_tests(
                body.pop("unit_tests"), text=text, path=rel,
                models={k: m.name for k, m in models.items()},
                seeds={s.name.lower(): s.name for s in project.seeds},
                sources={t.full_name.lower(): t.full_name for t in project.sources})
            dbt_units += [(m, case, rel) for m, case in found]
            problems += wrong
            if not body:
                continue
        if "models" in body:
            problems += _models_list(body, text=text, path=rel, models=models, names=names,
                                     add=add, generic=generic)
            continue
        model = models.get(file.stem.lower())
        if model is None:
            if set(body) <= {"sources"}:
                continue  # only sources: (or an empty file): no model of its name needed
            problems.append(SpecError(
                f"no model '{file.stem}' for this file: a model's own YAML is "
                f"models/<model>.yml next to models/<model>.sql"
                + did_you_mean(file.stem, names), path=rel,
                hint="to describe models in a file of another name (dbt's schema.yml), list "
                     "them under models: - name: <model>"))
            continue
        if Path(model.path).parent != Path(rel).parent:
            problems.append(SpecError(f"model '{model.name}' is {model.path}: put its YAML "
                                      f"next to it, or describe it in a models: list",
                                      path=rel))
            continue
        result = _validate(body, text=text, path=rel, model=model.name, prefix=(),
                           root=_FILE_KEYS, generic=generic)
        if isinstance(result, ModelSpec):
            add(result)
        else:
            problems += result
    _join(specs, dbt_units)
    return specs, problems


def _join(specs: dict[str, ModelSpec], dbt_units: Sequence[tuple[str, UnitTest, str]]) -> None:
    """dbt's top-level unit tests, each to its model's spec (or a spec of their own)."""
    for model_name, case, rel in dbt_units:
        spec = specs.get(model_name) or ModelSpec(model=model_name, path=rel)
        specs[model_name] = spec.model_copy(update={"unit_tests": (*spec.unit_tests, case)})


def _load(project: Project, file: Path, problems: list[SpecError]
          ) -> tuple[str, str, dict[str, Any]] | None:
    """(path, text, top-level mapping without ``version``) of one file; None (and its problem
    recorded) when it is no YAML mapping."""
    rel = file.relative_to(project.root).as_posix()
    text = file.read_text(encoding="utf-8")
    try:
        data = load_yaml(text, path=rel, error=SpecError)
    except SpecError as e:
        problems.append(e)
        return None
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        problems.append(SpecError(
            "a models/ YAML file must be a mapping: a model's keys (description, columns, "
            "data_tests, unit_tests) in models/<model>.yml, or a models: list", path=rel))
        return None
    if "version" in data and data["version"] != 2:
        problems.append(SpecError(f"version: dbt's schema files say version: 2 (got "
                                  f"{data['version']!r})", path=rel,
                                  line=locate(text, ("version",))[1]))
    return rel, text, {k: v for k, v in data.items() if k != "version"}


def _models_list(data: Mapping[str, Any], *, text: str, path: str,
                 models: Mapping[str, Any], names: Sequence[str],
                 add: Any, generic: Sequence[str] = ()) -> list[SpecError]:
    """dbt's ``models:`` list: each entry ``{name: <model>, ...the model's keys}``."""
    problems = []
    for key in data:
        if key not in _LIST_FILE_KEYS:
            problems.append(SpecError(
                f"unknown key '{key}'" + did_you_mean(str(key), _LIST_FILE_KEYS), path=path,
                line=locate(text, (key,))[1],
                hint="a file with a models: list holds models:, sources: and version: at the "
                     "top; a model's keys go in its entry (- name: <model>)"))
    raw = data.get("models")
    if raw is None:
        return problems
    if not isinstance(raw, list):
        return [*problems, SpecError(
            "models: must be a list of models (- name: <model>, description, columns, "
            "data_tests, unit_tests)", path=path, line=locate(text, ("models",))[1])]
    for i, entry in enumerate(raw):
        loc = ("models", i)
        line = locate(text, loc)[1]
        if not isinstance(entry, Mapping):
            problems.append(SpecError(f"models[{i}]: a model's entry is a mapping (name, "
                                      "description, columns, data_tests, unit_tests)",
                                      path=path, line=line))
            continue
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            problems.append(SpecError(f"models[{i}]: missing required key 'name' (the "
                                      "model's name)", path=path, line=line))
            continue
        model = models.get(name.lower())
        if model is None:
            problems.append(SpecError(f"models[{i}]: no model '{name}'"
                                      + did_you_mean(name, names), path=path, line=line,
                                      hint="an entry's name is a model's: models/<name>.sql"))
            continue
        body = {k: v for k, v in entry.items() if k != "name"}
        result = _validate(body, text=text, path=path, model=model.name, prefix=loc,
                           root=_ENTRY_KEYS, generic=generic)
        if isinstance(result, ModelSpec):
            add(result)
        else:
            problems += result
    return problems


def load_specs(project: Project) -> dict[str, ModelSpec]:
    """:func:`read_specs`, raising its problems.

    Raises:
        SpecError: every problem of every file, each at its line.
    """
    specs, problems = read_specs(project)
    if problems:
        raise spec_error(problems)
    return specs

