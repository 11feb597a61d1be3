"""Load a project directory into a frozen :class:`Project`: config, event schema, sources."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from runner.errors import ConfigError
from runner.project.boundary import check_boundary
from runner.project.config import ProjectConfig, parse_project_config
from runner.project.event_schema import EventSchema, metadata_columns
from runner.project.paths import check_project_paths, resolve_location
from runner.project.profile import Target, TargetChoice, apply_target, load_target
from runner.project.secrets import is_secret_name, public_env_var, set_secret_values
from runner.project.yaml_template import load_yaml, render_yaml
from runner.storage.objects import ObjectPath
from runner.storage.ops import Location

if TYPE_CHECKING:  # imported when a project has seeds or declares sources (compile's start-up)
    from runner.project.seeds import Seed
    from runner.project.sources import SourceTable

__all__ = ["MacroSource", "ModelSource", "Project", "command_line_vars", "load_project"]

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NO_TARGET = Target()
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
    #: ``--vars`` keys that project.yml's ``vars:`` does not hold (a model must read each)
    cli_vars: tuple[str, ...] = ()
    #: the deployment's target whose settings ``config`` holds (runner/project/profile.py)
    target: TargetChoice = field(default_factory=lambda: TargetChoice("dev", _NO_TARGET, None))

    def resolve(self, relative: str) -> Location:
        """A project location: an object-store URI with the target's ``storage:`` options,
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
        the environment and the target's ``storage:`` (:mod:`runner.storage.settings`)."""
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


def _check_env_reads(names: tuple[str, ...], prefixes: Sequence[Any]) -> None:
    """project.yml reads only public environment variables (an ``env_var_prefixes``
    prefix): its values reach models, target/ and messages; secrets belong in the profile.
    Checked on the raw file first (before a validation message could quote a value; a
    prefix that is no string or names a secret counts as none), then on the validated one."""
    public = [p for p in prefixes if isinstance(p, str) and p and not is_secret_name(p)]
    for name in dict.fromkeys(names):
        if not public_env_var(name, public):
            raise ConfigError(
                f"env_var('{name}'): project.yml reads only public variables (names starting "
                "with an env_var_prefixes prefix); its values reach the models, target/ and "
                "messages", path="project.yml",
                hint="secrets and connections belong in the deployment's profile "
                     "(docs/PROFILES.md); a public value: add its prefix under env_var_prefixes")


def _configured(root: Path, yml: Path, *, profiles_dir: str | None, target: str | None
                ) -> tuple[str, ProjectConfig, TargetChoice, tuple[str, ...]]:
    """project.yml rendered and validated, with the target's settings and ``--vars`` in their
    places: (its text, the configuration, the target, the ``--vars`` keys it does not hold)."""
    rendered = render_yaml(yml.read_text(encoding="utf-8"), path="project.yml")
    # masked until the names are checked: no message before that may quote a value
    set_secret_values(rendered.reads.values())
    text = rendered.text
    raw = load_yaml(text, path="project.yml")
    name: Any = None
    prefixes: Any = ()
    if isinstance(raw, Mapping):
        prefixes = raw.get("env_var_prefixes") or ()
        _check_env_reads(rendered.names, prefixes if isinstance(prefixes, list) else ())
        check_boundary(raw, text=text)
        name = raw.get("profile") or raw.get("name")
    choice = load_target(root, name, profiles_dir=profiles_dir, target=target) \
        if isinstance(name, str) else TargetChoice("dev", _NO_TARGET, None)
    set_secret_values([*choice.secrets, *rendered.reads.values()])
    config = parse_project_config(text, path="project.yml",
                                  opt_ins=choice.target.allow_spark_conf)
    _check_env_reads(rendered.names, config.env_var_prefixes)
    set_secret_values(choice.secrets)  # project.yml's values are public: checked above
    config = apply_target(config, choice)
    overrides = _CLI_VARS.get() or {}
    cli_vars = tuple(k for k in overrides if k not in config.vars)
    if overrides:
        config = config.model_copy(update={"vars": {**config.vars, **overrides}})
    return text, config, choice, cli_vars


def load_project(project_dir: str | os.PathLike[str] = ".", *, profiles_dir: str | None = None,
                 target: str | None = None) -> Project:
    """Read and validate a project directory, with the deployment's target
    (:func:`runner.project.profile.load_target`: ``profiles_dir`` and ``target`` over the
    command line's and the environment's choice).

    Raises:
        ConfigError: project.yml, the profile or the target is missing or invalid, or model
            file names clash.
    """
    root = Path(project_dir).resolve()
    yml = root / "project.yml"
    if not yml.is_file():
        raise ConfigError(f"no project.yml in {root}",
                          hint="run from the project directory or pass --project-dir")
    text, config, choice, cli_vars = _configured(root, yml, profiles_dir=profiles_dir,
                                                 target=target)
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
    chosen = choice.target
    set_by_target = [key for key, value in (("warehouse", chosen.warehouse),
                                            ("checkpoint", chosen.checkpoint),
                                            ("source.path", chosen.source.path)) if value]
    check_project_paths(root, config, tables=[m.name for m in models], text=text,
                        files={key: choice.origin for key in set_by_target},
                        lookups=[(s.path, s.line, f"source {s.full_name}", s.location)
                                 for s in sources if not s.catalog]
                        + [(s.file, None, f"seed {s.name}", str(s.path)) for s in seeds])
    return Project(root=root, config=config, schema=schema, models=tuple(models), macros=macros,
                   sources=sources, seeds=seeds, cli_vars=cli_vars, target=choice)


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
