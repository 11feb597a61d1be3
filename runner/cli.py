"""The command line: thin commands over the library; the one place errors become exit codes."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from runner.build import compile_project, write_target
from runner.compile.plan import Plan
from runner.compile.selection import select_names
from runner.compile.state import load_state, state_changes
from runner.console import Console, Format, event_doc, plural, summary_doc
from runner.errors import ConfigError, ExecutionError, RunnerError
from runner.project.loader import Project, command_line_vars, load_project
from runner.project.profile import PROFILES_DIR_ENV, TARGET_ENV, command_line_profile
from runner.project.spark_conf import ALLOW_ENV, ALLOW_FLAG, opted_in
from runner.project.triggers import validate_interval

if TYPE_CHECKING:
    from runner.model_tests import Kind, TestResult

__all__ = ["cli", "main"]

_project_dir_option = click.option("--project-dir", default=".", show_default=True,
                                   type=click.Path(file_okay=False),
                                   help="Directory holding project.yml, models/ and macros/.")


def _opt_in(ctx: click.Context, _param: click.Parameter, keys: tuple[str, ...]) -> None:
    if keys:  # for this command only: the opt-in ends when its context closes
        ctx.with_resource(opted_in(keys))


_allow_spark_conf = click.option(
    ALLOW_FLAG, multiple=True, metavar="KEY", expose_value=False, callback=_opt_in,
    is_eager=True, help=f"Accept this guarded Spark setting of project.yml's spark.conf (a "
    f"deployment's opt-in, like {ALLOW_ENV} and the target's allow_spark_conf; repeatable; "
    "docs/SECURITY.md).")


def _set_vars(ctx: click.Context, _param: click.Parameter, text: str | None) -> None:
    if text:  # for this command only
        ctx.with_resource(command_line_vars(text))


_vars = click.option(
    "--vars", metavar="YAML", expose_value=False, callback=_set_vars,
    help="Values for {{ var() }} over project.yml's vars: (dbt's --vars), a YAML or JSON "
         "mapping: --vars '{\"slow_ms\": 500}'.")


def _set_profile(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value:  # for this command only
        ctx.with_resource(command_line_profile(**{str(param.name): value}))


_profiles_dir = click.option(
    "--profiles-dir", metavar="DIR", expose_value=False, callback=_set_profile,
    help=f"Folder of the deployment's profiles.yml (default: ${PROFILES_DIR_ENV}, else "
         "~/.runner/; one in the project is read only when named here; docs/PROFILES.md).")
_target = click.option(
    "--target", "-t", metavar="NAME", expose_value=False, callback=_set_profile,
    help=f"The profile's target to run with (default: ${TARGET_ENV}, else the profile's "
         "target:, else dev).")


def _project_dir(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--project-dir``, ``--profiles-dir``, ``--target``, ``--vars`` and
    ``--allow-spark-conf`` (every command loads project.yml and the deployment's target)."""
    return _allow_spark_conf(_vars(_target(_profiles_dir(_project_dir_option(command)))))
_select = click.option("--select", "-s", "select", multiple=True,
                       help="Models to use: name, tag:x, +name (with ancestors), name+ "
                            "(with descendants). Repeatable.")


