"""Expectations: named SQL predicates every row of a model must satisfy, applied in the stream.

A model declares them in its config::

    {{ config(expectations=[
        {'name': 'known_status', 'expr': 'status_code BETWEEN 100 AND 599',
         'on_violation': 'quarantine'},
        {'name': 'has_endpoint', 'expr': 'endpoint IS NOT NULL', 'on_violation': 'drop'},
        {'name': 'has_id', 'expr': "eventId <> ''"},                      # fail (default)
    ]) }}

A row satisfies an expectation when the predicate is TRUE; FALSE and NULL are violations
(``status_code BETWEEN 100 AND 599`` is violated by a row whose status_code is null). For each
violated expectation, by its ``on_violation``:

- ``drop``: the row is not written (and is invisible to models that ``ref`` this one);
- ``quarantine``: the row goes to the dead-letter table instead (``raw`` = the row as JSON,
  ``reason`` naming the model and every quarantine expectation it broke), not to the model;
- ``fail``: the batch fails, naming the model and expectation and showing a violating row.
  Nothing is dropped silently, so this is the default.

:func:`apply_expectations` is a pure, lazy function of (model DataFrame, step, batch id): it
adds no Spark action. Violations are counted per expectation with ``DataFrame.observe`` while
the model's rows are written (no extra pass); a ``fail`` violation raises inside that same
job (``raise_error``), and :func:`expectation_failure` turns Spark's error back into the
runner's own :class:`~runner.errors.ExecutionError`.
"""

from __future__ import annotations

import operator
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import reduce
from typing import TYPE_CHECKING

from runner.compile.plan import Step
from runner.errors import ExecutionError
from runner.project.config import Expectation
from runner.runtime.batches.observation import ready_metrics
from runner.runtime.batches.parse import batch_id_column
from runner.sinks.base import quote_column
from runner.spark_errors import first_line, marked_text_in

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, Observation

__all__ = ["ExpectationOutcome", "apply_expectations", "expectation_failure",
           "quarantine_reason"]

_FLAG = "__runner_expectation_{}"
_MARK = "runner expectation failed ::"
_END = ":: end"
#: The observed count of quarantined rows (a name no expectation can have: it has a space).
_QUARANTINED = "runner quarantined"


def quarantine_reason(model: str, expectation: Expectation) -> str:
    """The dead-letter ``reason`` of a row that broke one quarantine expectation."""
    return f"expectation {model}.{expectation.name} failed: {expectation.expr}"


@dataclass(frozen=True)
class ExpectationOutcome:
    """One model's rows after its expectations (all lazy).

    Attributes:
        model: the model's name.
        kept: the rows to write and to show to downstream models: violators of ``drop`` and
            ``quarantine`` expectations removed. Any action over it fails on the first row that
            violates a ``fail`` expectation (see :func:`expectation_failure`).
        quarantined: dead-letter rows (``raw``, ``reason``, ``_batch_id``, then the source's
            metadata columns: taken from the model's output when it has them, else null), or
            None when the model has no quarantine expectation. Union it into the dead-letter
            write.
        expectations: the model's expectations, in declaration order.
        observation: counts violations per expectation (by name) as ``kept`` or
            ``quarantined`` is computed; None when the model has no expectations.
    """

    model: str
    kept: DataFrame
    quarantined: DataFrame | None
    expectations: tuple[Expectation, ...] = ()
    observation: Observation | None = field(default=None, compare=False)

    def counts(self, *, wait: bool = False) -> dict[str, int] | None:
        """Violations per expectation name, once an action over ``kept`` or ``quarantined``
        has run; None (never blocking) before that, e.g. when the model's sink was skipped on
        a replay. ``wait=True`` blocks until the counts are there. ``{}`` without
        expectations."""
        if self.observation is None:
            return {}
        metrics = self.observation.get if wait else ready_metrics(self.observation)
        if metrics is None:
            return None
        return {e.name: int(metrics.get(e.name) or 0) for e in self.expectations}

    def quarantined_rows(self) -> int | None:
        """Rows sent to the dead-letter table (a row that breaks two quarantine expectations
        is one), once an action over ``kept`` or ``quarantined`` has run; None before that
        (never blocking); 0 without a quarantine expectation."""
        if self.observation is None or self.quarantined is None:
            return 0
        metrics = ready_metrics(self.observation)
        return None if metrics is None else int(metrics.get(_QUARANTINED) or 0)


def apply_expectations(df: DataFrame, step: Step, *, batch_id: int,
                       metadata_columns: Mapping[str, str]) -> ExpectationOutcome:
    """Apply ``step.config.expectations`` to the model's DataFrame ``df`` (lazily).

    Args:
        df: the model's rows in this batch (``spark.sql(step.sql)``).
        step: the model's plan step (name, path, config).
        batch_id: the micro-batch id (``_batch_id`` of quarantined rows).
        metadata_columns: the source's metadata columns, name -> Spark type, in the
            dead-letter table's order (``runner.project.event_schema.source_metadata_columns``).

    Returns:
        The :class:`ExpectationOutcome`; with no expectations, ``kept`` is ``df`` itself.

    Raises:
        ExecutionError: an expectation does not parse or names no output column (compile's
            ``expectation`` lint rule reports these first).
    """
    expectations = tuple(step.config.expectations)
    if not expectations:
        return ExpectationOutcome(step.name, df, None)
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    checked = _with_flags(df, step, expectations)
    observation = Observation(f"runner_expectations_{step.name}_{batch_id}_{uuid.uuid4().hex}")
    quarantines = [_flag(i) for i, e in enumerate(expectations) if e.on_violation == "quarantine"]
    rows = ([F.count_if(reduce(operator.or_, quarantines)).alias(_QUARANTINED)]
            if quarantines else [])
    observed = checked.observe(
        observation, *[F.count_if(_flag(i)).alias(e.name) for i, e in enumerate(expectations)],
        *rows)
    flagged = _Flagged(observed, list(df.columns), step, expectations, batch_id)
    return ExpectationOutcome(step.name, flagged.kept(), flagged.quarantined(metadata_columns),
                              expectations, observation)


