"""Load a project directory into a frozen :class:`Project`: config, event schema, sources."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import jinja2
from jinja2.sandbox import SandboxedEnvironment

from runner.errors import ConfigError
from runner.project.config import ProjectConfig, parse_project_config
from runner.project.paths import check_project_paths, resolve_location
from runner.project.schema import EventSchema, metadata_columns

if TYPE_CHECKING:  # imported when a project has seeds or declares sources (compile's start-up)
    from runner.project.seeds import Seed
    from runner.project.sources import SourceTable

__all__ = ["MacroSource", "ModelSource", "Project", "load_project"]

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
RESERVED_NAMES = frozenset({"parsed_events"})


@dataclass(frozen=True)
class ModelSource:
    """One ``models/**/<name>.sql`` file as written by its author."""

    name: str
    path: str  # relative to the project directory, '/'-separated
    text: str


@dataclass(frozen=True)
class MacroSource:
    path: str
    text: str


@dataclass(frozen=True)
class Project:
    root: Path
    config: ProjectConfig
    schema: EventSchema
    models: tuple[ModelSource, ...]
    macros: tuple[MacroSource, ...]
    sources: tuple[SourceTable, ...] = ()  # declared under sources: in models/**/*.yml
    seeds: tuple[Seed, ...] = ()  # seeds/**/*.csv

    def resolve(self, relative: str) -> Path:
        """A project path: relative to the project directory unless absolute, ``~`` expanded,
        a ``file:`` URI as its local path (remote URIs are refused when the project loads)."""
        return resolve_location(self.root, relative)

    @property
    def warehouse(self) -> Path:
        return self.resolve(self.config.warehouse)

    @property
    def checkpoint(self) -> Path:
        return self.resolve(self.config.checkpoint)

    def table_path(self, name: str) -> Path:
        """Where model (or dead-letter table) ``name`` lives: ``<warehouse>/<name>``."""
        return self.warehouse / name

    @property
    def parsed_events_columns(self) -> dict[str, str]:
        """Metadata columns ``parsed_events`` carries beyond the schema, name -> Spark type."""
        return metadata_columns(self.config.source.type)


def _env_var(name: str, default: str | None = None) -> str:
    value = os.environ.get(name, default)
    if value is None:
        raise ConfigError(f"environment variable '{name}' is not set and has no default",
                          path="project.yml",
                          hint=f"export {name}=... or write env_var('{name}', 'default')")
    return value


def _render_project_yml(text: str) -> str:
    """project.yml may use ``{{ env_var('NAME', 'default') }}`` (secrets stay out of logs)."""
    env = SandboxedEnvironment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    try:
        return env.from_string(text).render(env_var=_env_var)
    except jinja2.TemplateSyntaxError as e:
        raise ConfigError(f"template error: {e.message}", path="project.yml", line=e.lineno) from e
    except jinja2.UndefinedError as e:
        raise ConfigError(f"template error: {e.message}", path="project.yml") from e


def _read_sources(root: Path, folder: str) -> list[tuple[str, Path]]:
    base = root / folder
    if not base.is_dir():
        return []
    return sorted((p.relative_to(root).as_posix(), p) for p in base.rglob("*.sql") if p.is_file())


def load_project(project_dir: str | os.PathLike[str] = ".") -> Project:
    """Read and validate a project directory.

    Raises:
        ConfigError: project.yml is missing or invalid, or model file names clash.
    """
    root = Path(project_dir).resolve()
    yml = root / "project.yml"
    if not yml.is_file():
        raise ConfigError(f"no project.yml in {root}",
                          hint="run from the project directory or pass --project-dir")
    text = _render_project_yml(yml.read_text(encoding="utf-8"))
    config = parse_project_config(text, path="project.yml")
    schema = EventSchema.parse(config.schema_ddl)

    models: list[ModelSource] = []
    by_name: dict[str, str] = {}
    for rel, path in _read_sources(root, "models"):
        name = path.stem
        if not _IDENTIFIER.match(name):
            raise ConfigError(f"model file name '{path.name}' is not a valid table name "
                              "(letters, digits and _; not starting with a digit)", path=rel)
        if name.lower() in RESERVED_NAMES or name.lower() == config.dead_letter.lower():
            raise ConfigError(f"model name '{name}' is reserved (parsed_events and the dead-letter "
                              f"table '{config.dead_letter}')", path=rel)
        if name.lower() in by_name:
            raise ConfigError(f"two models are named '{name}': {by_name[name.lower()]} and {rel}",
                              path=rel, hint="model names are table names: rename one file")
        by_name[name.lower()] = rel
        models.append(ModelSource(name, rel, path.read_text(encoding="utf-8")))
    macros = tuple(MacroSource(rel, p.read_text(encoding="utf-8"))
                   for rel, p in _read_sources(root, "macros"))
    sources = _load_sources(root, config, by_name)
    seeds: tuple[Seed, ...] = ()
    if (root / "seeds").is_dir():
        from runner.project.seeds import load_seeds
        seeds = load_seeds(root, models=by_name)
    views = {s.view.lower(): s for s in sources}
    for seed in seeds:
        if seed.name.lower() in views:
            raise ConfigError(f"seed '{seed.name}' has the name of source "
                              f"'{views[seed.name.lower()].full_name}''s view", path=
                              seed.file, hint="rename the seed")
    check_project_paths(root, config, tables=[m.name for m in models], text=text,
                        lookups=[(s.path, s.line, f"source {s.full_name}", s.location)
                                 for s in sources if not s.catalog]
                        + [(s.file, None, f"seed {s.name}", str(s.path)) for s in seeds])
    return Project(root=root, config=config, schema=schema, models=tuple(models), macros=macros,
                   sources=sources, seeds=seeds)


def _load_sources(root: Path, config: ProjectConfig, models: dict[str, str]
                  ) -> tuple[SourceTable, ...]:
    """Every table declared under ``sources:`` in ``models/**/*.yml``; their views may not
    be a model's name, and ``table:`` (a catalog name) needs the spark engine."""
    base = root / "models"
    if not base.is_dir():
        return ()
    tables: list[SourceTable] = []
    for file in sorted(p for ext in ("*.yml", "*.yaml") for p in base.rglob(ext) if p.is_file()):
        if "sources" not in file.read_text(encoding="utf-8"):
            continue  # no declaration: skip parsing YAML (slow) on every load
        from runner.project.sources import load_yml, parse_sources
        rel = file.relative_to(root).as_posix()
        text, data = load_yml(file, rel)
        tables += parse_sources(root, text, data, path=rel)
    if not tables:
        return ()
    from runner.project.sources import check_unique
    check_unique(tables)
    for t in tables:
        if t.view.lower() in models:
            raise ConfigError(f"source '{t.full_name}' reads as the view '{t.view}', the name "
                              f"of model {models[t.view.lower()]}", path=t.path, line=t.line,
                              hint="rename the model or the source")
        if t.catalog and config.delta.engine == "rs":
            raise ConfigError(f"sources {t.full_name}: 'table:' names a catalog table, which "
                              "only the spark engine reads (delta.engine is rs)",
                              path=t.path, line=t.line,
                              hint="give the Delta table's path: instead, or set delta.engine: "
                                   "spark in project.yml")
    return tuple(tables)
