"""Spark's parser and analyser over a plan's models, no data read: what ``runner stream`` does
before its first batch (:func:`runner.runtime.start.evolution.model_output_schemas`) and what
``runner compile --analyze`` reports, by one code path.

Each model is parsed by Spark's own parser and checked by the runner's guard
(:func:`runner.runtime.batches.sql_guard.checked_query`, as every batch does), then analysed by
``spark.sql`` over an empty ``parsed_events`` of the event schema (plus its metadata columns)
and empty views of the sources and seeds it reads, with their declared columns; its result
becomes a temp view for the models that ref it. A model either has its exact output schema or
a :class:`Refusal`: Spark's error class (``RUNNER_SQL_GUARD`` for the runner's guard) and
message, at the model file's line where Spark names a position.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from runner.compile.plan import Plan, Step
from runner.errors import ConfigError, Violation
from runner.project.loader import Project
from runner.runtime.batches.parking import error_class, source_position
from runner.runtime.batches.sql_guard import checked_query
from runner.runtime.client.remote import new_session
from runner.sinks.base import quote_column
from runner.spark_errors import bare_message, chain, first_line

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

__all__ = ["GUARD_CLASS", "REF_CLASS", "Refusal", "analyse_plan", "analyse_sql",
           "analyse_project", "analysis_session", "refusal_of", "refusal_violation"]

#: The class of a refusal by the runner's guard (not one query, a script, a function outside
#: compile's allowlist): Spark never saw the query.
GUARD_CLASS = "RUNNER_SQL_GUARD"
#: The class of a model that refs a model Spark refused.
REF_CLASS = "RUNNER_REF_REFUSED"


@dataclass(frozen=True)
class Refusal:
    """Why Spark (or the runner's guard) refused a model.

    Attributes:
        error_class: Spark's error class (condition), or :data:`GUARD_CLASS` /
            :data:`REF_CLASS`.
        message: the message, without the class and SQLSTATE (Spark's position kept when
            ``at`` is None).
        reason: the error's first line, as Spark wrote it.
        at: the model file's ``(line, column, macro note)`` Spark's error points at, or None.
    """

    error_class: str
    message: str
    reason: str
    at: tuple[int, int, str] | None = None


def analysis_session(spark: SparkSession, *, schema_ddl: str,
                     metadata_columns: Mapping[str, str],
                     lookups: Mapping[str, str] = {}) -> SparkSession:
    """A new session of ``spark`` (no temp view leaks) with an empty ``parsed_events`` of
    ``schema_ddl`` plus ``metadata_columns`` (name -> Spark type), and an empty view per
    lookup (view name -> its columns' DDL)."""
    from runner.runtime.batches.parse import parse_schema

    session = new_session(spark)
    ddl = schema_ddl + "".join(f", {quote_column(name)} {dtype}"
                               for name, dtype in metadata_columns.items())
    session.createDataFrame([], parse_schema(ddl)).createOrReplaceTempView("parsed_events")
    for view, lk_ddl in lookups.items():
        session.createDataFrame([], parse_schema(lk_ddl)).createOrReplaceTempView(view)
    return session


def _analyse(session: SparkSession, sql: str, view: str | None) -> StructType:
    """The one path: Spark's parser and the runner's guard, then Spark's analyser."""
    df = session.sql(checked_query(session, sql))
    if view is not None:
        df.createOrReplaceTempView(view)
    return df.schema


def analyse_sql(session: SparkSession, sql: str, *, view: str | None = None
                ) -> StructType | Refusal:
    """``sql``'s output schema, or why Spark (or the guard) refused it (``at`` None). With
    ``view``, the analysed query becomes that temp view."""
    try:
        return _analyse(session, sql, view)
    except Exception as e:  # noqa: BLE001 - Spark's errors and the guard's, all reported
        return refusal_of(e)


def refusal_of(error: BaseException, step: Step | None = None) -> Refusal:
    """The :class:`Refusal` of an error the analysis raised; with the model's ``step``, placed
    at the model file's line Spark's error points at."""
    cls = error_class(error)
    at = source_position(step, error) if step is not None else None
    text = first_line(_spark_message(error))
    return Refusal(cls or GUARD_CLASS, bare_message(text, cls, position=at is None),
                   first_line(error), at)


def _spark_message(error: BaseException) -> str:
    """Spark's own message in ``error``'s chain (the guard wraps its parser's error), else
    ``error``'s."""
    from py4j.protocol import Py4JError, Py4JJavaError
    from pyspark.errors import PySparkException

    for e in chain(error):
        if isinstance(e, PySparkException):
            return str(e)
        if isinstance(e, Py4JJavaError):
            try:
                return str(e.java_exception.getMessage())
            except Py4JError:
                break
    return str(error)


def analyse_plan(spark: SparkSession, plan: Plan, metadata_columns: Mapping[str, str]
                 ) -> dict[str, StructType | Refusal]:
    """Each model of ``plan`` analysed in plan order (see the module's docstring); a model
    that refs one that does not analyse does not either.

    Args:
        spark: the running session.
        plan: the compiled plan (event schema, models in dependency order, lookups).
        metadata_columns: the columns ``parsed_events`` has beyond the event schema, name ->
            Spark type (``_batch_id`` and the source's: ``Project.parsed_events_columns``).
    """
    lookups = {}
    for lk in plan.lookups:  # sources and seeds: empty, with their declared columns
        lk_ddl = ", ".join(f"{quote_column(c.name)} "
                           f"{'STRING' if c.type.upper() == 'UNKNOWN' else c.type}"
                           for c in lk.columns)
        if lk_ddl:
            lookups[lk.view] = lk_ddl
    session = analysis_session(spark, schema_ddl=plan.schema_ddl,
                               metadata_columns=metadata_columns, lookups=lookups)
    out: dict[str, StructType | Refusal] = {}
    for step in plan.steps:
        broken = [d for d in step.depends_on if isinstance(out.get(d), Refusal)]
        if broken:
            why = f"it refs model {broken[0]}, which does not analyse"
            out[step.name] = Refusal(REF_CLASS, why, why)
            continue
        out[step.name] = _located(step, session)
    return out


def _located(step: Step, session: SparkSession) -> StructType | Refusal:
    """:func:`analyse_sql` of ``step`` (its result the view of its name), a refusal placed in
    the model's file."""
    try:
        return _analyse(session, step.sql, step.name)
    except Exception as e:  # noqa: BLE001 - Spark's errors and the guard's, all reported
        return refusal_of(e, step)


def refusal_violation(step: Step, refusal: Refusal) -> Violation:
    """A :class:`Refusal` as compile reports a model error: rule ``spark-analysis``, at the
    model file's line Spark named (else the file)."""
    line, column, note = refusal.at or (None, None, "")
    return Violation("spark-analysis", "error", step.path, line, column,
                     f"Spark refuses model {step.name}: [{refusal.error_class}] "
                     f"{refusal.message}{note}",
                     "Spark's parser and analyser over an empty parsed_events of the event "
                     "schema (what `runner stream` runs before its first batch)")


def analyse_project(project: Project, plan: Plan, *,
                    spark: SparkSession | None = None) -> list[Violation]:
    """``runner compile --analyze``: every model of ``plan`` through :func:`analyse_plan`, in
    one local session with the project's Spark settings (``spark``: one to use instead);
    Spark's refusals as model errors.

    Raises:
        ConfigError: no Java to start Spark with (exit 2).
    """
    own = spark is None
    if spark is None:
        spark = _local_session(project)
    try:
        analysed = analyse_plan(spark, plan, project.parsed_events_columns)
    finally:
        if own:
            spark.stop()
    return [refusal_violation(step, found) for step in plan.steps
            if isinstance(found := analysed.get(step.name), Refusal)]


def _local_session(project: Project) -> SparkSession:
    """A local session (one core: the analysis reads no data) with the project's settings."""
    import os
    import shutil

    from runner.runtime.client.session import build_session

    java_home = os.environ.get("JAVA_HOME")
    if shutil.which("java") is None and not (java_home and os.path.isdir(java_home)):
        raise ConfigError("compile --analyze runs Spark's analyser, which needs Java (17 or "
                          "newer) and none was found (java on PATH or JAVA_HOME)",
                          hint="install Java, or run `runner compile` without --analyze "
                               "(its checks need no JVM)")
    return build_session(master="local[1]", conf=dict(project.config.spark.conf),
                         app_name=f"runner-analyze:{project.config.name}",
                         log_dir=str(project.root / "logs"))