def _flag(i: int) -> Column:
    """The column that is true where a row violates expectation ``i``."""
    from pyspark.sql import functions as F

    return F.col(_FLAG.format(i))


def _with_flags(df: DataFrame, step: Step, expectations: tuple[Expectation, ...]) -> DataFrame:
    """``df`` with one flag column per expectation (:func:`_flag`): TRUE where the predicate
    is FALSE or NULL.

    Raises:
        ExecutionError: naming the first expectation that does not analyse on its own.
    """
    from pyspark.sql import functions as F

    flags: list[Column] = []
    for i, e in enumerate(expectations):
        try:
            predicate = F.expr(e.expr)
        except Exception as error:
            raise _bad(step, e, error) from error
        flags.append((~F.coalesce(predicate, F.lit(False))).alias(_FLAG.format(i)))
    try:
        return df.select(*[F.col(quote_column(c)) for c in df.columns], *flags)
    except Exception as error:
        for e, flag_column in zip(expectations, flags):  # which one: analyse each alone
            try:
                df.select(flag_column)
            except Exception as own:
                raise _bad(step, e, own) from own
        raise _bad(step, expectations[0], error) from error


@dataclass(frozen=True)
class _Flagged:
    """A model's rows with their expectation flags (observed), and what is cut from them."""

    observed: DataFrame
    columns: list[str]  # the model's own columns
    step: Step
    expectations: tuple[Expectation, ...]
    batch_id: int

    def _row_json(self) -> Column:
        from pyspark.sql import functions as F

        return F.to_json(F.struct(*[F.col(quote_column(c)) for c in self.columns]),
                         {"ignoreNullFields": "false"})  # a null shows as null, not absent

    def kept(self) -> DataFrame:
        """The rows that break no ``drop`` or ``quarantine`` expectation; an action over them
        fails on the first row that breaks a ``fail`` one."""
        from pyspark.sql import functions as F

        fails = [i for i, e in enumerate(self.expectations) if e.on_violation == "fail"]
        removes = [i for i, e in enumerate(self.expectations) if e.on_violation != "fail"]
        keep: Column = F.lit(True)
        for i in removes:
            keep = keep & ~_flag(i)
        # One CASE (not separate conjuncts the optimizer could reorder): a row that violates a
        # fail expectation fails the job even if a drop expectation would have removed it.
        guard: Column = keep
        for i in reversed(fails):
            e = self.expectations[i]
            message = F.concat(F.lit(f"{_MARK} model {self.step.name}: expectation '{e.name}' "
                                     f"({e.expr}) failed in batch {self.batch_id}; a violating "
                                     "row: "),
                               self._row_json(), F.lit(f" {_END}"))
            guard = F.when(_flag(i), F.raise_error(message)).otherwise(guard)
        return self.observed.filter(guard).select(*[F.col(quote_column(c))
                                                    for c in self.columns])

    def quarantined(self, metadata_columns: Mapping[str, str]) -> DataFrame | None:
        """The dead-letter rows of the ``quarantine`` expectations (None: the model has
        none): the row as JSON, every broken expectation named, the source's metadata."""
        from pyspark.sql import functions as F

        quarantines = [i for i, e in enumerate(self.expectations)
                       if e.on_violation == "quarantine"]
        if not quarantines:
            return None
        name = self.step.name
        reason = F.concat_ws("; ", *[F.when(_flag(i), F.lit(quarantine_reason(
            name, self.expectations[i]))) for i in quarantines])
        any_flag = _flag(quarantines[0])
        for i in quarantines[1:]:
            any_flag = any_flag | _flag(i)
        by_lower = {c.lower(): c for c in self.columns}
        meta = [(F.col(quote_column(by_lower[column.lower()])).cast(dtype)
                 if column.lower() in by_lower else F.lit(None).cast(dtype)).alias(column)
                for column, dtype in metadata_columns.items()]
        row_json = self._row_json()
        return self.observed.filter(any_flag).select(
            row_json.alias("raw"), reason.alias("reason"),
            batch_id_column(self.batch_id, row_json), *meta)


def _bad(step: Step, expectation: Expectation, error: BaseException) -> ExecutionError:
    return ExecutionError(
        f"model {step.name}: expectation '{expectation.name}' ({expectation.expr}) is not a "
        f"valid predicate over the model's output columns: {first_line(error)}",
        path=step.path, hint="`runner compile` checks expectations (rule 'expectation')")


def expectation_failure(error: BaseException) -> ExecutionError | None:
    """The runner's error for a ``fail`` expectation that Spark raised in a job, else None.

    >>> expectation_failure(RuntimeError("x")) is None
    True
    """
    text = marked_text_in(error, _MARK, _END)
    if text is None:
        return None
    message, _, row = text.partition("; a violating row: ")
    return ExecutionError(message, hint=(f"a violating row: {row}; fix the model or its input, "
                                         "or set on_violation to 'drop' or 'quarantine'")
                          if row else None)


