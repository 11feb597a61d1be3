"""The Kafka source's settings as the readers use them: validated once, secrets kept out of
every repr and message.

:class:`KafkaSourceOptions` is the one type the readers take. It is built from project.yml's
:class:`~runner.project.config.KafkaSource` by :meth:`~KafkaSourceOptions.from_source`, and
makes the string-option round trip of Spark's Python Data Source API here and only here:
:meth:`~KafkaSourceOptions.to_options` writes the data source's string options and
:meth:`~KafkaSourceOptions.parse` reads them back (names case-insensitive; client properties
take the prefix ``kafka.``). :meth:`~KafkaSourceOptions.client` builds the librdkafka
configuration; :func:`mask_client_config` masks the values of secret-looking properties.
"""

from __future__ import annotations

import difflib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from runner.errors import ConfigError
from runner.project.secrets import MASK, is_secret_name
from runner.sources.kafka.offset_plan import (
    StartingOffsets,
    offsets_to_json,
    parse_starting_offsets,
)

if TYPE_CHECKING:
    from runner.project.config import KafkaSource

__all__ = ["SOURCE_TUNING_OPTIONS", "KafkaSourceOptions", "client_properties",
           "mask_client_config"]

SOURCE_TUNING_OPTIONS = ("min_partitions", "max_records_per_partition", "timeout_ms",
                         "read_timeout_ms")
"""Keys of the target's ``source.options`` that tune the source rather than the Kafka client
(client properties always contain a dot, these never do)."""

#: The Python reader's metadata and offset look-up timeout, and its read timeout, when the
#: options set none (Spark's source has its own defaults).
_DEFAULT_TIMEOUT_MS = 5000
_DEFAULT_READ_TIMEOUT_MS = 30000

_RESERVED = {
    "bootstrap.servers": "use the bootstrap_servers option",
    "group.id": "the source keeps offsets in Spark's checkpoint, not in a consumer group",
    "enable.auto.commit": "offsets are never committed to Kafka",
    "auto.offset.reset": "use starting_offsets and fail_on_data_loss",
    "enable.partition.eof": "the source needs partition EOF events",
}
_OPTIONS = ("bootstrap_servers", "topic", "starting_offsets", "max_offsets_per_trigger",
            "fail_on_data_loss", "min_partitions", "max_records_per_partition", "timeout_ms",
            "read_timeout_ms", "start_record")


