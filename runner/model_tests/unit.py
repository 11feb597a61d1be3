"""Model unit tests: run a test case's events through the real batch path, compare the table.

For each case: a scratch warehouse in a temp dir; the target table seeded with
``given.prior_rows``; ``given.events`` turned into the raw batch the source would deliver
(one line per event, with the source's metadata columns); then
:func:`runner.runtime.batches.batch.run_batch` -- parse, dead letters, the model and its ancestors
in DAG order, Delta writes with merge semantics -- on the ``rs`` engine. The model's table after the
batch is compared with ``expect.rows`` (order-insensitive, only the columns listed).

Test data goes through the same strict JSON parse as events (:func:`parse_batch` against the
model's output schema), so ``"2026-01-01T00:00:00Z"`` is a TIMESTAMP in a timestamp column and
``"abc"`` in an INT column is an error naming the row and column, never a silent null.

Imports pyspark only inside functions: ``import runner.model_tests`` stays JVM-free.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.compile.graph import ancestors
from runner.compile.plan import Plan, Step
from runner.errors import RunnerError, did_you_mean
from runner.model_tests.compare import diff_rows, json_default
from runner.model_tests.result import Status, TestResult
from runner.model_tests.spec import ModelSpec, SpecError, UnitTest
from runner.project.event_schema import source_metadata_columns
from runner.project.loader import Project
from runner.runtime.client.remote import new_session

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from runner.sinks import DeltaWriter

__all__ = ["run_unit_tests", "unit_test_steps", "BATCH_ID"]

BATCH_ID = 0
"""The batch id a unit test's batch runs as (``_batch_id`` of its rows)."""


class _CaseError(RunnerError):
    """The test case's data or declaration is wrong (reported as an error, not a failure)."""


def unit_test_steps(plan: Plan, model: str, given: Collection[str] = ()) -> tuple[Step, ...]:
    """The steps a test of ``model`` runs: the model and its ancestors, in plan order, but
    not the ``given`` models (their rows are the test's) nor what only they need."""
    edges = {s.name: [d for d in s.depends_on if d not in given] for s in plan.steps}
    needed = ancestors(model, edges) | {model}
    return tuple(s for s in plan.steps if s.name in needed)


def run_unit_tests(project: Project, plan: Plan, cases: Sequence[tuple[ModelSpec, UnitTest]], *,
                   spark: SparkSession | None = None,
                   on_result: Callable[[TestResult], None] = lambda r: None
                   ) -> list[TestResult]:
    """Run unit test cases; a SparkSession is built (and stopped) unless one is given.

    Args:
        project: the project.
        plan: the compiled plan of every enabled model (ancestors are run too).
        cases: (model spec, unit test) pairs.
        spark: a session to use (tests pass their shared one).
        on_result: called with each result as soon as it is known.
    """
    if not cases:
        return []
    own = spark is None
    if spark is None:
        from runner.runtime.client.session import build_session

        conf = project.config.spark
        spark = build_session(master=conf.master, remote=conf.remote, conf=dict(conf.conf),
                              app_name=f"runner-test:{project.config.name}",
                              log_dir=str(project.root / "logs"))
    results = []
    try:
        from runner.runtime.start.evolution import model_output_schemas
        from runner.sinks import make_writer
        from runner.spark_errors import first_line

        writer = make_writer("rs", spark)
        schemas = model_output_schemas(spark, plan, project.parsed_events_columns)
        for spec, case in cases:
            started = time.perf_counter()
            where = _where(spec, case)
            try:
                status, message, details = _run_case(project, plan, spec, case, spark, writer,
                                                     schemas)
            except (_CaseError, SpecError) as e:
                status, message, details = "error", e.message, []
            except RunnerError as e:  # the model (or a sink) failed in the batch
                status, message, details = "error", first_line(e), []
            result = TestResult("unit", spec.model, case.name, status,
                                message, tuple(details), where, time.perf_counter() - started)
            results.append(result)
            on_result(result)
    finally:
        if own:
            from runner.runtime.client.session import stop_session

            stop_session(spark)
    return results


