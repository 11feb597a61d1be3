"""The checkpoint's Kafka models as the start-up sees them: a Kafka model has no table, so
whether it holds batches is its topic's (:func:`runner.runtime.start.backfill.prepare_handover`
asks this instead of looking for a table)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

from runner.checkpoint.ledger import Ledger, TopicCut
from runner.sinks.base import app_id
from runner.sinks.tables import is_table

if TYPE_CHECKING:
    from runner.project.loader import Project
    from runner.runtime.batches.batch import BatchPlan

__all__ = ["holds_batches", "kafka_models"]


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
