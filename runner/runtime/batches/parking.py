"""Parking a failing model: what counts as the model's own failure, and what is parked with it.

With ``on_model_error: park`` (the default; project.yml, or per model in ``config()``), a model
whose own SQL fails at run time does not fail the batch: the batch completes for every other
model, and the model and its descendants in the plan are *parked* from that batch on (their
tables stay at their last good batch). The stream records them in the checkpoint's model
registry (:mod:`runner.checkpoint.registry`) before Spark's commit-log entry, skips them in
later batches, and the next start-up catches them up from the retained history like a backfill
(:mod:`runner.runtime.start.backfill`).

A model's own failure is an error raised while Spark analyses (``spark.sql``) or computes its
rows (Spark is lazy: at its write), except:

- a storage failure (:func:`runner.spark_errors.is_storage_failure`): a :class:`SinkError`;
- any other error of a sink (a Delta commit, a conflict): a :class:`SinkError`;
- a ``fail`` expectation: the user asked for the batch to fail (it halts);
- a failure of the source or of the parse (raised before any model runs).

A merge model's duplicate keys are its own failure too (:class:`DuplicateKeyError`).
A descendant is parked with its ancestor whatever its own policy (it reads the ancestor).

Spark's error points into the SQL it ran, the compiled SQL (the model's checked query is that
text, less trailing ``;``: same offsets); :func:`source_position` maps it back to the model's
file through the plan step's source map, as compile's messages do (the macro named when the
position is in a macro's expansion).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from runner.checkpoint.registry import Entry, load_registry, save_registry
from runner.compile.graph import descendants
from runner.compile.plan import Plan, Step
from runner.errors import DuplicateKeyError, ExecutionError
from runner.events import ModelParked, Reporter
from runner.spark_errors import (
    bare_message,
    chain,
    connect_causes,
    first_line,
    java_causes,
    sql_position,
)
from runner.storage.ops import Location

__all__ = ["ModelFailure", "ParkedError", "Parking", "error_class", "from_spark", "model_failure",
           "park_policy", "parked_event", "parked_with", "record_parked", "source_position"]


class ModelFailure(ExecutionError):
    """A model's own SQL failed at run time (raised by the batch's write of that model);
    ``at``: where in the model's file (:func:`source_position`), when Spark says."""

    def __init__(self, message: str, *, model: str, error_class: str | None, line: str,
                 path: str | None = None, hint: str | None = None,
                 at: tuple[int, int, str] | None = None) -> None:
        super().__init__(message + (at[2] if at else ""), path=path, hint=hint,
                         line=at[0] if at else None, column=at[1] if at else None)
        self.model = model
        self.error_class = error_class
        self.first = line
        self.at = None if at is None or path is None else _where(path, at)

    def parked(self, batch_id: int) -> ParkedError:
        """The model parked from ``batch_id`` by this failure."""
        return ParkedError(self.model, batch_id, self.error_class, self.first, self.path,
                           at=self.at)


@dataclass(frozen=True)
class ParkedError:
    """Why a model is parked, from which batch (``ancestor``: parked because that one failed)."""

    model: str
    batch_id: int
    error_class: str | None
    message: str  # the first line of Spark's message
    path: str | None = None  # the model's SQL file
    ancestor: str | None = None
    #: where in the model's file Spark's error points: ``models/m.sql:10:8`` (and the macro)
    at: str | None = None

    @property
    def text(self) -> str:
        """One line: the error class, message and place in the model's file, or which
        ancestor failed."""
        if self.ancestor is not None:
            return f"its ancestor {self.ancestor} failed"
        text = f"[{self.error_class}] {self.message}" if self.error_class else self.message
        return f"{text} (at {self.at})" if self.at else text


def error_class(error: BaseException) -> str | None:
    """Spark's error class (condition) of ``error``: the innermost Java cause's that has one
    (the specific error: a write task wraps a model's ``DIVIDE_BY_ZERO`` in
    ``TASK_WRITE_FAILED``), over Spark Connect the innermost server cause's that names one,
    else a pyspark exception's ``getCondition()``
    (``getErrorClass()`` before Spark 4), else None."""
    for e in chain(error):
        if isinstance(e, DuplicateKeyError):
            return "DUPLICATE_MERGE_KEY"
    for source in reversed(java_causes(error)):
        if condition := _condition(source):
            return condition
    for text in reversed(connect_causes(error)):  # over Spark Connect: the server's causes
        if match := _BRACKETED.match(text):
            return match.group(1)
    for source in chain(error):
        if condition := _condition(source):
            return condition
    return None


#: A Spark error message's leading condition: ``[DIVIDE_BY_ZERO] Division by zero...``.
_BRACKETED = re.compile(r"\[([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\]")


def _condition(source: Any) -> str | None:
    """``source.getCondition()`` (``getErrorClass()`` before Spark 4), for a Java throwable or
    a pyspark exception; None when it has neither or they answer nothing."""
    from py4j.protocol import Py4JError

    for name in ("getCondition", "getErrorClass"):
        try:
            value = getattr(source, name)()
        except (Py4JError, AttributeError, TypeError):
            continue
        if value:
            return str(value)
    return None


