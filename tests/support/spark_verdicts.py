"""Spark's verdict on each model of the compile corpus (:mod:`tests.support.spark_sql_corpus`),
from a real session built as the runner builds its own
(:func:`runner.runtime.client.session.build_session`, the project's Spark settings), through
the analysis ``runner stream`` makes before its first batch and ``runner compile --analyze``
reports (:func:`runner.runtime.start.analysis.analyse_sql`: Spark's parser, the runner's
guard, Spark's analyser over an empty ``parsed_events``). The golden files' outcomes are only
hints: a verdict is what this session answers.

Usage: ``python -m tests.support.spark_verdicts --record`` writes
``tests/corpus/spark_sql/verdicts.jsonl``; ``--check`` records again and exits 1 when a
verdict changed (the slow test runs it). Needs Java.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tests.support.spark_sql_corpus import (
    ACCEPTED,
    REPO,
    VERDICTS,
    CorpusError,
    CorpusModel,
    load_models,
    load_verdicts,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def spark_verdicts(models: Sequence[CorpusModel], spark: SparkSession
                   ) -> tuple[dict[str, str], float]:
    """Spark's verdict per model (``accepted`` or the error class) and the seconds it took."""
    from runner.project.loader import load_project
    from runner.runtime.start.analysis import Refusal, analyse_sql, analysis_session

    project = load_project(REPO)
    session = analysis_session(spark, schema_ddl=project.schema.ddl,
                               metadata_columns=project.parsed_events_columns)
    started = time.perf_counter()
    out = {}
    for m in models:
        analysed = analyse_sql(session, m.sql)
        out[m.name] = analysed.error_class if isinstance(analysed, Refusal) else ACCEPTED
    return out, time.perf_counter() - started


def project_session() -> SparkSession:
    """A session with the repository project's Spark settings, as the runner builds it."""
    from runner.project.loader import load_project
    from runner.runtime.client.session import build_session

    conf = load_project(REPO).config.spark
    return build_session(master=conf.master, conf=dict(conf.conf),
                         app_name="runner-corpus-verdicts")


def verdict_rows(models: Sequence[CorpusModel], verdicts: dict[str, str]) -> list[str]:
    """The lines of verdicts.jsonl: name, origin, sha and verdict of each model."""
    return [json.dumps({"name": m.name, "origin": dict(m.origin), "sha": m.sha,
                        "verdict": verdicts[m.name]}, sort_keys=True) for m in models]


def changed_verdicts(models: Sequence[CorpusModel], verdicts: dict[str, str]) -> list[str]:
    """Each model whose verdict (or text) differs from the recorded one, as a line."""
    recorded = load_verdicts()
    lines = []
    for m in models:
        old = recorded.get(m.name)
        if old is None or old["sha"] != m.sha:
            lines.append(f"{m.name}: not recorded for this text")
        elif old["verdict"] != verdicts[m.name]:
            lines.append(f"{m.name}: recorded {old['verdict']}, Spark now says "
                         f"{verdicts[m.name]}")
    return lines


def main(argv: list[str]) -> int:
    if argv not in (["--record"], ["--check"]):
        print("usage: python -m tests.support.spark_verdicts --record | --check",
              file=sys.stderr)
        return 2
    try:
        models = load_models()
    except CorpusError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    spark = project_session()
    try:
        verdicts, seconds = spark_verdicts(models, spark)
    finally:
        spark.stop()
    refused = [v for v in verdicts.values() if v != ACCEPTED]
    print(f"{len(models)} models, {len(refused)} refused by Spark "
          f"({len(set(refused))} error classes), {1000 * seconds / len(models):.1f} ms a model")
    if argv == ["--check"]:
        changed = changed_verdicts(models, verdicts)
        for line in changed[:50]:
            print(line)
        return 1 if changed else 0
    VERDICTS.parent.mkdir(parents=True, exist_ok=True)
    VERDICTS.write_text("\n".join(verdict_rows(models, verdicts)) + "\n", encoding="utf-8")
    print(f"wrote {VERDICTS.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
