"""Strict models of project.yml and of a model's ``config(...)``.

Validated once, at the edge: unknown keys are errors that name the key, the file and the line,
with a "did you mean". After loading, only these frozen models travel through the runner.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from runner.errors import ConfigError, did_you_mean
from runner.project.kafka_outputs import KafkaOutputs, check_kafka_model
from runner.project.maps import SecretMap, StrMap
from runner.project.secrets import MASK, is_secret_name
from runner.project.spark_conf import check_spark_conf, deployment_opt_ins
from runner.project.triggers import validate_interval
from runner.project.yaml_template import load_yaml, yaml_line

__all__ = [
    "CatalogConfig",
    "DeltaConfig",
    "Expectation",
    "FilesSource",
    "KafkaSource",
    "LintConfig",
    "LookupsConfig",
    "MaintenanceConfig",
    "MetricsConfig",
    "ModelConfig",
    "OnDefinitionChange",
    "OnModelError",
    "ProjectConfig",
    "SparkConfig",
    "Severity",
    "parse_project_config",
    "validation_message",
    "value_message",
]

Severity = Literal["error", "warn", "off"]
#: What a start does when a model's definition (compiled SQL, vars, macros) differs from the
#: one that wrote its table's batches: say so and go on (``warn``), stop (``refuse``), or
#: rebuild the table from the history with the new one (``rebuild``).
OnDefinitionChange = Literal["warn", "refuse", "rebuild"]
#: What a model's own run-time failure does: ``park`` it (and its descendants) and go on, or
#: ``halt`` the batch (the stream fails; every replay fails the same way until fixed).
OnModelError = Literal["park", "halt"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class FilesSource(_Strict):
    """A directory of newline-delimited JSON files; new files are picked up as they land."""

    type: Literal["files"]
    path: str = "data/incoming"
    max_files_per_trigger: int | None = Field(default=None, ge=1)


class KafkaSource(_Strict):
    """A Kafka topic (or several); offsets live in the pipeline's checkpoint."""

    type: Literal["kafka"]
    #: the deployment's: set by the profile's target (runner/project/profile.py), never here
    bootstrap_servers: str | None = None
    topic: str | list[str]
    starting_offsets: Literal["earliest", "latest"] | dict[str, dict[str, int]] = "earliest"
    max_offsets_per_trigger: int | None = Field(default=None, ge=1)
    fail_on_data_loss: bool = True
    #: ``spark``: Spark's own Kafka source (the spark-sql-kafka jars); ``python``: the runner's
    #: reader on confluent-kafka; ``auto``: Spark's when its classes load, else the runner's.
    reader: Literal["auto", "spark", "python"] = "auto"
    #: How long ``runner stream`` waits for the brokers at start (and, split over its three
    #: attempts, Spark's Kafka source for each offset look-up) before it stops with exit 2.
    connect_timeout: str = "30 seconds"
    #: the deployment's client properties, from the profile's target
    options: SecretMap = Field(default_factory=dict)

    @field_validator("connect_timeout")
    @classmethod
    def _timeout(cls, value: str) -> str:
        try:
            if validate_interval(value) <= 0:
                raise ValueError("must be more than 0 seconds")
        except ConfigError as e:
            raise ValueError(f"not an interval; {e.hint}") from e
        return value

    @property
    def connect_timeout_seconds(self) -> float:
        return validate_interval(self.connect_timeout)

    @property
    def brokers(self) -> str:
        """The target's ``bootstrap_servers``.

        Raises:
            ConfigError: the target sets none (compile needs none; a connection does).
        """
        if not self.bootstrap_servers:
            raise ConfigError("no Kafka brokers: they are the deployment's, set by the "
                              "profile's target (source.bootstrap_servers)",
                              hint="add source: {bootstrap_servers: host:port} to the target "
                                   "in profiles.yml (docs/PROFILES.md)")
        return self.bootstrap_servers

    @property
    def topics(self) -> tuple[str, ...]:
        return (self.topic,) if isinstance(self.topic, str) else tuple(self.topic)


class DeltaConfig(_Strict):
    """Which Delta engine writes, and (``rs``) which appends go through Arrow: batches of up
    to ``arrow_max_rows`` input rows; bigger ones are written by Spark's Parquet writer. Unset:
    500,000 on local masters, 10,000 elsewhere (``runner.sinks.rs.default_arrow_max_rows``)."""

    engine: Literal["auto", "spark", "rs"] = "auto"
    arrow_max_rows: int | None = Field(default=None, ge=0)


