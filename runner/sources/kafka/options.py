"""The Kafka source's options: validated once, secrets kept out of every repr and message.

:class:`KafkaSourceOptions` checks the data source's string options (names case-insensitive;
client properties take the prefix ``kafka.``) and builds the librdkafka configuration;
:func:`mask_client_config` masks the values of secret-looking properties.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from runner.errors import ConfigError
from runner.project.secrets import MASK, is_secret_name
from runner.sources.kafka.plan import StartingOffsets, parse_starting_offsets

__all__ = ["KafkaSourceOptions", "mask_client_config"]

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
    timeout_ms: int = 5000
    read_timeout_ms: int = 30000
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
    def parse(cls, options: Mapping[str, str]) -> KafkaSourceOptions:
        """Validate the data source's string options.

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
        servers = str(opts.get("bootstrap_servers") or "").strip()
        if not servers:
            raise ConfigError("Kafka option bootstrap_servers is required (host:port[,...])")
        topics = tuple(t.strip() for t in str(opts.get("topic") or "").split(",") if t.strip())
        if not topics:
            raise ConfigError("Kafka option topic is required (a name or a comma-separated list)")
        fail = str(opts.get("fail_on_data_loss", "true")).strip().lower()
        if fail not in ("true", "false"):
            raise ConfigError(f"Kafka option fail_on_data_loss must be true or false, "
                              f"got {opts['fail_on_data_loss']!r}")
        return cls(
            bootstrap_servers=servers,
            topics=topics,
            starting_offsets=parse_starting_offsets(opts.get("starting_offsets") or "earliest",
                                                    topics),
            max_offsets_per_trigger=_positive_int(opts, "max_offsets_per_trigger", None),
            fail_on_data_loss=fail == "true",
            min_partitions=_positive_int(opts, "min_partitions", None),
            max_records_per_partition=_positive_int(opts, "max_records_per_partition", None),
            timeout_ms=_positive_int(opts, "timeout_ms", 5000) or 5000,
            read_timeout_ms=_positive_int(opts, "read_timeout_ms", 30000) or 30000,
            start_record=str(opts["start_record"]) if opts.get("start_record") else None,
            client_config=client,
        )

    def client(self, **extra: Any) -> dict[str, Any]:
        """librdkafka configuration: user properties, then the source's fixed ones."""
        config: dict[str, Any] = {
            "socket.connection.setup.timeout.ms": self.timeout_ms,
            "logger": logging.getLogger("runner.kafka.client"),
            **self.client_config,
            "bootstrap.servers": self.bootstrap_servers,
        }
        config.update(extra)
        return config
