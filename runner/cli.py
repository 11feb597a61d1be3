"""The command line: thin commands over the library; the one place errors become exit codes."""

from __future__ import annotations

import sys
import traceback
from typing import Any

import click

from .compile import compile_project, write_target
from .console import Console, batch_doc, summary_doc
from .triggers import validate_interval
from .errors import ConfigError, RunnerError
from .project import load_project

__all__ = ["cli", "main"]

_project_dir = click.option("--project-dir", default=".", show_default=True,
                            type=click.Path(file_okay=False),
                            help="Directory holding project.yml, models/ and macros/.")
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
        except Exception as e:  # noqa: BLE001 - the last line of defence before a traceback
            if ctx.meta.get("debug"):
                traceback.print_exc()
            Console().error(f"internal error: {type(e).__name__}: {e} "
                            "(run with --debug for the traceback and report it)")
            ctx.exit(3)


@click.group(cls=_Group)
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
def compile(project_dir: str, select: tuple[str, ...], fmt: str) -> None:
    """Render and lint every model; write target/compiled/*.sql and target/manifest.json.

    Exit codes: 0 clean (warnings allowed), 1 model errors, 2 configuration or usage errors.
    """
    project = load_project(project_dir)
    result = compile_project(project, select=select)
    target = write_target(project, result)
    Console().violations(result.violations, fmt=fmt,  # type: ignore[arg-type]
                         models=len(result.plan.steps), target=str(target))
    if not result.ok:
        raise click.exceptions.Exit(1)


def _plan_or_exit(project, select: tuple[str, ...]):  # type: ignore[no-untyped-def]
    """Compile; on model errors print them and exit 1 (stream never runs a broken plan)."""
    result = compile_project(project, select=select)
    if not result.ok:
        Console(out=sys.stderr).violations(
            result.violations, fmt="text", models=len(result.plan.steps), target=None)
        raise click.exceptions.Exit(1)
    selected = {s.name for s in result.plan.steps}
    for step in result.plan.steps:
        missing = [d for d in step.depends_on if d not in selected]
        if missing:
            raise ConfigError(f"--select: model '{step.name}' refs '{missing[0]}', which is not "
                              "selected; a batch's refs are computed in the same batch",
                              hint=f"select it with its ancestors: --select +{step.name}")
    return result.plan


@cli.command()
@_project_dir
@_select
@click.option("--available-now", is_flag=True,
              help="Process everything available now, then exit 0.")
@click.option("--trigger", default=None, metavar="INTERVAL",
              help="Processing-time trigger, e.g. '5 seconds' (default: project.yml trigger).")
@click.option("--full-refresh", is_flag=True,
              help="Reset the checkpoint and drop every model table, then rebuild from the "
                   "source.")
@click.option("--progress", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="One line per batch as text, or as JSON lines.")
def stream(project_dir: str, select: tuple[str, ...], available_now: bool, trigger: str | None,
           full_refresh: bool, progress: str) -> None:
    """Run the pipeline: one streaming query, one checkpoint, every model written exactly once.

    SIGINT/SIGTERM stop it after the batch in flight (exit 0).
    """
    if available_now and trigger:
        raise ConfigError("--available-now and --trigger exclude each other")
    if full_refresh and select:
        raise ConfigError("--full-refresh resets the pipeline's one checkpoint: it cannot be "
                          "combined with --select")
    project = load_project(project_dir)
    interval = trigger or project.config.trigger
    validate_interval(interval)
    plan = _plan_or_exit(project, select)
    console = Console()
    printer = console.json_line if progress == "json" else None
    from .engine.stream import run_stream

    summary = run_stream(
        project, plan, mode="available_now" if available_now else "processing_time",
        trigger=interval, full_refresh=full_refresh,
        on_batch=(lambda r: printer(batch_doc(r))) if printer else console.batch,
        on_event=(lambda m: printer({"event": m})) if printer else console.event)
    if printer:
        printer({"summary": summary_doc(summary)})
    else:
        console.summary(summary)


@cli.command()
@_project_dir
@click.option("--events", default=20_000, show_default=True, help="How many events to write.")
@click.option("--files", default=4, show_default=True, help="Spread over this many new files.")
@click.option("--poison-every", default=2000, show_default=True,
              help="Every N-th line is a poison line (0: none).")
@click.option("--seed", default=42, show_default=True)
def demo(project_dir: str, events: int, files: int, poison_every: int, seed: int) -> None:
    """Write realistic app events (and a few poison lines) into the files source directory."""
    from .demo import write_demo_files

    project = load_project(project_dir)
    source = project.config.source
    if source.type != "files":
        raise ConfigError("runner demo writes files: this project's source is kafka",
                          hint="see docs/KAFKA.md (bash scripts/kafka_demo.sh)")
    result = write_demo_files(project.resolve(source.path), events=events, files=files,
                              seed=seed, poison_every=poison_every)
    Console().info(f"wrote {result.events:,} events ({result.poison} poison lines) in "
                   f"{result.files} files to {result.directory}")


@cli.command()
@_project_dir
@click.option("--limit", default=3, show_default=True, help="Sample rows per table.")
def show(project_dir: str, limit: int) -> None:
    """Show what landed: each model table and the dead-letter table (read with delta-rs)."""
    from .tables import describe_tables

    project = load_project(project_dir)
    Console().tables(describe_tables(project, limit=limit))


@cli.command("test")
@_project_dir
@_select
@click.option("--kind", type=click.Choice(["all", "unit", "data"]), default="all",
              show_default=True, help="Unit tests (Spark, scratch tables), data tests "
                                      "(warehouse tables), or both.")
def test_command(project_dir: str, select: tuple[str, ...], kind: str) -> None:
    """Run the tests declared in models/<model>.yml: unit tests through the real batch path
    on scratch tables, data tests on the warehouse tables.

    Exit codes: 0 all passed (warnings allowed), 1 a test failed or could not run, 2
    configuration or usage errors.
    """
    from .testing import collect_suite, result_lines, run_suite, summary_line

    project = load_project(project_dir)
    plan = _plan_or_exit(project, ())
    suite = collect_suite(project, plan, select=select, kind=kind)  # type: ignore[arg-type]
    console = Console()
    summary = run_suite(suite, on_result=lambda r: [console.info(line)
                                                    for line in result_lines(r)])
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
    from .docs_site import build_site

    project = load_project(project_dir)
    plan = _plan_or_exit(project, ())
    site = build_site(project, plan, select=select)
    Console().info(f"wrote {len(site.pages) + 1} pages -> {site.index}")


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="runner")


if __name__ == "__main__":  # pragma: no cover
    main()