def mask_client_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with the values of secret-looking properties (the project's one rule,
    :func:`runner.project.secrets.is_secret_name`) replaced by ``'***'``.

    >>> mask_client_config({"sasl.password": "hunter2", "security.protocol": "SASL_SSL"})
    {'sasl.password': '***', 'security.protocol': 'SASL_SSL'}
    """
    return {k: (MASK if is_secret_name(k) else v) for k, v in config.items()}


def client_properties(source: KafkaSource) -> dict[str, str]:
    """The Kafka client properties of ``source.options`` (its tuning keys,
    :data:`SOURCE_TUNING_OPTIONS`, left out), secrets revealed: for a client, never a
    message."""
    return {k: v.get_secret_value() for k, v in source.options.items()
            if k not in SOURCE_TUNING_OPTIONS}


def _positive_int(options: Mapping[str, str], name: str, default: int | None) -> int | None:
    raw = options.get(name)
    if raw is None or str(raw).strip() == "":
        return default
    try:
        value = int(str(raw).strip())
    except ValueError as e:
        raise ConfigError(f"Kafka option {name} must be a positive integer, got {raw!r}") from e
    if value < 1:
        raise ConfigError(f"Kafka option {name} must be a positive integer, got {raw!r}")
    return value


@dataclass(frozen=True)
class KafkaSourceOptions:
    """The source's options, validated once. ``client_config`` never shows in a repr."""

    bootstrap_servers: str
    topics: tuple[str, ...]
    starting_offsets: StartingOffsets = "earliest"
    max_offsets_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    timeout_ms: int | None = None  # None: the Python reader's 5000, Spark's own default
    read_timeout_ms: int | None = None  # None: the Python reader's 30000, Spark's own default
    # the checkpoint folder where batch 0's resolved start is recorded (None: not recorded)
    start_record: str | None = None
    client_config: Mapping[str, str] = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        return (f"KafkaSourceOptions(bootstrap_servers={self.bootstrap_servers!r}, "
                f"topics={self.topics!r}, starting_offsets={self.starting_offsets!r}, "
                f"max_offsets_per_trigger={self.max_offsets_per_trigger!r}, "
                f"fail_on_data_loss={self.fail_on_data_loss!r}, "
                f"client_config={mask_client_config(self.client_config)!r})")

    @classmethod
    def from_source(cls, source: KafkaSource, *,
                    start_record: str | None = None) -> KafkaSourceOptions:
        """project.yml's Kafka source as the readers' options (the one place its settings are
        mapped): ``source.options`` is split into the source's tuning keys
        (:data:`SOURCE_TUNING_OPTIONS`) and client properties; ``start_record`` is the
        checkpoint folder (see :mod:`runner.sources.kafka.datasource`).

        Validated as :meth:`parse` validates, but the client properties are not checked
        against the Python reader's reserved names here (Spark's source has its own rules):
        the Python reader checks them when it parses its string options.

        Raises:
            ConfigError: no topic, malformed starting offsets or tuning values, named.
        """
        tuning = {k: v.get_secret_value() for k, v in source.options.items()
                  if k in SOURCE_TUNING_OPTIONS}
        return cls._validated({
            **tuning, "bootstrap_servers": source.brokers,
            "topic": ",".join(source.topics), "starting_offsets": source.starting_offsets,
            "max_offsets_per_trigger": source.max_offsets_per_trigger,
            "fail_on_data_loss": source.fail_on_data_loss, "start_record": start_record,
        }, client_properties(source))

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> KafkaSourceOptions:
        """Validate the data source's string options (what :meth:`to_options` writes).

        Raises:
            ConfigError: a missing, malformed, unknown or reserved option, named.
        """
        opts = {str(k).lower(): v for k, v in options.items()}
        client: dict[str, str] = {}
        for key, value in opts.items():
            if key.startswith("kafka."):
                prop = key[len("kafka."):]
                if prop in _RESERVED:
                    raise ConfigError(f"Kafka option {key} is not allowed: {_RESERVED[prop]}")
                client[prop] = str(value)
            elif key not in _OPTIONS and key != "path":
                close = difflib.get_close_matches(key, _OPTIONS, n=1)
                raise ConfigError(
                    f"unknown Kafka source option {key!r}"
                    + (f" (did you mean {close[0]!r}?)" if close else "")
                    + "; client properties take the prefix 'kafka.'")
        return cls._validated(opts, client)

    @classmethod
    def _validated(cls, opts: Mapping[str, Any], client: dict[str, str]) -> KafkaSourceOptions:
        """The options from ``opts`` (lower-case names; strings, or the typed values of
        project.yml) and the client properties ``client``.

        Raises:
            ConfigError: a missing or malformed value, named.
        """
        servers = str(opts.get("bootstrap_servers") or "").strip()
        if not servers:
            raise ConfigError("Kafka option bootstrap_servers is required (host:port[,...])")
        names = (t.strip() for t in str(opts.get("topic") or "").split(","))
        topics = tuple(dict.fromkeys(t for t in names if t))  # duplicates dropped
        if not topics:
            raise ConfigError("Kafka option topic is required (at least one topic: a name or "
                              "a comma-separated list)")
        fail = str(opts.get("fail_on_data_loss", "true")).strip().lower()
        if fail not in ("true", "false"):
            raise ConfigError(f"Kafka option fail_on_data_loss must be true or false, "
                              f"got {opts['fail_on_data_loss']!r}")
        start = opts.get("starting_offsets")
        return cls(
            bootstrap_servers=servers,
            topics=topics,
            starting_offsets=parse_starting_offsets(
                "earliest" if start is None or start == "" else start, topics),
            max_offsets_per_trigger=_positive_int(opts, "max_offsets_per_trigger", None),
            fail_on_data_loss=fail == "true",
            min_partitions=_positive_int(opts, "min_partitions", None),
            max_records_per_partition=_positive_int(opts, "max_records_per_partition", None),
            timeout_ms=_positive_int(opts, "timeout_ms", None),
            read_timeout_ms=_positive_int(opts, "read_timeout_ms", None),
            start_record=str(opts["start_record"]) if opts.get("start_record") else None,
            client_config=client,
        )

    def to_options(self) -> dict[str, str]:
        """These options as the data source's string options (Spark hands a Python data
        source its options as strings); :meth:`parse` reads them back.

        >>> opts = KafkaSourceOptions.parse({"bootstrap_servers": "b:9092", "topic": "a,b",
        ...                                  "timeout_ms": "900", "kafka.client.id": "me"})
        >>> opts.to_options()["kafka.client.id"]
        'me'
        >>> KafkaSourceOptions.parse(opts.to_options()) == opts
        True
        """
        options = {"bootstrap_servers": self.bootstrap_servers, "topic": ",".join(self.topics),
                   "starting_offsets": self.starting_offsets_text,
                   "fail_on_data_loss": "true" if self.fail_on_data_loss else "false"}
        for name in ("max_offsets_per_trigger", "min_partitions", "max_records_per_partition",
                     "timeout_ms", "read_timeout_ms", "start_record"):
            value = getattr(self, name)
            if value is not None:
                options[name] = str(value)
        options.update({f"kafka.{k}": str(v) for k, v in self.client_config.items()})
        return options

    @property
    def starting_offsets_text(self) -> str:
        """``earliest``, ``latest`` or Spark's offsets JSON (``{"t": {"0": 5}}``)."""
        start = self.starting_offsets
        return start if isinstance(start, str) else json.dumps(offsets_to_json(start))

    @property
    def timeout_s(self) -> float:
        """The Python reader's metadata and offset look-up timeout, in seconds."""
        return (self.timeout_ms or _DEFAULT_TIMEOUT_MS) / 1000

    @property
    def read_timeout_s(self) -> float:
        """How long a Python reader task waits for a record, in seconds."""
        return (self.read_timeout_ms or _DEFAULT_READ_TIMEOUT_MS) / 1000

    def client(self, **extra: Any) -> dict[str, Any]:
        """librdkafka configuration: user properties, then the source's fixed ones."""
        config: dict[str, Any] = {
            "socket.connection.setup.timeout.ms": self.timeout_ms or _DEFAULT_TIMEOUT_MS,
            "logger": logging.getLogger("runner.kafka.client"),
            **self.client_config,
            "bootstrap.servers": self.bootstrap_servers,
        }
        config.update(extra)
        return config