def _where(spec: ModelSpec, case: UnitTest) -> str:
    if case.origin:
        return case.origin
    index = spec.unit_tests.index(case)
    line = spec.line_of("unit_tests", index)
    return f"{spec.path}:{line}" if line else spec.path


def _raw_lines(project: Project, case: UnitTest) -> list[str]:
    lines = [e if isinstance(e, str) else json.dumps(e, default=json_default, ensure_ascii=False)
             for e in case.given.events]
    if project.config.source.type == "files":  # the files source drops blank lines
        lines = [line for line in lines if line.strip()]
    return lines


def _raw_frame(session: SparkSession, project: Project, lines: Sequence[str],
               label: str) -> DataFrame:
    """The raw batch a source would deliver: ``value`` plus the source's metadata columns."""
    meta = source_metadata_columns(project.config.source.type)
    schema = ", ".join(["value STRING", *(f"{name} {t}" for name, t in meta.items())])
    source = project.config.source
    rows: list[tuple[Any, ...]]
    if source.type == "files":
        rows = [(line, f"file:///unit_tests/{label}.json") for line in lines]
    else:
        rows = [(line, source.topics[0], 0, offset, None, None)
                for offset, line in enumerate(lines)]
    return session.createDataFrame(rows, schema)


def _run_case(project: Project, plan: Plan, spec: ModelSpec, case: UnitTest,
              spark: SparkSession, writer: DeltaWriter,
              schemas: Mapping[str, StructType | str]) -> tuple[Status, str, list[str]]:
    from runner.runtime.batches.batch import BatchPlan, run_batch
    from runner.sinks import SinkSpec, app_id, sink_specs
    from runner.sinks.tables import read_table

    model = spec.model
    schema = schemas[model]
    steps = unit_test_steps(plan, model, case.given.models)
    sub_plan = replace(plan, steps=steps)
    session = new_session(spark)  # private temp views: parsed_events and the models
    lines = _raw_lines(project, case)
    if isinstance(schema, str):
        raise _CaseError(f"model {model} does not analyse in Spark: {schema}")
    expected_columns = _expected_columns(case, schema, spec)
    # test data errors first, before the batch runs
    expected = _typed_frame(session, case.expect.rows, schema, expected_columns, "expect.rows")
    expected_table = expected.toArrow()
    prior = (_typed_frame(session, case.given.prior_rows, schema, list(schema.names),
                          "given.prior_rows") if case.given.prior_rows else None)

    with tempfile.TemporaryDirectory(prefix=f"runner-unit-{model}-") as tmp:
        sinks, dead = sink_specs(sub_plan, table_path=lambda name: str(Path(tmp) / name),
                                 run_id="unit-test")
        if prior is not None:
            seed = SinkSpec(model=model, path=sinks[model].path,
                            app_id=app_id(plan.project, model, "unit-test-seed"),
                            partition_by=sinks[model].partition_by)
            writer.write(seed, prior, 0)
        bp = BatchPlan(plan=sub_plan, sinks=sinks, dead_letter=dead,
                       metadata_columns=source_metadata_columns(project.config.source.type),
                       writer=writer, parallelism=project.config.parallelism)
        _given_lookups(session, sub_plan, case)
        _given_models(session, steps, case, schemas)
        run_batch(bp, _raw_frame(session, project, lines, f"{model}/{case.name}"), BATCH_ID)

        table_path = Path(sinks[model].path)
        actual = _read(read_table, table_path)
        dead_rows = _read(read_table, Path(dead.path))

    dead_problem = _dead_letter_check(case, lines, dead_rows)
    if dead_problem is not None and dead_problem[0] == "error":
        return dead_problem
    actual_rows = _project_rows(actual, expected_columns, expected_table)
    ok, diff = diff_rows(expected_table.to_pylist(), actual_rows, expected_columns)
    messages, details = [], []
    if not ok:
        messages.append(f"{model} wrote rows other than expected")
        details += diff
    if dead_problem is not None:
        messages.append(dead_problem[1])
        details += dead_problem[2]
    return ("fail" if messages else "pass"), "; ".join(messages), details


