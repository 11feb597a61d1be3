"""The deployment's profile: where the pipeline runs and what it connects to (dbt's profiles.yml).

project.yml travels with every pull request, so it names no host, credential, client property,
class, library or file outside the project. What differs per deployment and what touches
credentials lives in ``profiles.yml``, which the operator keeps outside the project::

    app_events:                    # the project's `profile:` (default: its `name:`)
      target: dev                  # the default target
      outputs:
        dev:
          warehouse: _warehouse    # relative paths: relative to the project directory
        prod:
          warehouse: s3://lake/app_events/tables
          checkpoint: s3://lake/app_events/checkpoint
          source: {path: s3://lake/incoming}        # kafka: bootstrap_servers, options
          storage: {AWS_REGION: eu-west-1}          # object-store options and endpoints
          spark: {master: "spark://head:7077", conf: {spark.hadoop.hive.metastore.uris: ...}}
                                  # or {remote: "sc://host:15002"}: Spark Connect, no local JVM
          metrics: {port: 9108}
          allow_spark_conf: [spark.sql.extensions]  # opt-ins for project.yml's spark.conf
          kafka_outputs: {bootstrap_servers: ..., options: {...}}  # Kafka models' producers

Found (:func:`find_profiles`) through ``--profiles-dir DIR``, else ``RUNNER_PROFILES_DIR``,
else ``~/.runner/``; never in the project directory unless ``--profiles-dir`` names it. The
target is ``--target`` / ``RUNNER_TARGET`` / the profile's ``target:`` / ``dev``. No profile:
the built-in ``dev`` target, which is project.yml's own relative locations on ``local[*]``.
``env_var()`` works in the file; every value it reads is a secret (masked in every message).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runner.errors import ConfigError, did_you_mean
from runner.project.config import MetricsConfig, ProjectConfig, validation_message
from runner.project.kafka_outputs import KafkaOutputs
from runner.project.maps import SecretMap, StrMap
from runner.project.secrets import set_secret_values
from runner.project.spark_conf import FORCED
from runner.project.yaml_template import load_yaml, render_values, yaml_line

__all__ = ["BUILT_IN_TARGET", "PROFILES_DIR_ENV", "PROFILES_FILE", "TARGET_ENV", "Target",
           "TargetChoice", "apply_target", "command_line_profile", "find_profiles",
           "load_target"]

PROFILES_FILE = "profiles.yml"
PROFILES_DIR_ENV = "RUNNER_PROFILES_DIR"
TARGET_ENV = "RUNNER_TARGET"
BUILT_IN_TARGET = "dev"
_HOME_DIR = "~/.runner"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TargetSource(_Strict):
    """The source's deployment side: the files' folder, or Kafka's brokers and client
    properties (security, SASL, TLS: librdkafka's names; Spark's Kafka source gets them as
    ``kafka.<name>``)."""

    path: str | None = None
    bootstrap_servers: str | None = None
    options: SecretMap = Field(default_factory=dict)


class TargetSpark(_Strict):
    """Spark's master and the deployment's own settings (any key: it is the operator's file)."""

    master: str | None = None
    remote: str | None = None  # a Spark Connect server, sc://host:port (docs/CONNECT.md)
    conf: StrMap = Field(default_factory=dict)


class Target(_Strict):
    """One target of a profile: every key optional; unset keys keep project.yml's dev values."""

    warehouse: str | None = None
    checkpoint: str | None = None
    source: TargetSource = Field(default_factory=TargetSource)
    storage: StrMap = Field(default_factory=dict)
    spark: TargetSpark = Field(default_factory=TargetSpark)
    metrics: MetricsConfig = Field(default_factory=MetricsConfig)
    allow_spark_conf: tuple[str, ...] = ()
    #: where materialized='kafka' models produce (unset keys: the Kafka source's)
    kafka_outputs: KafkaOutputs = Field(default_factory=KafkaOutputs)


@dataclass(frozen=True)
class TargetChoice:
    """The target a command runs with, and where it came from (``runner status`` shows both)."""

    name: str
    target: Target
    #: the profiles.yml it was read from; None for the built-in dev target
    file: Path | None
    #: values its ``env_var()`` calls read (secrets: masked in every message)
    secrets: tuple[str, ...] = ()

    @property
    def origin(self) -> str:
        return f"{self.file}" if self.file else "built in (no profiles.yml)"


#: ``--profiles-dir`` and ``--target`` of the command being run (:func:`command_line_profile`)
_CLI: ContextVar[tuple[str | None, str | None]] = ContextVar("profile_choice",
                                                              default=(None, None))


@contextmanager
def command_line_profile(*, profiles_dir: str | None = None,
                         target: str | None = None) -> Iterator[None]:
    """Inside the block, projects load with the command line's ``--profiles-dir`` and
    ``--target`` (over ``RUNNER_PROFILES_DIR`` and ``RUNNER_TARGET``); a value not given keeps
    the one set around the block."""
    current = _CLI.get()
    token = _CLI.set((profiles_dir or current[0], target or current[1]))
    try:
        yield
    finally:
        _CLI.reset(token)


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def find_profiles(root: Path, profiles_dir: str | None = None) -> Path | None:
    """The profiles.yml a command in project ``root`` reads, or None (the built-in target).

    Raises:
        ConfigError: a named folder without profiles.yml; ``RUNNER_PROFILES_DIR`` inside the
            project; a profiles.yml in the project while no ``--profiles-dir`` names it.
    """
    explicit = profiles_dir or _CLI.get()[0]
    from_env = os.environ.get(PROFILES_DIR_ENV) or None
    folder = explicit or from_env
    shipped = root / PROFILES_FILE
    if shipped.is_file() and not (explicit and Path(explicit).expanduser().resolve() == root):
        raise ConfigError(
            f"{shipped} is not read: a profile inside the project directory would let a pull "
            "request choose the deployment's hosts and credentials",
            path=PROFILES_FILE, hint=f"move it to {_HOME_DIR}/ (or {PROFILES_DIR_ENV}), or "
                                     "pass --profiles-dir . to read it on purpose")
    if folder is not None:
        where = Path(folder).expanduser().resolve()
        file = where / PROFILES_FILE
        named = "--profiles-dir" if explicit else PROFILES_DIR_ENV
        if not file.is_file():
            raise ConfigError(f"{named} {folder}: no {PROFILES_FILE} there",
                              hint=f"write {file} (docs/PROFILES.md) or name another folder")
        if not explicit and _inside(where, root):
            raise ConfigError(
                f"{PROFILES_DIR_ENV} points inside the project ({where}): a profile there "
                "travels with the project's pull requests, which must not choose the "
                "deployment's connections", hint="keep the profile outside the project, or "
                "name it on the command line with --profiles-dir to mean it")
        return file
    home = Path(_HOME_DIR).expanduser() / PROFILES_FILE
    return home if home.is_file() else None


def load_target(root: Path, profile: str, *, profiles_dir: str | None = None,
                target: str | None = None) -> TargetChoice:
    """The target this command runs with (see the module's docstring for the order).

    Raises:
        ConfigError: no such profile or target (with what there is), or an invalid file.
    """
    wanted = target or _CLI.get()[1] or os.environ.get(TARGET_ENV) or None
    file = find_profiles(root, profiles_dir)
    if file is None:
        if wanted not in (None, BUILT_IN_TARGET):
            raise ConfigError(f"target '{wanted}': no {PROFILES_FILE} found (looked in "
                              f"{PROFILES_DIR_ENV} and {_HOME_DIR}/)",
                              hint="write one (docs/PROFILES.md) or pass --profiles-dir")
        return TargetChoice(BUILT_IN_TARGET, Target(), None)
    shown = str(file)
    text = file.read_text(encoding="utf-8")
    data = load_yaml(text, path=shown)
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{PROFILES_FILE} must map profile names to their targets",
                          path=shown)
    if profile not in data:
        if wanted in (None, BUILT_IN_TARGET):
            return TargetChoice(BUILT_IN_TARGET, Target(), None)
        raise ConfigError(f"no profile '{profile}' in {shown}" + did_you_mean(
            profile, [str(k) for k in data]), path=shown,
            hint="the profile's name is project.yml's profile: (or its name:)")
    raw = data[profile]
    if not isinstance(raw, Mapping) or not isinstance(raw.get("outputs"), Mapping):
        raise ConfigError(f"profile '{profile}' needs outputs: (its targets by name) and "
                          "optionally target: (the default)", path=shown,
                          line=yaml_line(text, (profile,)))
    name = wanted or raw.get("target") or BUILT_IN_TARGET
    if not isinstance(name, str):
        raise ConfigError(f"profile '{profile}': target: must be a target's name", path=shown,
                          line=yaml_line(text, (profile, "target")))
    if name not in raw["outputs"]:
        if name == BUILT_IN_TARGET and wanted is None:
            return TargetChoice(BUILT_IN_TARGET, Target(), None)
        raise ConfigError(f"profile '{profile}' has no target '{name}'"
                          + did_you_mean(name, [str(k) for k in raw["outputs"]]), path=shown,
                          line=yaml_line(text, (profile, "outputs")),
                          hint=f"its targets: {', '.join(map(str, raw['outputs'])) or 'none'}")
    values, reads = render_values(raw["outputs"][name], path=shown)
    set_secret_values(reads.values())  # before anything below can quote one
    try:
        chosen = Target.model_validate(values if values is not None else {})
    except ValidationError as e:
        errors = [ConfigError(f"target '{name}': {message}", path=shown,
                              line=yaml_line(text, (profile, "outputs", name, *key.split("."))))
                  for key, message in validation_message(e, Target)]
        raise ConfigError(errors[0].message, path=shown, line=errors[0].line,
                          hint="docs/PROFILES.md lists a target's keys",
                          also=errors[1:]) from e
    if chosen.storage:
        from runner.storage.settings import storage_settings
        try:  # an unknown option is refused here, at its line, not at the first location
            for uri in ("s3://b/k", "abfss://c@a.dfs.core.windows.net/k", "gs://b/k"):
                storage_settings(uri, chosen.storage, environ={})
        except ConfigError as e:
            raise ConfigError(f"target '{name}': {e.message}", path=shown, hint=e.hint,
                              line=yaml_line(text, (profile, "outputs", name, "storage"))) from e
    return TargetChoice(name, chosen, file, tuple(reads.values()))