class SparkConfig(_Strict):
    """Spark settings: project.yml's ``conf`` (allowlisted tuning) with the target's over
    it; ``master`` is the target's (``local[*]`` in the built-in dev target). ``remote`` (the
    target's, or ``SPARK_REMOTE``; never project.yml's) is a Spark Connect server,
    ``sc://host:port``: the runner then starts no JVM (docs/CONNECT.md)."""

    master: str = "local[*]"
    remote: str | None = None
    conf: StrMap = Field(default_factory=dict)


class LintConfig(_Strict):
    """Severity per lint rule id (``error`` fails compile, ``warn`` reports, ``off`` skips)."""

    rules: dict[str, Severity] = Field(default_factory=dict)


class MaintenanceConfig(_Strict):
    """Table maintenance (``runner maintain``, and inside ``runner stream`` when scheduled).

    ``every_batches`` / ``every_minutes`` (either or both; unset: never inside the stream) run
    it between batches. ``keep_batches``: the snapshots of that many latest batches stay
    readable (vacuum keeps the versions they name; older ledger entries are dropped).
    ``vacuum_retention_hours``: vacuum also keeps every file removed from a table less than
    this many hours ago, and log expiry every commit that recent (Delta's own default: 168,
    7 days), so Delta readers that lag (a downstream streaming consumer, a long query on an
    older version) keep their files. 0: only the kept snapshots decide.
    """

    every_batches: int | None = Field(default=None, ge=1)
    every_minutes: float | None = Field(default=None, gt=0)
    keep_batches: int = Field(default=100, ge=1)
    vacuum_retention_hours: int = Field(default=168, ge=0)


class MetricsConfig(_Strict):
    """Prometheus metrics of ``runner stream`` (docs/METRICS.md): served on ``port`` (unset:
    not served; ``--metrics-port`` overrides) at ``host`` (all interfaces by default, so a
    scraper outside a container reaches it)."""

    port: int | None = Field(default=None, ge=1, le=65535)
    host: str = "0.0.0.0"


class LookupsConfig(_Strict):
    """Sources and seeds joined per batch (docs/CONFIGURATION.md): a lookup of at most
    ``broadcast_max_rows`` rows at its pinned version is broadcast to the joins (a hint);
    a larger one is joined as Spark decides. 0: never broadcast."""

    broadcast_max_rows: int = Field(default=1_000_000, ge=0)


#: A catalog, schema or table name: one identifier (the Hive metastore's own alphabet).
NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"


class CatalogConfig(_Strict):
    """Tables by name (docs/CATALOG.md): every model's Delta table is registered in Spark's
    catalog as ``<schema>.<alias>`` (``<name>.<schema>.<alias>`` when ``name`` names a catalog
    plugged into Spark as ``spark.sql.catalog.<name>``), an external table at its location.
    A model's ``schema=`` and ``alias=`` config override the schema and the table name."""

    database: str = Field(alias="schema", pattern=NAME_PATTERN)
    name: str | None = Field(default=None, pattern=NAME_PATTERN)