def _given_lookups(session: SparkSession, plan: Plan, case: UnitTest) -> None:
    """The sources and seeds the steps read, as temp views of ``given.sources`` /
    ``given.seeds`` rows (a seed not given: its CSV file), typed by their declared columns."""
    from runner.checkpoint.pins import SeedContent
    from runner.runtime.batches.pinned_lookups import lookups_of, seed_frame

    for lk in lookups_of(plan):
        given = (case.given.sources if lk.kind == "source" else case.given.seeds).get(lk.name)
        columns = tuple((c.name, c.type) for c in lk.columns)
        if given is None and lk.kind == "source":
            raise _CaseError(f"given.sources lacks '{lk.name}', which the model reads: give "
                             f"its rows (given: {{sources: {{{lk.name}: [...]}}}})")
        if given is None:
            content = SeedContent(lk.name, columns,
                                  Path(lk.location).read_bytes().decode("utf-8-sig"))
            frame = seed_frame(session, content)
        else:
            known = {n.lower() for n, _ in columns}
            for i, row in enumerate(given):
                unknown = [k for k in row if k.lower() not in known]
                if unknown:
                    raise _CaseError(f"given.{lk.kind}s.{lk.name}[{i}]: {lk.kind} {lk.name} "
                                     f"has no column '{unknown[0]}'"
                                     + did_you_mean(unknown[0], [n for n, _ in columns]))
            frame = seed_frame(session, SeedContent(lk.name, columns, ""), rows=given)
        frame.createOrReplaceTempView(lk.view)
    for name in [*case.given.sources, *case.given.seeds]:
        if name not in {lk.name for lk in lookups_of(plan)}:
            raise _CaseError(f"given names '{name}', which no model of this test reads"
                             + did_you_mean(name, [lk.name for lk in lookups_of(plan)]))


def _given_models(session: SparkSession, steps: Sequence[Step], case: UnitTest,
                  schemas: Mapping[str, StructType | str]) -> None:
    """The upstream models given rows (dbt's ``input: ref('model')``), as the views the
    steps read instead of running them."""
    reads = {d for s in steps for d in s.depends_on}
    for name, rows in case.given.models.items():
        if name not in reads:
            raise _CaseError(f"given names model '{name}', which no model of this test reads"
                             + did_you_mean(name, sorted(reads)))
        schema = schemas[name]
        if isinstance(schema, str):
            raise _CaseError(f"model {name} does not analyse in Spark: {schema}")
        _typed_frame(session, rows, schema, list(schema.names),
                     f"given ref('{name}')").createOrReplaceTempView(name)


def _read(read_table: Callable[[str], Any], path: Path) -> Any:
    from runner.sinks.tables import is_table

    return read_table(str(path)) if is_table(path) else None


def _expected_columns(case: UnitTest, schema: StructType, spec: ModelSpec) -> list[str]:
    columns: list[str] = []
    for row in case.expect.rows:
        for key in row:
            if key not in columns:
                columns.append(key)
    names = {n.lower(): n for n in schema.names}
    out = []
    for key in columns:
        if key.lower() not in names:
            raise _CaseError(f"expect.rows: model {spec.model} has no output column '{key}'"
                             + did_you_mean(key, schema.names)
                             + f"; it outputs: {', '.join(schema.names)}")
        out.append(names[key.lower()])
    for i, row in enumerate(case.expect.rows):
        lacking = [c for c in columns if c not in row]
        if lacking:
            raise _CaseError(f"expect.rows[{i}] lacks column '{lacking[0]}' that other rows "
                             "list: give every expected row the same columns (null for null)")
    return out


_POSITIONAL = re.compile(r"\b(field )?c(\d+)\b")
_PROBE = "runner_probe"