def apply_target(config: ProjectConfig, choice: TargetChoice) -> ProjectConfig:
    """project.yml's configuration with the target's settings in their places.

    Raises:
        ConfigError: a source key of the other source kind (a files path on Kafka...).
    """
    t = choice.target
    where = str(choice.file or PROFILES_FILE)
    source = config.source
    source_update: dict[str, Any] = {}
    if source.type == "files":
        if t.source.bootstrap_servers is not None or t.source.options:
            raise ConfigError(f"target '{choice.name}': source.bootstrap_servers and "
                              "source.options are for a kafka source; this project reads "
                              "files", path=where)
        if t.source.path is not None:
            source_update["path"] = t.source.path
    else:
        if t.source.path is not None:
            raise ConfigError(f"target '{choice.name}': source.path is for a files source; "
                              "this project reads kafka", path=where,
                              hint="give source.bootstrap_servers (and options)")
        if t.source.bootstrap_servers is not None:
            source_update["bootstrap_servers"] = t.source.bootstrap_servers
        source_update["options"] = dict(t.source.options)
    forced = [k for k in t.spark.conf if k in FORCED]
    if forced:
        raise ConfigError(f"target '{choice.name}': spark.conf.{forced[0]}: {FORCED[forced[0]]}",
                          path=where, hint="remove it: the runner sets it in every session")
    if t.spark.master is not None and t.spark.remote is not None:
        raise ConfigError(f"target '{choice.name}': spark.master and spark.remote both set",
                          path=where, hint="a Spark Connect server (remote) runs its own "
                          "master: keep one of the two")
    spark = config.spark.model_copy(update={
        "master": t.spark.master or config.spark.master, "remote": t.spark.remote,
        "conf": {**config.spark.conf, **t.spark.conf}})
    placed = source.model_copy(update=source_update)
    update: dict[str, Any] = {"source": placed, "spark": spark, "storage": dict(t.storage),
                              "metrics": t.metrics, "kafka_outputs": _kafka_outputs(t, placed)}
    for key in ("warehouse", "checkpoint"):
        value = getattr(t, key)
        if value is not None:
            update[key] = value
    return config.model_copy(update=update)


def _kafka_outputs(t: Target, source: Any) -> KafkaOutputs:
    """The Kafka models' connection: the target's ``kafka_outputs``, its unset brokers and
    options taken from a Kafka source's (the same cluster, the same credentials, by default).
    Only the target's values reach a producer: project.yml holds none of them."""
    out = t.kafka_outputs
    if source.type != "kafka":
        return out
    update: dict[str, Any] = {}
    if out.bootstrap_servers is None:
        update["bootstrap_servers"] = source.bootstrap_servers
    if not out.options:
        update["options"] = dict(source.options)
    return out.model_copy(update=update)