class ProjectConfig(_Strict):
    """The pipeline's configuration: project.yml's keys, with the deployment's (the profile's
    target: locations, connections, master, metrics) put in their places at load
    (:func:`runner.project.profile.apply_target`). project.yml itself may not hold the
    deployment's keys (:mod:`runner.project.boundary`)."""

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    #: the entry of profiles.yml this project reads (dbt's ``profile:``; default: ``name``)
    profile: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    source: FilesSource | KafkaSource = Field(discriminator="type")
    schema_ddl: str = Field(alias="schema", min_length=1)
    warehouse: str = "_warehouse"
    checkpoint: str = "_checkpoint"
    dead_letter: str = Field(default="_dead_letter", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    trigger: str = "10 seconds"
    parallelism: int = Field(default=4, ge=1, le=64)
    parse_only_used_fields: bool = False
    on_model_error: OnModelError = "park"
    #: unset: ``refuse`` for merge models (their rows accumulate), ``warn`` for appends
    on_definition_change: OnDefinitionChange | None = None
    delta: DeltaConfig = Field(default_factory=DeltaConfig)
    spark: SparkConfig = Field(default_factory=SparkConfig)
    lint: LintConfig = Field(default_factory=LintConfig)
    maintenance: MaintenanceConfig = Field(default_factory=MaintenanceConfig)
    metrics: MetricsConfig = Field(default_factory=MetricsConfig)
    lookups: LookupsConfig = Field(default_factory=LookupsConfig)
    catalog: CatalogConfig | None = None
    vars: dict[str, Any] = Field(default_factory=dict)
    #: Prefixes of the environment variables models and project.yml may read with env_var()
    #: (their values go into target/, the docs and messages): runner/project/secrets.py.
    env_var_prefixes: tuple[str, ...] = ()
    #: The target's explicit object-store options (delta-rs / object_store keys such as
    #: ``AWS_ENDPOINT_URL``, ``AZURE_STORAGE_ACCOUNT_NAME``), over the environment's; the same
    #: map reaches the runner's own files, delta-rs and Spark: runner/storage/settings.py.
    storage: dict[str, str] = Field(default_factory=dict)
    #: Where materialized='kafka' models produce: the target's (runner/project/kafka_outputs.py)
    kafka_outputs: KafkaOutputs | None = None

    @field_validator("env_var_prefixes")
    @classmethod
    def _prefixes(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for prefix in value:
            if not prefix or is_secret_name(prefix):
                raise ValueError(f"'{prefix}' cannot be a public prefix (empty, or it names a "
                                 "secret)")
        return value

    @field_validator("trigger")
    @classmethod
    def _interval(cls, value: str) -> str:
        try:
            validate_interval(value)
        except ConfigError as e:
            raise ValueError(f"not an interval; {e.hint}") from e
        return value


class Expectation(_Strict):
    """A named SQL predicate every row of a model must satisfy."""

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    expr: str = Field(min_length=1)
    on_violation: Literal["drop", "fail", "quarantine"] = "fail"


class ModelConfig(_Strict):
    """The keys a model may set with ``{{ config(...) }}``."""

    materialized: Literal["append", "merge", "kafka"] = "append"
    #: materialized='kafka': the topic every row goes to (else a ``topic`` column routes them)
    topic: str | None = Field(default=None, min_length=1)
    unique_key: tuple[str, ...] = ()
    merge_update: dict[str, str] | None = None
    merge_condition: str | None = None
    partition_by: tuple[str, ...] = ()
    enabled: bool = True
    tags: tuple[str, ...] = ()
    on_schema_change: Literal["fail", "append_new_columns"] = "fail"
    # New to an existing checkpoint: load the history first (True) or start at the next batch.
    backfill: bool = True
    expectations: tuple[Expectation, ...] = ()
    # Unset: project.yml's on_model_error (park by default).
    on_model_error: OnModelError | None = None
    # Unset: project.yml's on_definition_change, else refuse (merge) / warn (append).
    on_definition_change: OnDefinitionChange | None = None
    # dbt's names: the catalog schema and the table name (unset: catalog.schema, the file name)
    database: str | None = Field(default=None, alias="schema", pattern=NAME_PATTERN)
    alias: str | None = Field(default=None, pattern=NAME_PATTERN)
    # Change data capture (SDP's names; docs/AE_GUIDE.md "CDC from Debezium-shaped events").
    sequence_by: str | None = Field(default=None, min_length=1)
    apply_as_deletes: str | None = Field(default=None, min_length=1)
    stored_as_scd_type: Literal[1, 2] = 1
    track_history_column_list: tuple[str, ...] | None = None

    @field_validator("unique_key", "partition_by", "tags", "track_history_column_list",
                     mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return (value,) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _merge_needs_key(self) -> ModelConfig:
        _check_cdc(self)
        check_kafka_model(self)
        if self.materialized == "merge" and not self.unique_key:
            raise ValueError("materialized='merge' needs unique_key (a column or a list)")
        if self.materialized == "append" and (self.unique_key or self.merge_update
                                              or self.merge_condition):
            raise ValueError("unique_key, merge_update and merge_condition only apply to "
                             "materialized='merge'")
        return self

    @property
    def kind(self) -> str:
        """What the model's table is, in words (``runner docs``): ``append``, ``merge``,
        ``cdc scd1`` or ``cdc scd2``."""
        if self.sequence_by is None:
            return self.materialized
        return f"cdc scd{self.stored_as_scd_type}"


def _check_cdc(config: ModelConfig) -> None:
    """The change-data-capture keys: a merge model with ``sequence_by``; never with
    ``merge_update``/``merge_condition`` (the sequence decides which change wins)."""
    cdc_keys = [k for k, v in (("apply_as_deletes", config.apply_as_deletes),
                               ("track_history_column_list", config.track_history_column_list))
                if v is not None]
    if config.stored_as_scd_type == 2:
        cdc_keys.append("stored_as_scd_type=2")
    if config.sequence_by is None:
        if cdc_keys:
            missing = [k for k, v in (("unique_key", config.unique_key),
                                      ("sequence_by", config.sequence_by)) if not v]
            raise ValueError(f"{cdc_keys[0]} needs {' and '.join(missing)}: change data "
                             "capture is materialized='merge' with unique_key and sequence_by "
                             "(the column that orders the changes)")
        return
    if config.materialized != "merge":
        raise ValueError("sequence_by needs materialized='merge' and unique_key (change data "
                         "capture keeps one row per key)")
    if config.merge_update is not None or config.merge_condition is not None:
        raise ValueError("merge_update and merge_condition do not combine with sequence_by: "
                         "the change with the greatest sequence_by value wins")
    if config.sequence_by in config.unique_key:
        raise ValueError(f"sequence_by '{config.sequence_by}' is a unique_key column")
    if config.track_history_column_list is not None and config.stored_as_scd_type != 2:
        raise ValueError("track_history_column_list needs stored_as_scd_type=2")


def _fields_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """Valid keys of the (sub)model that holds ``loc``'s last element."""
    current: Any = model
    for part in loc[:-1]:
        member = {"files": FilesSource, "kafka": KafkaSource}.get(str(part))
        if member is not None:  # the tag of the discriminated source union
            current = member
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return []
        field = current.model_fields.get(part) or next(
            (f for f in current.model_fields.values() if f.alias == part), None)
        if field is None:
            return []
        current = field.annotation
    if isinstance(current, type) and issubclass(current, BaseModel):
        return [f.alias or name for name, f in current.model_fields.items()]
    return []


def value_message(err: Any) -> str:
    """What is wrong with a value, from one pydantic error, in the user's words (not
    pydantic's "Tuple should have at least 1 item after validation")."""
    if err["type"] == "too_short":
        least = int((err.get("ctx") or {}).get("min_length", 1))
        return f"needs at least {least} entr{'y' if least == 1 else 'ies'}, got none"
    return str(err["msg"]).removeprefix("Value error, ")


def validation_message(error: ValidationError, model: type[BaseModel]) -> list[tuple[str, str]]:
    """Turn pydantic errors into ``(dotted key, message)`` pairs a user can act on."""
    out = []
    for err in error.errors():
        loc = tuple(p for p in err["loc"] if p not in ("files", "kafka") or len(err["loc"]) == 1)
        key = ".".join(str(p) for p in loc) or "(top level)"
        if err["type"] == "extra_forbidden":
            name = str(loc[-1])
            msg = f"unknown key '{name}'" + did_you_mean(name, _fields_at(model, err["loc"]))
        elif err["type"] == "missing":
            msg = f"missing required key '{key}'"
        elif err["type"] == "union_tag_invalid":
            msg = f"{key}: type must be 'files' or 'kafka'"
        else:
            msg = f"{key}: {value_message(err)}"
            if "input" in err and not isinstance(err["input"], (dict, list, tuple)):
                shown = MASK if is_secret_name(key) else repr(err["input"])
                msg += f" (got {shown})"
        out.append((key, msg))
    return out


def parse_project_config(text: str, *, path: str,
                         opt_ins: Iterable[str] = ()) -> ProjectConfig:
    """Parse and validate project.yml's (already rendered) text; ``spark.conf`` keys that load
    code need a deployment's opt-in (:mod:`runner.project.spark_conf`): ``opt_ins`` (the
    target's ``allow_spark_conf``), the command line's or the environment's.

    Raises:
        ConfigError: naming the file, the line and the offending key.
    """
    data = load_yaml(text, path=path)
    if not isinstance(data, Mapping):
        raise ConfigError("project.yml must be a mapping of keys to values", path=path)
    try:
        config = ProjectConfig.model_validate(data)
    except ValidationError as e:
        errors = [ConfigError(message, path=path, line=yaml_line(text, tuple(key.split("."))))
                  for key, message in validation_message(e, ProjectConfig)]
        first = errors[0]
        raise ConfigError(first.message, path=path, line=first.line, also=errors[1:]) from e
    conf = config.spark.conf
    check_spark_conf(conf, path=path, opt_ins=deployment_opt_ins() | set(opt_ins),
                     lines={k: yaml_line(text, ("spark", "conf", k)) for k in conf})
    return config
