"""All printing: violations (text | json | github), errors, batch progress and summaries."""

from __future__ import annotations

import json
import sys
from typing import IO, Any, Literal, Sequence

import click

from .lint.base import Violation

__all__ = ["Console", "Format"]

Format = Literal["text", "json", "github"]


def _github_escape(text: str, *, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        text = text.replace(":", "%3A").replace(",", "%2C")
    return text


class Console:
    """Writes to stdout (results) and stderr (errors); colour only on a terminal."""

    def __init__(self, *, out: IO[str] | None = None, err: IO[str] | None = None) -> None:
        self.out = out or sys.stdout
        self.err = err or sys.stderr

    def _echo(self, text: str, *, err: bool = False) -> None:
        click.echo(text, file=self.err if err else self.out)

    # -- compile ---------------------------------------------------------------------
    def violations(self, violations: Sequence[Violation], *, fmt: Format,
                   models: int, target: str | None, extra: dict[str, Any] | None = None) -> None:
        errors = sum(v.severity == "error" for v in violations)
        warnings = len(violations) - errors
        if fmt == "json":
            doc = {"ok": errors == 0, "models": models, "errors": errors, "warnings": warnings,
                   "target": target, "violations": [v.to_dict() for v in violations]}
            doc.update(extra or {})
            self._echo(json.dumps(doc, indent=2))
            return
        for v in violations:
            if fmt == "github":
                level = "error" if v.severity == "error" else "warning"
                props = [f"file={_github_escape(v.path, prop=True)}"]
                if v.line:
                    props.append(f"line={v.line}")
                if v.column:
                    props.append(f"col={v.column}")
                props.append(f"title={_github_escape(v.rule, prop=True)}")
                message = v.message + (f"\n{v.hint}" if v.hint else "")
                self._echo(f"::{level} {','.join(props)}::{_github_escape(message)}")
            else:
                colour = "red" if v.severity == "error" else "yellow"
                label = click.style(v.severity, fg=colour, bold=True)
                self._echo(f"{v.location()}: {label} [{v.rule}] {v.message}")
                if v.hint:
                    self._echo(f"    hint: {v.hint}")
        where = f" -> {target}" if target and errors == 0 else ""
        self._echo(f"compiled {models} model{'s' * (models != 1)}: {errors} error"
                   f"{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}{where}")

    # -- errors ----------------------------------------------------------------------
    def error(self, message: str) -> None:
        self._echo(click.style("error: ", fg="red", bold=True) + message, err=True)

    def info(self, message: str) -> None:
        self._echo(message)

    def json_line(self, doc: dict[str, Any]) -> None:
        self._echo(json.dumps(doc, separators=(",", ":"), default=str))
