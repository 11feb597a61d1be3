"""Load a project directory into a frozen :class:`Project`: config, event schema, sources."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
import yaml
from jinja2.sandbox import SandboxedEnvironment

from runner.errors import ConfigError
from runner.project.config import ProjectConfig, parse_project_config
from runner.project.event_schema import EventSchema, metadata_columns
from runner.project.paths import check_project_paths, resolve_location
from runner.project.secrets import public_env_var, set_secret_values
from runner.storage.objects import ObjectPath
from runner.storage.ops import Location

if TYPE_CHECKING:  # imported when a project has seeds or declares sources (compile's start-up)
    from runner.project.seeds import Seed
    from runner.project.sources import SourceTable

__all__ = ["MacroSource", "ModelSource", "Project", "command_line_vars", "load_project"]

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
    #: vars whose value project.yml read with env_var() from a variable without a public
    #: prefix: var name -> those variables' names (never rendered into a model)
    secret_vars: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def resolve(self, relative: str) -> Location:
        """A project location: an object-store URI with project.yml's ``storage:`` options,
        or a path relative to the project directory unless absolute, ``~`` expanded, a
        ``file:`` URI as its local path (other URIs are refused when the project loads)."""
        return resolve_location(self.root, relative, options=self.config.storage)

    @property
    def warehouse(self) -> Location:
        return self.resolve(self.config.warehouse)

    @property
    def checkpoint(self) -> Location:
        return self.resolve(self.config.checkpoint)

    def spark_storage_conf(self) -> dict[str, str]:
        """Spark's (Hadoop's) settings for each bucket the project's locations name
        (checkpoint, warehouse, files source, source tables given by URI), per bucket, from
        the environment and project.yml's ``storage:`` (:mod:`runner.storage.settings`)."""
        from runner.storage.settings import storage_settings

        values = [self.config.checkpoint, self.config.warehouse]
        if self.config.source.type == "files":
            values.append(self.config.source.path)
        values += [t.location for t in self.sources if "://" in t.location]
        out: dict[str, str] = {}
        for value in values:
            where = self.resolve(value) if "://" in value else None
            if isinstance(where, ObjectPath):
                out.update(storage_settings(str(where), self.config.storage,
                                            per_bucket=True).spark_conf())
        return out

    def table_path(self, name: str) -> Location:
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


@dataclass(frozen=True)
class _Rendered:
    """project.yml rendered, with what its ``env_var()`` calls read."""

    text: str
    #: variable name -> value, for the variables read from the environment (not defaults)
    reads: Mapping[str, str]
    template: jinja2.Template


def _render_project_yml(text: str) -> _Rendered:
    """project.yml may use ``{{ env_var('NAME', 'default') }}``; what each call read from the
    environment is kept (:func:`_secret_vars`, :func:`set_secret_values`)."""
    env = SandboxedEnvironment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    reads: dict[str, str] = {}

    def env_var(name: str, default: str | None = None) -> str:
        value = _env_var(name, default)
        if name in os.environ:
            reads[name] = value
        return value

    try:
        template = env.from_string(text)
        return _Rendered(template.render(env_var=env_var), reads, template)
    except jinja2.TemplateSyntaxError as e:
        raise ConfigError(f"template error: {e.message}", path="project.yml", line=e.lineno) from e
    except jinja2.UndefinedError as e:
        raise ConfigError(f"template error: {e.message}", path="project.yml") from e


def _secret_vars(rendered: _Rendered, config: ProjectConfig) -> dict[str, tuple[str, ...]]:
    """vars -> the secret variables (read from the environment, no public prefix) their value
    depends on. project.yml is rendered again with every variable's value replaced by a marker,
    then once per secret variable with its marker changed: a var whose value changes depends
    on it (jinja may join, filter or slice a value: only a rendering says where it lands).
    Every var is taken as depending on every secret when a rendering is not readable YAML."""
    secret = sorted(name for name in rendered.reads
                    if not public_env_var(name, config.env_var_prefixes))
    if not secret:
        return {}

    def vars_with(changed: str | None) -> Any:
        def marked(name: str, *_default: str) -> str:
            return f"runner_env_{name}_{'changed' if name == changed else 'marker'}"
        try:
            data = yaml.safe_load(rendered.template.render(env_var=marked))
        except (yaml.YAMLError, jinja2.TemplateError):
            return None
        return data.get("vars") if isinstance(data, dict) else None

    base = vars_with(None)
    found: dict[str, list[str]] = {}
    for name in secret:
        other = vars_with(name)
        if not isinstance(base, dict) or not isinstance(other, dict):
            return {var: tuple(secret) for var in config.vars}
        for var in base.keys() | other.keys():
            if base.get(var) != other.get(var):
                found.setdefault(str(var), []).append(name)
    return {var: tuple(names) for var, names in found.items()}


#: ``--vars`` of the command being run (:func:`command_line_vars`): they override project.yml's
_CLI_VARS: ContextVar[Mapping[str, Any] | None] = ContextVar("cli_vars", default=None)


@contextmanager
def command_line_vars(text: str | None) -> Iterator[None]:
    """Inside the block, projects load with ``text``'s vars over project.yml's ``vars:``
    (dbt's ``--vars '{"key": "value"}'``: a YAML or JSON mapping).

    Raises:
        ConfigError: ``text`` is not a mapping of names to values (exit 2).
    """
    if not text:
        yield
        return
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"--vars: not YAML or JSON: {getattr(e, 'problem', e)}",
                          hint="--vars '{\"name\": \"value\"}'") from e
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise ConfigError(f"--vars: expected a mapping of names to values, got {text!r}",
                          hint="--vars '{\"name\": \"value\"}'")
    token = _CLI_VARS.set(data)
    try:
        yield
    finally:
        _CLI_VARS.reset(token)


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
    rendered = _render_project_yml(yml.read_text(encoding="utf-8"))
    text = rendered.text
    # Every value read is masked until project.yml says which names are public (its own
    # errors may quote a value).
    set_secret_values(rendered.reads.values())
    config = parse_project_config(text, path="project.yml")
    set_secret_values(v for name, v in rendered.reads.items()
                           if not public_env_var(name, config.env_var_prefixes))
    secret_vars = _secret_vars(rendered, config)
    overrides = _CLI_VARS.get()
    if overrides:  # the command line's, not project.yml's: not secret
        config = config.model_copy(update={"vars": {**config.vars, **overrides}})
        secret_vars = {k: v for k, v in secret_vars.items() if k not in overrides}
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
    sources = _load_sources(root, by_name, storage=config.storage)
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
                   sources=sources, seeds=seeds, secret_vars=secret_vars)


def _load_sources(root: Path, models: dict[str, str], *, storage: Mapping[str, str]
                  ) -> tuple[SourceTable, ...]:
    """Every table declared under ``sources:`` in ``models/**/*.yml`` (``storage``: project.yml's
    explicit options, for the spelling of a path given by URI); their views may not be a
    model's name."""
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
        tables += parse_sources(root, text, data, path=rel, storage=storage)
    if not tables:
        return ()
    from runner.project.sources import check_unique
    check_unique(tables)
    for t in tables:
        if t.view.lower() in models:
            raise ConfigError(f"source '{t.full_name}' reads as the view '{t.view}', the name "
                              f"of model {models[t.view.lower()]}", path=t.path, line=t.line,
                              hint="rename the model or the source")
    return tuple(tables)
