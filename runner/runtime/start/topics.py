"""The checkpoint's Kafka models as the start-up sees them: a Kafka model has no table, so
whether it holds batches is its topic's (:func:`runner.runtime.start.backfill.prepare_handover`
asks this instead of looking for a table)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

from runner.checkpoint.ledger import Ledger, TopicCut
from runner.checkpoint.registry import Entry
from runner.sinks.base import app_id
from runner.sinks.tables import is_table

if TYPE_CHECKING:
    from runner.project.loader import Project
    from runner.runtime.batches.batch import BatchPlan
    from runner.sinks import SinkSpec

__all__ = ["holds_batches", "kafka_models", "refuse_history_again"]


def kafka_models(project: Project, bp: BatchPlan, away: Collection[str],
                  query_id: str) -> dict[str, TopicCut]:
    """The checkpoint's Kafka models, which have no table: those of this run, those the last
    ledger entry names (with the batch their marker held then), and models of the registry not
    in this run that have no table but a batch marker in Kafka (a model retired or left out
    for a while: the ledger keeps only the models with a SQL file)."""
    latest = Ledger(project.checkpoint).latest()
    found = dict(latest.kafka) if latest is not None else {}
    for m, spec in bp.sinks.items():
        if spec.materialized == "kafka":
            found[m] = TopicCut(spec.topic, found[m].batch if m in found else None)
    outputs = project.config.kafka_outputs
    ask = {m: app_id(bp.plan.project, m, query_id) for m in sorted(away)
           if m not in found and not is_table(project.table_path(m))}
    if ask and outputs is not None and outputs.bootstrap_servers:
        from runner.sinks.kafka_markers import read_markers

        markers, _problem = read_markers(outputs, ask)  # unanswered: no table, no topic
        found.update({m: TopicCut(None, b) for m, b in markers.items() if b is not None})
    return found


def holds_batches(project: Project, kafka: Mapping[str, TopicCut], model: str) -> bool:
    """Whether ``model`` holds batches: a Kafka model's topic (``kafka``: :func:`kafka_models`),
    else its table."""
    if model in kafka:
        return kafka[model].batch is not None
    return is_table(project.table_path(model))


def refuse_history_again(project: Project, bp: BatchPlan, joining: Collection[str],
                         query_id: str, *, before: Mapping[str, Entry] | None,
                         after: Mapping[str, Entry]) -> None:
    """Refuse, before anything is written, to backfill a Kafka model new to this checkpoint
    (of ``joining``: absent or retired in the registry ``before``, backfilling ``after``) into
    a topic that holds records and whose model this pipeline ran under an
    earlier checkpoint (a batch marker of another query id): re-enabled after a
    ``--full-refresh`` without ``backfill=false``, it would produce its history again into
    the topic that holds it (docs/KAFKA.md "Rebuilds").

    Raises:
        ConfigError: names the model, its topic and the ways out (exit 2); also when the
            brokers cannot be asked (nothing is produced unchecked).
    """
    outputs = project.config.kafka_outputs
    new = [m for m in sorted(joining) if after[m].state == "backfilling"
           and (before or {}).get(m, Entry("absent")).state in ("absent", "retired")]
    specs: list[SinkSpec] = [bp.sinks[m] for m in new
                             if m in bp.sinks and bp.sinks[m].materialized == "kafka"]
    if not specs or outputs is None:
        return
    from confluent_kafka import KafkaException

    from runner.errors import ConfigError
    from runner.sinks.kafka_markers import earlier_history, reason_of

    for spec in specs:
        where = f"topic {spec.topic}" if spec.topic else "the topics its rows name"
        m, topic = spec.model, spec.topic
        try:
            earlier = earlier_history(outputs, prefix=f"{bp.plan.project}.{m}.",
                                      current=app_id(bp.plan.project, m, query_id),
                                      topic=topic)
        except KafkaException as e:
            raise ConfigError(
                f"Kafka model {m} is new to this checkpoint and would be backfilled into {where}, "
                f"but Kafka could not say whether an earlier checkpoint of this "
                f"pipeline produced it there ({reason_of(e)})",
                hint="start again once the output brokers answer, or set backfill=false on "
                     "the model to continue from the next batch") from None
        if earlier:
            raise ConfigError(
                f"Kafka model {m} is new to this checkpoint and would be backfilled from the "
                f"retained history into {where}, which holds records and whose model "
                f"this pipeline produced under an earlier checkpoint ({earlier[-1]}): its "
                "read_committed consumers would get its history twice",
                hint=f"set backfill=false on {m} to continue from the next batch, or add the "
                     "model under a new name writing to a new topic to produce its history "
                     "again (docs/KAFKA.md \"Rebuilds\")")
