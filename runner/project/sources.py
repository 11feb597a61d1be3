"""Declared sources: reference tables a model joins, declared under ``sources:`` in any
``models/**/*.yml`` in dbt's shape (docs/AE_GUIDE.md, "Sources and seeds")::

    sources:
      - name: crm
        description: The CRM's nightly export.
        tables:
          - name: customers
            path: ref/customers        # a Delta table: relative to the project dir, or a URI
            # table: crm.customers     # or a catalog name (docs/CATALOG.md)
            columns:                   # optional when the table is readable at compile time
              - {name: customer_id, data_type: string, description: The key.,
                 data_tests: [unique]}       # its key, for lint (runner/project/source_keys.py)

A model reads one with ``{{ source('crm', 'customers') }}``, which renders as the per-batch view
``crm__customers`` (:func:`source_view`). Validated strictly here: unknown keys, bad names and
wrong shapes are a :class:`~runner.errors.ConfigError` (exit 2) naming the file, line and key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from runner.errors import ConfigError, did_you_mean
from runner.project.config import value_message
from runner.project.paths import abfs_spelling, is_uri, resolve_location
from runner.project.source_keys import declared_keys, older_spelling, parse_tests
from runner.project.yaml_template import load_yaml, yaml_line

__all__ = ["ColumnDecl", "SourceTable", "parse_declared_columns", "parse_sources",
           "source_view", "strict_error"]

_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ColumnDecl(_Strict):
    name: str = Field(pattern=_NAME)
    data_type: str = Field(min_length=1)
    description: str | None = None


class _DeclaresTests(BaseModel):
    """``data_tests:`` (or dbt's older ``tests:``) on a source's column or table: the
    ``unique`` ones are its keys (:mod:`runner.project.source_keys`)."""

    data_tests: tuple[Any, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _tests(cls, data: Any) -> Any:
        return older_spelling(data)

    @field_validator("data_tests")
    @classmethod
    def _parsed(cls, value: tuple[Any, ...]) -> tuple[Any, ...]:
        return parse_tests(value)


class _SourceColumnDecl(ColumnDecl, _DeclaresTests):
    """A source's column may declare data tests: the ``unique`` ones are its keys."""


class _TableDecl(_Strict, _DeclaresTests):
    name: str = Field(pattern=_NAME)
    description: str | None = None
    path: str | None = Field(default=None, min_length=1)
    table: str | None = Field(default=None, min_length=1)
    columns: tuple[_SourceColumnDecl, ...] | None = None

    @model_validator(mode="after")
    def _one_location(self) -> _TableDecl:
        if (self.path is None) == (self.table is None):
            raise ValueError("give exactly one of path (a Delta table's folder or URI) and "
                             "table (a catalog name)")
        return self

    @property
    def keys(self) -> tuple[frozenset[str], ...]:
        """The keys its tests declare (checked when the declaration is validated)."""
        cols = self.columns
        return declared_keys([(c.name, c.data_tests) for c in cols or ()], self.data_tests,
                             declared=None if cols is None else [c.name for c in cols])

    @model_validator(mode="after")
    def _known_keys(self) -> _TableDecl:
        _ = self.keys  # a key over a column the table does not declare is an error here
        return self


class _SourceDecl(_Strict):
    name: str = Field(pattern=_NAME)
    description: str | None = None
    tables: tuple[_TableDecl, ...] = Field(min_length=1)


@dataclass(frozen=True)
class SourceTable:
    """One declared table of one source, as the rest of the runner sees it."""

    source: str  # "crm"
    name: str  # "customers"
    location: str  # an absolute local path, a URI (kept as written), or a catalog name
    catalog: bool  # declared with ``table:``
    columns: tuple[tuple[str, str], ...] | None  # (name, data_type) as declared; None: omitted
    description: str | None
    descriptions: tuple[tuple[str, str], ...]  # column name -> its description
    path: str  # the yml file declaring it, relative to the project
    line: int | None  # the line of its ``- name:``
    #: lower-cased column sets its ``unique`` data tests declare (runner/project/source_keys.py)
    keys: tuple[frozenset[str], ...] = ()

    @property
    def view(self) -> str:
        return source_view(self.source, self.name)

    @property
    def full_name(self) -> str:
        return f"{self.source}.{self.name}"


def source_view(source: str, table: str) -> str:
    """The per-batch temp view a model's ``source(source, table)`` reads."""
    return f"{source}__{table}"


def _keys(model: Any, loc: tuple[str | int, ...]) -> list[str]:
    """Valid keys where ``loc``'s last element stands (list indices skipped)."""
    current: Any = model
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = current.model_fields.get(part) if isinstance(current, type) and \
            issubclass(current, BaseModel) else None
        if field is None:
            return []
        args = (field.annotation, *getattr(field.annotation, "__args__", ()))
        inner = [a for a in args for a in (a, *getattr(a, "__args__", ()))]
        current = next((a for a in inner if isinstance(a, type) and issubclass(a, BaseModel)),
                       None)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []


def strict_error(e: ValidationError, model: Any, *, text: str, path: str,
                 prefix: tuple[str | int, ...]) -> ConfigError:
    """One ConfigError for every problem pydantic found, each at its key's line."""
    errors = []
    for err in sorted(e.errors(), key=lambda err: err["type"] != "extra_forbidden"):
        loc = prefix + tuple(p for p in err["loc"] if not (
            isinstance(p, str) and p.startswith("function-")))
        key = ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in loc).replace(".[", "[")
        if err["type"] == "extra_forbidden":
            name = str(loc[-1])
            message = f"{key}: unknown key '{name}'" + did_you_mean(
                name, _keys(model, tuple(err["loc"])))
        elif err["type"] == "missing":
            message = f"{key}: missing required key '{loc[-1]}'"
        else:
            message = f"{key}: {value_message(err)}"
            if "input" in err and not isinstance(err["input"], (dict, list, tuple)):
                message += f" (got {err['input']!r})"
        errors.append(ConfigError(message, path=path, line=yaml_line(text, loc)))
    first = errors[0]
    return ConfigError(first.message, path=path, line=first.line, also=errors[1:])


