"""YAML files with ``{{ env_var('NAME', 'default') }}``: project.yml and profiles.yml.

profiles.yml is read as YAML first and its chosen values rendered (:func:`render_values`,
dbt's way). project.yml is a Jinja template rendered in a sandbox before the YAML is read
(:func:`render_yaml`), so an environment value is spliced into YAML text. A value holding a
quote, a newline or ``: `` could then add keys or end a string early (``x", storage: {...}``):
the file would hold settings nobody wrote.
:func:`render_yaml` renders twice, once with the real values and once with a plain marker for
each, and refuses a value that changes the document's shape (its keys, list lengths, or a
scalar turned into a mapping), naming the variable. Values that only fill a scalar, quoted or
not, pass.

>>> import os
>>> os.environ["DOC_REGION"] = "eu-west-1"
>>> render_yaml("region: {{ env_var('DOC_REGION') }}\\n", path="profiles.yml").text
'region: eu-west-1\\n'
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import jinja2
import yaml
from jinja2.sandbox import SandboxedEnvironment

from runner.errors import ConfigError, RunnerError

__all__ = ["RenderedYaml", "load_yaml", "render_values", "render_yaml", "yaml_line"]


@dataclass(frozen=True)
class RenderedYaml:
    """A file rendered: its text, and what each ``env_var()`` call asked for."""

    text: str
    #: every variable name an ``env_var()`` call named, in order, set or not
    names: tuple[str, ...]
    #: name -> value, for the variables read from the environment (not defaults)
    reads: Mapping[str, str]


def _shape(node: Any) -> Any:
    """The document without its scalar values: keys, list lengths, nesting."""
    if isinstance(node, dict):
        return {str(k): _shape(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_shape(v) for v in node]
    return None


def _render(template: jinja2.Template, env_var: Callable[..., str], path: str) -> str:
    try:
        return template.render(env_var=env_var)
    except jinja2.UndefinedError as e:
        raise ConfigError(f"template error: {e.message}", path=path) from e


def _env_var_function(env: Mapping[str, str], path: str, names: list[str],
                      reads: dict[str, str]) -> Callable[..., str]:
    def env_var(name: str, default: str | None = None) -> str:
        if not isinstance(name, str):
            raise ConfigError(f"env_var() takes a variable's name, got {name!r}", path=path)
        names.append(name)
        if name in env:
            reads[name] = env[name]
            return env[name]
        if default is None:
            raise ConfigError(f"environment variable '{name}' is not set and has no default",
                              path=path, hint=f"export {name}=... or write "
                                              f"env_var('{name}', 'default')")
        return str(default)
    return env_var


def render_values(node: Any, *, path: str, environ: Mapping[str, str] | None = None
                  ) -> tuple[Any, dict[str, str]]:
    """dbt's way with profiles.yml: the YAML is read first, then each string value holding
    ``{{`` or ``{%`` is rendered, so a value can never add keys, and only the part of the file
    in use is rendered (a target whose variables are unset here does not stop another).

    Returns:
        the node with its values rendered, and name -> value of every variable read.
    """
    env = os.environ if environ is None else environ
    names: list[str] = []
    reads: dict[str, str] = {}
    env_var = _env_var_function(env, path, names, reads)
    sandbox = SandboxedEnvironment(undefined=jinja2.StrictUndefined)

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, str) and ("{{" in value or "{%" in value):
            try:
                return _render(sandbox.from_string(value), env_var, path)
            except jinja2.TemplateSyntaxError as e:
                raise ConfigError(f"template error: {e.message} in {value!r}",
                                  path=path) from e
        return value

    return walk(node), reads


def render_yaml(text: str, *, path: str,
                environ: Mapping[str, str] | None = None) -> RenderedYaml:
    """Render ``text`` with ``env_var()`` and check that no value changed its shape.

    Raises:
        ConfigError: a template error, a variable that is unset and has no default, or a value
            that changes the document's structure (naming the variable).
    """
    env = os.environ if environ is None else environ
    try:
        template = SandboxedEnvironment(undefined=jinja2.StrictUndefined,
                                        keep_trailing_newline=True).from_string(text)
    except jinja2.TemplateSyntaxError as e:
        raise ConfigError(f"template error: {e.message}", path=path, line=e.lineno) from e
    names: list[str] = []
    reads: dict[str, str] = {}
    env_var = _env_var_function(env, path, names, reads)
    rendered = _render(template, env_var, path)
    if reads:
        def marker(name: str, _default: str | None = None) -> str:
            return f"runner_env_{''.join(c if c.isalnum() else '_' for c in name)}"

        try:
            real = yaml.safe_load(rendered)
        except yaml.YAMLError:
            real = _BROKEN
        try:
            marked = yaml.safe_load(_render(template, marker, path))
        except yaml.YAMLError:
            marked = _BROKEN
        if marked is not _BROKEN and (real is _BROKEN or _shape(real) != _shape(marked)):
            name = _culprit(template, reads, path)
            raise ConfigError(
                f"the value of environment variable '{name}' changes {path}'s structure "
                "(a quote, a newline or ': ' in it ends the value and adds YAML of its own)",
                path=path, hint=f"quote the value in the file (\"{{{{ env_var('{name}') }}}}\" "
                                f"holds any text but a double quote), or fix {name}")
    return RenderedYaml(rendered, tuple(names), reads)


_BROKEN = object()


def _culprit(template: jinja2.Template, reads: Mapping[str, str], path: str) -> str:
    """The first variable whose value alone (the others as markers) changes the shape."""
    def only(chosen: str) -> Callable[..., str]:
        def env_var(name: str, _default: str | None = None) -> str:
            return reads[name] if name == chosen else f"runner_env_{len(name)}"
        return env_var

    base = _shape(yaml.safe_load(_render(template, only(""), path)))
    for name in reads:
        try:
            if _shape(yaml.safe_load(_render(template, only(name), path))) != base:
                return name
        except yaml.YAMLError:
            return name
    return next(iter(reads))


def yaml_line(text: str, loc: tuple[str | int, ...]) -> int | None:
    """1-based line of the node at ``loc`` (mapping keys and sequence indices) in YAML text,
    or of the deepest part of it that exists; None when not even the first part does."""
    try:
        node = yaml.compose(text)
    except yaml.YAMLError:
        return None
    line = None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            match = next(((k, v) for k, v in node.value if k.value == str(part)), None)
            if match is None:
                break
            line, node = match[0].start_mark.line + 1, match[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) \
                and 0 <= part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


def load_yaml(text: str, *, path: str, error: type[RunnerError] = ConfigError) -> Any:
    """``yaml.safe_load(text)``; invalid YAML raises ``error`` naming the file and the line."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise error(f"invalid YAML: {getattr(e, 'problem', e)}", path=path,
                    line=mark.line + 1 if mark else None) from e