class _Group(click.Group):
    """Turns RunnerError into one clear message and its exit code; a traceback only with --debug."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except RunnerError as e:
            if ctx.meta.get("debug"):
                traceback.print_exc()
            Console().error(str(e))
            ctx.exit(e.exit_code)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except BrokenPipeError:
            _quiet_stdout()  # the reader went away (`runner status | head`): stop as Unix
            ctx.exit(141)    # tools do, 128 + SIGPIPE, without a message
        except Exception as e:  # noqa: BLE001 - the last line of defence before a traceback
            if ctx.meta.get("debug"):
                traceback.print_exc()
            Console().error(f"internal error: {type(e).__name__}: {e} "
                            "(run with --debug for the traceback and report it)")
            ctx.exit(3)


def _quiet_stdout() -> None:
    """Point stdout at /dev/null: Python flushes it again at exit, which would raise the
    broken pipe a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file (tests' captured output)
        pass


def _version() -> str:
    try:
        return importlib.metadata.version("sql-fanout-runner")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree, not installed
        return "unknown"


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:  # looked up only when asked (it scans packages)
        click.echo(f"runner {_version()}")
        ctx.exit()


@click.group(cls=_Group)
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=_print_version, help="Show the version and exit.")
@click.option("--debug", is_flag=True, help="Show Python tracebacks for errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """SQL-first streaming fan-out: read once, parse once, write every model to Delta."""
    ctx.meta["debug"] = debug


@cli.command()
@_project_dir
@_select
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text",
              show_default=True, help="Findings as text, JSON, or GitHub workflow annotations.")
@click.option("--state", metavar="PATH", help="The deployed target/manifest.json (or its "
              "folder): report what this change does to each deployed model's table.")
def compile(project_dir: str, select: tuple[str, ...], fmt: Format, state: str | None) -> None:
    """Render and lint every model; write target/compiled/*.sql and target/manifest.json.

    Exit codes: 0 clean (warnings allowed), 1 model errors, 2 configuration or usage errors.
    """
    try:
        deployed = load_state(state) if state else None
        project = load_project(project_dir)
        result = compile_project(project, select=select)
        if deployed is not None:
            result = dataclasses.replace(result, violations=result.violations + tuple(
                state_changes(result.plan, deployed, selected=bool(select))))
    except ConfigError as e:
        if fmt == "text":
            raise
        Console().config_errors(e.violations("config"), fmt=fmt)
        raise click.exceptions.Exit(e.exit_code) from e
    target = write_target(project, result)
    Console().violations(result.violations, fmt=fmt, models=result.models,
                         target=str(target))
    if not result.ok:
        raise click.exceptions.Exit(1)


def _plan_or_exit(project: Project, select: tuple[str, ...]) -> Plan:
    """Compile; on model errors print them and exit 1 (stream never runs a broken plan)."""
    result = compile_project(project, select=select)
    if not result.ok:
        Console(out=sys.stderr).violations(
            result.violations, fmt="text", models=result.models, target=None)
        raise click.exceptions.Exit(1)
    selected = {s.name for s in result.plan.steps}
    for step in result.plan.steps:
        missing = [d for d in step.depends_on if d not in selected]
        if missing:
            raise ConfigError(f"--select: model '{step.name}' refs '{missing[0]}', which is not "
                              "selected; a batch's refs are computed in the same batch",
                              hint=f"select it with its ancestors: --select +{step.name}")
    return result.plan


def _stream_plan(project: Project, select: tuple[str, ...], *,
                 rebuild: bool) -> tuple[Plan, tuple[str, ...]]:
    """The plan to stream and the models to rebuild, from one compile. ``rebuild``
    (``--full-refresh --select``): the selected models' tables are rebuilt and the stream runs
    every model; otherwise the selection is streamed."""
    if not rebuild:
        return _plan_or_exit(project, select), ()
    upstream = [p for s in select for p in s.split() if p.startswith("+")]
    if upstream:  # a rebuild computes ancestors from the history, never from their tables
        names = " ".join(p.lstrip("+") for s in select for p in s.split())
        raise ConfigError(
            f"--full-refresh --select {upstream[0]}: '+' would rebuild (drop and "
            "replay) every ancestor too, and a rebuild needs none of them: it computes "
            "them from the checkpoint's history without reading or writing their tables",
            hint=f"name only the models to rebuild: --full-refresh --select {names}")
    plan = _plan_or_exit(project, ())
    chosen = select_names(select, edges={s.name: list(s.depends_on) for s in plan.steps},
                          tags={s.name: list(s.config.tags) for s in plan.steps})
    return plan, tuple(s.name for s in plan.steps if s.name in chosen)


@cli.command()
@_project_dir
@_select
@click.option("--available-now", is_flag=True,
              help="Process everything available now, then exit 0.")
@click.option("--trigger", default=None, metavar="INTERVAL",
              help="Processing-time trigger, e.g. '5 seconds' (default: project.yml trigger).")
@click.option("--full-refresh", is_flag=True,
              help="Reset the checkpoint and drop every model table, then rebuild from the "
                   "source. With --select: drop and rebuild only the selected models' tables "
                   "from the checkpoint's history, keeping the checkpoint and every other table.")
@click.option("--progress", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="One line per event (batches, backfill batches, "
              "start-up notes) as text, or as JSON lines (docs/COMMANDS.md).")
@click.option("--metrics-port", type=click.IntRange(1, 65535), default=None, metavar="PORT",
              help="Serve Prometheus metrics on this port (default: the target's metrics.port; "
                   "see docs/METRICS.md).")
def stream(project_dir: str, select: tuple[str, ...], available_now: bool, trigger: str | None,
           full_refresh: bool, progress: str, metrics_port: int | None) -> None:
    """Run the pipeline: one streaming query, one checkpoint, every model written exactly once.

    Models new to the checkpoint are first backfilled from the input it has already
    processed (unless their config says backfill=false). SIGINT/SIGTERM stop it after the
    batch in flight (exit 0).
    """
    if available_now and trigger:
        raise ConfigError("--available-now and --trigger exclude each other")
    project = load_project(project_dir)
    interval = trigger or project.config.trigger
    validate_interval(interval)
    plan, rebuild = _stream_plan(project, select, rebuild=full_refresh and bool(select))
    full_refresh = full_refresh and not rebuild
    console = Console()
    printer = console.json_line if progress == "json" else None
    from runner.runtime.stream import run_stream

    show = (lambda e: printer(event_doc(e))) if printer else console.event
    port = metrics_port or project.config.metrics.port
    metrics = None
    if port is not None:
        from runner.runtime.prometheus import start_metrics

        metrics = start_metrics(project, plan, port=port)
    summary = run_stream(
        project, plan, mode="available_now" if available_now else "processing_time",
        trigger=interval, full_refresh=full_refresh, rebuild=rebuild,
        report=metrics.wrap(show) if metrics else show,
        on_progress=metrics.on_progress if metrics else lambda p: None)
    if printer:
        printer({"summary": summary_doc(summary), "type": "summary"})
    else:
        console.summary(summary)
    if summary.parked and available_now:  # processing-time mode goes on without them
        names = ", ".join(sorted(summary.parked))
        raise ExecutionError(f"{len(summary.parked)} model(s) parked during this run: {names}",
                             hint="their tables stay at their last good batch (`runner status` "
                                  "shows why); fix the SQL and run again: they catch up")


@cli.command()
@_project_dir
@click.option("--events", default=20_000, show_default=True, help="How many events to write.")
@click.option("--files", default=4, show_default=True, help="Spread over this many new files.")
@click.option("--poison-every", default=2000, show_default=True,
              help="Every N-th line is a poison line (0: none).")
@click.option("--seed", default=42, show_default=True)
def demo(project_dir: str, events: int, files: int, poison_every: int, seed: int) -> None:
    """Write realistic app events (and a few poison lines) into the files source directory."""
    from runner.demo import write_demo_files

    project = load_project(project_dir)
    source = project.config.source
    if source.type != "files":
        raise ConfigError("runner demo writes files: this project's source is kafka",
                          hint="see docs/KAFKA.md (bash scripts/kafka_demo.sh)")
    folder = project.resolve(source.path)
    if not isinstance(folder, Path):
        raise ConfigError(f"runner demo writes local files; source.path is {folder}",
                          hint="point source.path at a local folder for the demo")
    result = write_demo_files(folder, events=events, files=files,
                              seed=seed, poison_every=poison_every)
    Console().info(f"wrote {plural(result.events, 'event')} "
                   f"({plural(result.poison, 'poison line')}) in {plural(result.files, 'file')} "
                   f"to {result.directory}")


@cli.command()
@_project_dir
@click.option("--limit", default=3, show_default=True, help="Sample rows per table.")
def show(project_dir: str, limit: int) -> None:
    """Show what landed: each model table and the dead-letter table (read with delta-rs)."""
    from runner.sinks.tables import describe_tables

    project = load_project(project_dir)
    Console().tables(describe_tables(project, limit=limit))


@cli.command("test")
@_project_dir
@_select
@click.option("--kind", type=click.Choice(["all", "unit", "data"]), default="all",
              show_default=True, help="Unit tests (Spark, scratch tables), data tests "
                                      "(warehouse tables), or both.")
def test_command(project_dir: str, select: tuple[str, ...], kind: Kind) -> None:
    """Run the tests declared in models/<model>.yml: unit tests through the real batch path
    on scratch tables, data tests on the warehouse tables.

    Exit codes: 0 all passed (warnings allowed), 1 a test failed or could not run, 2
    configuration or usage errors.
    """
    from runner.model_tests import collect_suite, result_lines, run_suite, summary_line

    project = load_project(project_dir)
    plan = _plan_or_exit(project, ())
    suite = collect_suite(project, plan, select=select, kind=kind)
    console = Console()

    def report(result: TestResult) -> None:
        for line in result_lines(result):
            console.info(line)

    summary = run_suite(suite, on_result=report)
    console.info(summary_line(summary))
    if not summary.ok:
        raise click.exceptions.Exit(1)


@cli.command()
@_project_dir
@_select
def docs(project_dir: str, select: tuple[str, ...]) -> None:
    """Write a static HTML site to target/docs/: the model DAG, each model's SQL, config,
    columns and types, column lineage from parsed_events, expectations and tests.

    Open target/docs/index.html in a browser (no server needed).
    """
    from runner.docs_site import build_site

    project = load_project(project_dir)
    plan = _plan_or_exit(project, ())
    site = build_site(project, plan, select=select)
    Console().info(f"wrote {plural(len(site.pages) + 1, 'page')} -> {site.index}")


@cli.command()
@_project_dir
@click.option("--batch", type=int, default=None,
              help="The snapshot of this batch (default: the latest batch complete in every "
                   "table).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
def snapshot(project_dir: str, batch: int | None, fmt: str) -> None:
    """The Delta version of every table that holds exactly the batches up to one batch:
    read them all at those versions for a consistent cut (docs/SNAPSHOTS.md)."""
    from runner.ops.snapshot import snapshot_lines, snapshot_of

    snap = snapshot_of(load_project(project_dir), batch=batch)
    _print(snap.to_dict() if fmt == "json" else snapshot_lines(snap))


@cli.command()
@_project_dir
@click.option("--batches", default=10, show_default=True,
              help="Dead letters of this many latest batches.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
def status(project_dir: str, batches: int, fmt: str) -> None:
    """Tables (last batch, version, files, size), source backlog, dead letters of the last
    batches, the runner holding the checkpoint, and the last run's error. No Spark."""
    from runner.ops.status import collect_status, status_lines

    report = collect_status(load_project(project_dir), batches=batches)
    _print(report.to_dict() if fmt == "json" else status_lines(report))


@cli.command()
@_project_dir
@_select
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
def maintain(project_dir: str, select: tuple[str, ...], fmt: str) -> None:
    """Compact small files, vacuum what no retained snapshot needs, write log checkpoints,
    expire old log files and remove empty staging folders. Safe while the stream runs."""
    from runner.ops.maintain import maintain as run_maintenance
    from runner.ops.maintain import report_lines

    report = run_maintenance(load_project(project_dir), select=select)
    _print(report.to_dict() if fmt == "json" else report_lines(report))


def _print(doc: dict[str, Any] | list[str]) -> None:
    """A JSON document (indented) or text lines, to stdout."""
    console = Console()
    if isinstance(doc, dict):
        console.info(json.dumps(doc, indent=2, default=str))
    else:
        for line in doc:
            console.info(line)


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="runner")


if __name__ == "__main__":  # pragma: no cover
    main()