def _typed_frame(session: SparkSession, rows: Sequence[Mapping[str, Any]], schema: StructType,
                 columns: Sequence[str], what: str) -> DataFrame:
    """Rows of test data as a DataFrame typed like the model's ``columns``.

    Each row goes through the runner's strict JSON parse (the rules events follow), under
    positional names so that any column name works; a key a row leaves out is null. A value
    that does not fit its column is a :class:`_CaseError` naming the row and the column.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from runner.runtime.batches.parse import parse_batch
    from runner.sinks.schema import nullable_type

    by_lower = {n.lower(): n for n in schema.names}
    index = {name: i for i, name in enumerate(columns)}
    lines = []
    for r, row in enumerate(rows):
        doc = {}
        for key, value in row.items():
            name = by_lower.get(key.lower())
            if name is None or name not in index:
                raise _CaseError(f"{what}[{r}]: model has no output column '{key}'"
                                 + did_you_mean(key, schema.names)
                                 + f"; it outputs: {', '.join(schema.names)}")
            doc[f"c{index[name]}"] = value
        lines.append(json.dumps(doc, default=json_default, ensure_ascii=False))
    positional = T.StructType.fromJson(nullable_type({"type": "struct", "fields": [
        *({"name": f"c{i}", "type": schema[name].dataType.jsonValue(), "nullable": True,
           "metadata": {}} for i, name in enumerate(columns)),
        # never set; keeps the schema non-empty when the rows list no columns
        {"name": _PROBE, "type": "boolean", "nullable": True, "metadata": {}}]}))
    raw = session.createDataFrame([(line,) for line in lines], "value STRING")
    parsed = parse_batch(raw, schema_ddl=positional.toDDL(), batch_id=BATCH_ID,
                         metadata_columns=())
    if parsed.dead.select("raw").limit(1).collect():  # the reason only when there is one
        bad = parsed.dead.select("raw", "reason").limit(1).collect()
        r = lines.index(bad[0]["raw"])
        reason = _POSITIONAL.sub(lambda m: f"column {columns[int(m.group(2))]}",
                                 bad[0]["reason"])
        raise _CaseError(f"{what}[{r}] does not fit the model's output types: {reason}")
    return parsed.valid.select(*[F.col(f"c{i}").alias(name) for i, name in enumerate(columns)])


def _project_rows(actual: Any, columns: Sequence[str], expected: Any) -> list[dict[str, Any]]:
    """The written rows, only ``columns``, cast to the types the expected rows have."""
    if actual is None:
        return []
    names = {n.lower(): n for n in actual.column_names}
    table = actual.select([names[c.lower()] for c in columns]).rename_columns(list(columns))
    try:
        table = table.cast(expected.schema)
    except Exception:  # noqa: BLE001 - compare as read when the types do not line up exactly
        pass
    rows: list[dict[str, Any]] = table.to_pylist()
    return rows


def _dead_letter_check(case: UnitTest, lines: Sequence[str], dead: Any
                       ) -> tuple[Status, str, list[str]] | None:
    """None when the dead letters are as declared; else (status, message, details)."""
    rows = dead.select(["raw", "reason"]).to_pylist() if dead is not None else []
    pending = list(enumerate(lines))
    found: list[tuple[int, str, str]] = []
    for row in rows:
        hit = next((p for p in pending if p[1] == row["raw"]), None)
        if hit is not None:
            pending.remove(hit)
        found.append((hit[0] if hit else len(lines), row["raw"], row["reason"]))
    found.sort()
    declared = case.expect.dead_letters
    if declared is None:
        if not found:
            return None
        i, raw, reason = found[0]
        shown = raw if len(raw) <= 120 else raw[:117] + "..."
        label = f"given.events[{i}]" if i < len(lines) else f"a row of the model ({shown})"
        return ("error", f"{label} was dead-lettered: {reason} (if that is the point of the "
                         "test, list the reason under expect.dead_letters)",
                [f"{len(found)} dead letter{'s' * (len(found) != 1)}: "
                 + "; ".join(r for _, _, r in found[:5])])
    reasons = [r for _, _, r in found]
    matched = len(reasons) == len(declared) and all(
        want in got for want, got in zip(declared, reasons))
    if matched:
        return None
    details = [f"expected: {json.dumps(list(declared))}",
               f"got:      {json.dumps(reasons)}"]
    return ("fail", f"dead letters: expected {len(declared)} (reasons, in input order, as "
                    f"substrings), got {len(reasons)}", details)