def model_failure(model: str, error: BaseException, cause: str, *, batch_id: int,
                  path: str | None, step: Step | None = None) -> ExecutionError:
    """The error for ``error`` raised while computing ``model``'s rows: a
    :class:`ModelFailure` when Spark raised it (a job or an analysis failed), else (a failpoint,
    a bug of the runner) a plain :class:`ExecutionError`, never parked. With the model's
    ``step``, it names the place in the model's file Spark's error points at, as compile does
    (``path:line:col: message`` and the macro)."""
    message = f"model {model} failed in batch {batch_id}: {cause}"
    hint = (f"fix {path or f'models/{model}.sql'} (or its input), then restart: the batch is "
            "replayed, committed sinks are skipped")
    if not from_spark(error):
        return ExecutionError(message, path=path, hint=hint)
    cls = error_class(error)
    at = source_position(step, error) if step is not None else None
    return ModelFailure(message, model=model, error_class=cls, at=at, path=path, hint=hint,
                        line=bare_message(first_line(cause), cls, position=at is None))


def source_position(step: Step, error: BaseException) -> tuple[int, int, str] | None:
    """The model file's ``(line, column, note)`` of the SQL that Spark's ``error`` points at
    (:func:`runner.spark_errors.sql_position`), or None when it points at none in the step's
    own SQL (a ref'd model's query failing in this one's job, a view's text).

    ``note`` is empty, or compile's note naming the macro whose expansion holds the position
    (:meth:`runner.compile.sourcemap.SourceMap.locate`). Without a source map, the compiled
    SQL's position.
    """
    found = sql_position(error)
    if found is None:
        return None
    start, stop, fragment = found
    if step.sql[start:stop + 1] != fragment:  # not this model's text
        return None
    line = step.sql.count("\n", 0, start) + 1
    column = start - step.sql.rfind("\n", 0, start)
    if step.source_map is None:
        return line, column, ""
    word = re.search(r"\w+", fragment)  # a word of it to find the line in a macro's body
    found_line, found_column, note = step.source_map.locate(
        line, column, word.group(0) if word else None)
    return (found_line or line, found_column or column, note)


def _where(path: str, at: tuple[int, int, str]) -> str:
    """``models/m.sql:10:8``, then compile's macro note without its parentheses.

    >>> _where("models/m.sql", (5, 8, " (in macro r, macros/r.sql:2, called at line 5)"))
    'models/m.sql:5:8, in macro r, macros/r.sql:2, called at line 5'
    """
    line, column, note = at
    macro = note.strip().removeprefix("(").removesuffix(")")
    return f"{path}:{line}:{column}" + (f", {macro}" if macro else "")


def from_spark(error: BaseException) -> bool:
    """Whether Spark raised ``error`` (a pyspark exception, or a Java one through py4j)."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    return any(isinstance(e, (PySparkException, Py4JJavaError)) for e in chain(error))


def park_policy(plan: Plan, default: str) -> frozenset[str]:
    """The models whose effective ``on_model_error`` is ``park`` (theirs, else ``default``)."""
    return frozenset(s.name for s in plan.steps
                     if (s.config.on_model_error or default) == "park")


def parked_with(plan: Plan, failed: Mapping[str, ParkedError],
                skip: Collection[str] = ()) -> dict[str, ParkedError]:
    """``failed`` (the models that failed on their own), and every descendant of one not
    already in ``skip``, each named with the failed ancestor (the first in plan order)."""
    edges = {s.name: s.depends_on for s in plan.steps}
    out: dict[str, ParkedError] = {}
    for step in plan.steps:  # dependency order: an ancestor before its descendants
        if step.name in failed:
            own = failed[step.name]
            anc = next((a for a in out if step.name in descendants(a, edges)), None)
            out[step.name] = own if anc is None else ParkedError(
                step.name, own.batch_id, own.error_class, own.message, step.path,
                ancestor=out[anc].ancestor or anc)
    for name in list(out):
        if out[name].ancestor is not None:
            continue
        for d in _ordered(plan, descendants(name, edges)):
            if d not in out and d not in skip:
                own = out[name]
                out[d] = ParkedError(d, own.batch_id, own.error_class, own.message,
                                     plan.step(d).path, ancestor=name)
    return out


def _ordered(plan: Plan, names: Iterable[str]) -> list[str]:
    wanted = set(names)
    return [s.name for s in plan.steps if s.name in wanted]


def record_parked(checkpoint: Location, parked: Mapping[str, ParkedError]) -> None:
    """Mark the models parked in the checkpoint's registry (saved at once). A model already
    parked from an earlier batch keeps it (a replayed batch parks it again: same result)."""
    if not parked:
        return
    entries = load_registry(checkpoint) or {}
    for name, p in parked.items():
        old = entries.get(name)
        if old is not None and old.state == "parked" and old.left_at <= p.batch_id:
            continue
        entries[name] = Entry("parked", left_at=p.batch_id, error=p.text)
    save_registry(checkpoint, entries)


def parked_event(p: ParkedError) -> ModelParked:
    """What the stream reports for a parked model."""
    return ModelParked(p.model, p.batch_id, p.error_class, p.text, p.path)


class Parking:
    """The run's parked models, one object for the start-up, the backfill and the query.

    ``still``: the models parked now (from the registry, and by this run), which a batch skips
    with their descendants; :attr:`this_run`: those this run parked, with their errors (the
    summary's). :meth:`record` writes a batch's parked models to the registry before Spark's
    commit-log entry (a replay parks them again); :meth:`add` takes one in and reports it.
    """

    def __init__(self, checkpoint: Location, report: Reporter) -> None:
        self.checkpoint, self.report = checkpoint, report
        self.still: set[str] = set()
        self.this_run: dict[str, ParkedError] = {}

    def before_batch(self) -> frozenset[str]:
        """The models a batch must not run (their descendants follow them)."""
        return frozenset(self.still)

    def record(self, parked: Mapping[str, ParkedError]) -> None:
        record_parked(self.checkpoint, parked)

    def add(self, p: ParkedError) -> None:
        self.still.add(p.model)
        self.this_run[p.model] = p
        self.report(parked_event(p))
