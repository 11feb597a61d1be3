"""One micro-batch: parse once, run the plan's models in DAG order, write every sink once.

:func:`run_batch` is a function of (:class:`BatchPlan`, batch DataFrame, batch id) and nothing
else: no Jinja, no file reads, no ambient state. It is idempotent on the batch id because every
sink is (see :mod:`runner.sinks`): a replayed batch skips the sinks that already committed it.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

from ..errors import ExecutionError, RunnerError
from ..failpoints import hit
from ..plan import Plan
from ..sinks import DeltaWriter, SinkSpec, WriteResult
from .parse import parse_batch

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["BatchPlan", "BatchResult", "run_batch"]


@dataclass(frozen=True)
class BatchPlan:
    """Everything a batch needs, fixed at start: the compiled plan and where each sink goes."""

    plan: Plan
    sinks: Mapping[str, SinkSpec]  # model name -> spec
    dead_letter: SinkSpec
    metadata_columns: tuple[str, ...]
    writer: DeltaWriter
    parallelism: int = 4


@dataclass(frozen=True)
class BatchResult:
    """What one batch did: the progress line and the final summary are made from these."""

    batch_id: int
    input_rows: int
    dead_letters: int
    writes: tuple[WriteResult, ...]
    seconds: float

    @property
    def skipped(self) -> tuple[str, ...]:
        return tuple(w.model for w in self.writes if w.skipped)

    @property
    def rows_by_model(self) -> dict[str, int]:
        return {w.model: w.rows for w in self.writes}


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    line = text.splitlines()[0]
    return line if len(line) <= 400 else line[:400] + "..."


_DEAD = "\0dead_letter"  # not a valid model name, so it cannot clash


def _write(writer: DeltaWriter, spec: SinkSpec, df: "DataFrame", batch_id: int) -> WriteResult:
    try:
        return writer.write(spec, df, batch_id)
    except RunnerError:
        raise
    except Exception as e:  # a model's runtime failure surfaces at its write (Spark is lazy)
        raise ExecutionError(f"model {spec.model} failed in batch {batch_id}: {_first_line(e)}",
                             hint=f"fix models/{spec.model}.sql (or its input), then restart: "
                                  "the batch is replayed, committed sinks are skipped") from e


def run_batch(bp: BatchPlan, raw: "DataFrame", batch_id: int) -> BatchResult:
    """Process one micro-batch (``raw``: ``value`` plus source metadata columns).

    Raises:
        ExecutionError: a model or a sink failed; sinks that committed stay committed and are
            skipped when Spark replays the batch.
    """
    started = time.perf_counter()
    hit("batch.start", batch_id=batch_id)  # for crash tests: after batch_id - 1's commit log
    spark = raw.sparkSession  # the batch's own session: its temp views are private to it
    parsed = parse_batch(raw, schema_ddl=bp.plan.schema_ddl, batch_id=batch_id,
                         metadata_columns=bp.metadata_columns)
    parsed.persist()  # one parse: valid rows and dead letters are both filters of this frame
    cached = [parsed.frame]
    try:
        input_rows = parsed.frame.count()  # fills the cache every model then reads
        parsed.valid.createOrReplaceTempView("parsed_events")
        has_children = {d for s in bp.plan.steps for d in s.depends_on}
        frames: dict[str, DataFrame] = {}
        for step in bp.plan.steps:  # dependency order: a ref'd view exists before its reader
            try:
                df = spark.sql(step.sql)
            except Exception as e:  # analysis errors (the plan was linted, but be explicit)
                raise ExecutionError(f"model {step.name} failed in batch {batch_id}: "
                                     f"{_first_line(e)}", path=step.path) from e
            if step.name in has_children:
                df = df.persist()
                cached.append(df)
            df.createOrReplaceTempView(step.name)
            frames[step.name] = df

        with ThreadPoolExecutor(max_workers=bp.parallelism,
                                thread_name_prefix=f"batch{batch_id}") as pool:
            futures = {name: pool.submit(_write, bp.writer, bp.sinks[name], df, batch_id)
                       for name, df in frames.items()}
            futures[_DEAD] = pool.submit(_write, bp.writer, bp.dead_letter, parsed.dead, batch_id)
            results: dict[str, WriteResult] = {}
            errors: list[BaseException] = []
            for name, future in futures.items():
                try:
                    results[name] = future.result()
                except BaseException as e:  # noqa: BLE001 - collected, the first is raised
                    errors.append(e)
        if errors:
            raise errors[0]
        hit("batch.after_sinks", batch_id=batch_id)
    finally:
        for df in cached:
            df.unpersist()
    dead = results.pop(_DEAD)
    return BatchResult(batch_id=batch_id, input_rows=input_rows,
                       dead_letters=dead.rows, writes=tuple(results.values()),
                       seconds=time.perf_counter() - started)

