"""The options every command shares: the project, the deployment's profile and target,
vars, the Spark-setting opt-in, and model selection (:mod:`runner.cli` applies them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from runner.project.loader import command_line_vars
from runner.project.profile import PROFILES_DIR_ENV, TARGET_ENV, command_line_profile
from runner.project.spark_conf import ALLOW_ENV, ALLOW_FLAG, opted_in

__all__ = ["project_dir", "select"]

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


def project_dir(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--project-dir``, ``--profiles-dir``, ``--target``, ``--vars`` and
    ``--allow-spark-conf`` (every command loads project.yml and the deployment's target)."""
    return _allow_spark_conf(_vars(_target(_profiles_dir(_project_dir_option(command)))))
select = click.option("--select", "-s", "select", multiple=True,
                       help="Models to use: name, tag:x, +name (with ancestors), name+ "
                            "(with descendants). Repeatable.")
