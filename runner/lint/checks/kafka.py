"""The columns of a ``materialized='kafka'`` model: what each record is made of.

A Kafka model's row becomes one record (docs/KAFKA.md "Kafka outputs"): ``key`` (STRING or
BINARY, optional), ``value`` (STRING or BINARY; without one, the row's other columns as JSON,
``to_json(struct(...))``), ``headers`` (``ARRAY<STRUCT<key: STRING, value: STRING|BINARY>>``,
optional), ``partition`` (an integer, optional) and ``topic`` (STRING: routes each row, in
place of the config's ``topic``; exactly one of the two). The same names and types as Spark's
own Kafka sink, so a model moves between the two unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlglot import exp

from runner.errors import Violation
from runner.lint.checks.rules import ModelRule
from runner.lint.reading.context import ModelContext
from runner.lint.spark_types.infer import element_type, is_, is_known, struct_fields, type_string

__all__ = ["RECORD_COLUMNS", "KafkaColumns"]

T = exp.DType
_BYTES = (T.VARCHAR, T.TEXT, T.CHAR, T.NVARCHAR, T.NCHAR, T.BINARY, T.VARBINARY)
_STRING = (T.VARCHAR, T.TEXT, T.CHAR, T.NVARCHAR, T.NCHAR)
_INTEGER = (T.TINYINT, T.SMALLINT, T.INT, T.BIGINT)

#: The columns a record is made of (the rest, without ``value``, become the value's JSON).
RECORD_COLUMNS = ("key", "value", "headers", "partition", "topic")


class KafkaColumns(ModelRule):
    """A materialized='kafka' model's record columns have Kafka's types (key and value STRING
    or BINARY, headers ARRAY<STRUCT<key STRING, value BINARY>>, partition INT, topic STRING),
    and the topic comes from exactly one of config(topic=...) or a topic column."""

    id = "kafka-columns"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        config = ctx.model.config
        if config.materialized != "kafka" or ctx.analysis is None:
            return
        outputs = {o.name.lower(): o for o in ctx.analysis.outputs}
        known = not ctx.analysis.shape.open
        has_topic = "topic" in outputs
        if config.topic is not None and has_topic:
            yield self.at(ctx, outputs["topic"].node, "both config(topic=...) and a topic column "
                          "name the topic", "keep one: the config for one topic, the column "
                          "to route each row")
        elif config.topic is None and known and not has_topic:
            yield self.at_config(ctx, "a materialized='kafka' model needs a topic: "
                                 "config(topic='<name>') or a topic column",
                                 "e.g. config(materialized='kafka', topic='orders-enriched')")
        for name, allowed, what in (("key", _BYTES, "STRING or BINARY"),
                                    ("value", _BYTES, "STRING or BINARY"),
                                    ("partition", _INTEGER, "an integer (INT)"),
                                    ("topic", _STRING, "STRING")):
            out = outputs.get(name)
            if out is not None and is_known(out.type) and not is_(out.type, *allowed):
                yield self.at(ctx, out.node, f"Kafka record column `{out.name}` is "
                              f"{type_string(out.type)}; it must be {what}",
                              f"CAST({out.name} AS STRING)" if allowed is not _INTEGER
                              else f"CAST({out.name} AS INT)")
        headers = outputs.get("headers")
        if headers is not None and is_known(headers.type) and not _headers_type(headers.type):
            yield self.at(ctx, headers.node, f"Kafka record column `headers` is "
                          f"{type_string(headers.type)}; it must be ARRAY<STRUCT<key: STRING, "
                          "value: STRING or BINARY>>",
                          "array(named_struct('key', 'source', 'value', CAST(x AS BINARY)))")
        if known and "value" not in outputs and not set(outputs) - set(RECORD_COLUMNS):
            yield self.at_config(ctx, "a materialized='kafka' model without a value column "
                                 "needs other columns: they become the value's JSON",
                                 "select a value column, or the columns to send")


def _headers_type(dtype: exp.DataType) -> bool:
    if not is_(dtype, T.ARRAY):
        return False
    element = element_type(dtype)
    if element is None or not is_known(element):
        return True  # an array of unknown elements: not flagged
    fields = {name.lower(): t for name, t in struct_fields(element)}
    return (set(fields) == {"key", "value"} and is_(fields["key"], *_STRING)
            and is_(fields["value"], *_BYTES))
