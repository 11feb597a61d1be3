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
from runner.cli_options import project_dir as _project_dir
from runner.cli_options import select as _select
from runner.compile.plan import Plan
from runner.compile.state import load_state, state_changes
from runner.console import Console, Format, event_doc, plural, summary_doc
from runner.errors import ConfigError, ExecutionError, RunnerError
from runner.ops.listing import RESOURCE_TYPES, list_resources, resource_lines
from runner.ops.plans import ModelErrors, checked_plan, stream_plan
from runner.project.loader import Project, load_project
from runner.project.triggers import validate_interval

if TYPE_CHECKING:
    from runner.model_tests import Kind, TestResult

__all__ = ["cli", "main"]

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
@click.option("--analyze", is_flag=True, help="Also run each model through Spark's parser and "
              "analyser over an empty parsed_events, in one local session (needs Java): "
              "Spark's own verdict, as `runner stream` checks before its first batch.")
def compile(project_dir: str, select: tuple[str, ...], fmt: Format, state: str | None,
            analyze: bool) -> None:
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
        if analyze:
            from runner.runtime.start.analysis import analyse_project  # starts a JVM

            result = dataclasses.replace(result, violations=result.violations + tuple(
                analyse_project(project, result.plan)))
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
    plan: Plan = _models_ok(lambda: checked_plan(project, select))
    return plan


def _models_ok(run: Callable[[], Any]) -> Any:
    """``run()``; its model errors printed (as compile prints them) and exit 1."""
    try:
        return run()
    except ModelErrors as e:
        Console(out=sys.stderr).violations(e.result.violations, fmt="text",
                                           models=e.result.models, target=None)
        raise click.exceptions.Exit(e.exit_code) from e


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
    plan, rebuild = _models_ok(lambda: stream_plan(project, select,
                                                   rebuild=full_refresh and bool(select)))
    full_refresh = full_refresh and not rebuild
    console = Console()
    printer = console.json_line if progress == "json" else None
    from runner.runtime.start.stream import run_stream

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


@cli.command("ls")
@_project_dir
@_select
@click.option("--resource-type", "types", multiple=True, type=click.Choice(RESOURCE_TYPES),
              help="Only resources of this type (repeatable; default: all).")
@click.option("--output", type=click.Choice(["text", "json", "name"]), default="text",
              show_default=True, help="Type, name and file; one JSON object per line; or names.")
def ls_command(project_dir: str, select: tuple[str, ...], types: tuple[str, ...],
               output: str) -> None:
    """List the project's models, seeds, sources, data tests and unit tests (dbt's ls). No
    JVM; exit 1 on model errors."""
    project = load_project(project_dir)
    _print(resource_lines(_models_ok(lambda: list_resources(
        project, select=select, types=types)), output))


@cli.command()
@_project_dir
@_select
@click.option("--full-refresh", is_flag=True, help="As stream's: rebuild (with --select, only "
              "the selected models' tables) before streaming.")
def build(project_dir: str, select: tuple[str, ...], full_refresh: bool) -> None:
    """Compile, run the unit tests, stream everything available (--available-now), then run
    the data tests; stop at the first stage that fails, with its exit code (dbt's build)."""
    from runner.model_tests import result_lines, summary_line
    from runner.ops.build_steps import BuildHooks, run_build

    console = Console()

    def test(result: TestResult) -> None:
        for line in result_lines(result):
            console.info(line)

    hooks = BuildHooks(
        stage=lambda name: console.info(f"== {name}"),
        compiled=lambda r, t: console.violations(r.violations, fmt="text", models=r.models,
                                                 target=t),
        test=test, tests_done=lambda t: console.info(summary_line(t)), event=console.event,
        streamed=console.summary)
    _models_ok(lambda: run_build(load_project(project_dir), select=select,
                                 full_refresh=full_refresh, hooks=hooks))


@cli.command()
@_project_dir
@_select
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
def seed(project_dir: str, select: tuple[str, ...], fmt: str) -> None:
    """Write each seed as a Delta table at <warehouse>/<seed>, once per content (a changed CSV:
    a new version), registered by name when project.yml has catalog: (dbt's seed)."""
    from runner.ops.seed import seed_project

    report = seed_project(load_project(project_dir), select=select)
    _print(report.to_dict() if fmt == "json" else report.lines())


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
