"""The command line: thin commands over the library; the one place errors become exit codes."""

from __future__ import annotations

import traceback
from typing import Any

import click

from .compile import compile_project, write_target
from .console import Console
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


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="runner")


if __name__ == "__main__":  # pragma: no cover
    main()