def parse_declared_columns(raw: Any, *, text: str, path: str, loc: tuple[str | int, ...]
                           ) -> tuple[ColumnDecl, ...]:
    """A ``columns:`` list of ``{name, data_type, description}`` (seeds use it too)."""
    class _Columns(_Strict):
        columns: tuple[ColumnDecl, ...]
    try:
        return _Columns.model_validate({"columns": raw}).columns
    except ValidationError as e:
        raise strict_error(e, _Columns, text=text, path=path, prefix=loc[:-1]) from e


def parse_sources(root: Path, text: str, data: Mapping[str, Any], *, path: str,
                  storage: Mapping[str, str] | None = None) -> list[SourceTable]:
    """The tables of one yml file's ``sources:`` (``data``: the file, loaded; ``storage``:
    project.yml's explicit options, with which an ``az://`` path is spelled as ABFS's).

    Raises:
        ConfigError: an unknown key, a bad name, a table with neither or both of path and
            table, a remote path that is not a URI; names the file, the line and the key.
    """
    raw = data.get("sources")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ConfigError("sources: must be a list of sources ({name, tables: [...]})",
                          path=path, line=yaml_line(text, ("sources",)))
    out: list[SourceTable] = []
    for i, item in enumerate(raw):
        try:
            decl = _SourceDecl.model_validate(item)
        except ValidationError as e:
            raise strict_error(e, _SourceDecl, text=text, path=path, prefix=("sources", i)) from e
        for j, table in enumerate(decl.tables):
            where = ("sources", i, "tables", j)
            if table.path is not None:
                location = (_uri(table.path, storage, text=text, path=path, loc=where)
                            if is_uri(table.path) and not table.path.startswith("file:")
                            else str(_local(root, table.path, text=text, path=path, loc=where)))
            else:
                location = str(table.table)
            columns = None if table.columns is None else tuple(
                (c.name, c.data_type) for c in table.columns)
            out.append(SourceTable(
                source=decl.name, name=table.name, location=location,
                catalog=table.table is not None, columns=columns,
                description=table.description or decl.description,
                descriptions=tuple((c.name, c.description) for c in table.columns or ()
                                   if c.description),
                path=path, line=yaml_line(text, where), keys=table.keys))
    return out


def _uri(value: str, storage: Mapping[str, str] | None, *, text: str, path: str,
         loc: tuple[str | int, ...]) -> str:
    try:
        return abfs_spelling(value, storage)
    except ConfigError as e:
        raise ConfigError(e.message, path=path, line=yaml_line(text, (*loc, "path")),
                          hint=e.hint) from e


def _local(root: Path, value: str, *, text: str, path: str, loc: tuple[str | int, ...]) -> Path:
    try:
        where = resolve_location(root, value, key="path")
        if not isinstance(where, Path):  # URIs are kept as written before this is called
            raise ConfigError(f"{value!r} is not a local path")
        return where.resolve()
    except ConfigError as e:
        raise ConfigError(e.message, path=path, line=yaml_line(text, (*loc, "path")),
                          hint=e.hint) from e


def check_unique(tables: Sequence[SourceTable]) -> None:
    """Refuse two declarations of one table, and two tables whose views coincide."""
    seen: dict[str, SourceTable] = {}
    for t in tables:
        other = seen.get(t.view.lower())
        if other is not None:
            same = other.full_name.lower() == t.full_name.lower()
            raise ConfigError(
                f"source table '{t.full_name}' is declared twice ({other.path}:{other.line} and "
                f"here)" if same else f"sources '{other.full_name}' and '{t.full_name}' both "
                f"read as the view '{t.view}'", path=t.path, line=t.line,
                hint="declare each table once" if same else "rename one of them")
        seen[t.view.lower()] = t


def load_yml(file: Path, rel: str) -> tuple[str, Mapping[str, Any]]:
    """A models/ yml file's text and mapping (empty when the file is empty)."""
    text = file.read_text(encoding="utf-8")
    data = load_yaml(text, path=rel)
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError("a models/ YAML file must be a mapping", path=rel)
    return text, data
