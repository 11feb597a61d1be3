"""Render models: a sandboxed Jinja environment with ``ref``, ``source``, ``config``, ``var``,
``env_var`` and the project's macros.

``ref('m')`` records a dependency and returns the name of model ``m``'s per-batch view, which is
the model name itself: the compiled SQL is exactly what the stream runs (rendered once, at
start). ``ref('<seed>')`` and ``source('crm', 'customers')`` record a lookup (not a dependency)
and return its view: the seed's name, ``crm__customers``. ``config(...)`` records the model's
configuration and renders as nothing. All are captured from the Jinja calls themselves, never
scraped from the text. dbt's ``is_incremental()``, ``{{ this }}`` and
``materialized='incremental'|'table'|'view'`` fail with what to write instead.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import FrameType
from typing import Any

import jinja2
from pydantic import ValidationError

from runner.compile.budget import (
    BudgetedEnvironment,
    BudgetExceeded,
    RenderBudget,
    bounded,
    time_limit,
    timer_handler,
)
from runner.compile.dbt_compat import DBT_CONFIG_KEYS, HABITS, TemplateFail, materialized_hint
from runner.compile.definition import Definition, definition_of
from runner.compile.sourcemap import SourceMap, SourceMarkers, strip_markers
from runner.errors import RunnerError, TemplateError, did_you_mean
from runner.project.config import ModelConfig, validation_message
from runner.project.loader import MacroSource, ModelSource, Project
from runner.project.secrets import public_env_var

__all__ = ["RenderBudget", "RenderedModel", "render_models", "render_test"]


@dataclass(frozen=True)
class RenderedModel:
    """A model after Jinja: its SQL, its config, the models it refs and the lookups (views of
    sources and seeds) it reads."""

    name: str
    path: str
    sql: str
    config: ModelConfig
    refs: tuple[str, ...]
    config_line: int | None = None
    source_map: SourceMap | None = field(default=None, compare=False, repr=False)
    lookups: tuple[str, ...] = ()
    #: what its table is computed by (recorded with the batches it writes)
    definition: Definition | None = field(default=None, compare=False, repr=False)


_Fail = TemplateFail


_MISSING = object()


@dataclass
class _Capture:
    """What one model's render recorded through its Jinja calls."""

    refs: list[str] = field(default_factory=list)
    lookups: list[str] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    config_line: int | None = None
    vars: dict[str, Any] = field(default_factory=dict)  # each var() read, with its value


def _template_line(paths: set[str]) -> tuple[str | None, int | None]:
    """The innermost frame of the current exception that is inside one of our templates."""
    tb = sys.exc_info()[2]
    found: tuple[str | None, int | None] = (None, None)
    for frame in traceback.extract_tb(tb):
        if frame.filename in paths:
            found = (frame.filename, frame.lineno)
    return found


class _JinjaFunctions:
    """The Jinja functions one model's render sees, as bound methods: ``ref``, ``source``,
    ``config``, ``var``, ``env_var`` (and dbt's habits, which fail with what to write
    instead). Each records what it is called with in ``capture`` and refuses unknown names,
    secrets and non-public environment variables with a hint."""

    def __init__(self, renderer: _Renderer, capture: _Capture) -> None:
        self.renderer = renderer
        self.project = renderer.project
        self.capture = capture

    def as_context(self) -> dict[str, Callable[..., Any]]:
        """Name -> function, as the template's globals."""
        return {**HABITS, "ref": self.ref, "source": self.source, "config": self.config,
                "var": self.var, "env_var": self.env_var}

    def _lookup(self, view: str) -> str:
        if view not in self.capture.lookups:
            self.capture.lookups.append(view)
        return view

    def ref(self, name: str, *more: Any) -> str:
        """A model's view (a dependency) or a seed's (a lookup)."""
        seeds, model_names = self.renderer.seeds, self.renderer.model_names
        if more or not isinstance(name, str):
            raise _Fail("ref() takes one name: a model or a seed",
                        hint="ref('model'); a source table is source('source', 'table')")
        if name.lower() in seeds:
            return self._lookup(seeds[name.lower()])
        if name.lower() not in model_names:
            what = "model or seed" if seeds else "model"
            raise _Fail(f"ref to unknown {what} '{name}'" + did_you_mean(
                name, [*model_names.values(), *seeds.values()]),
                        hint="ref() takes the name of a file under models/ without .sql, "
                             "or of a seed (seeds/<name>.csv)")
        real = model_names[name.lower()]
        if real not in self.capture.refs:
            self.capture.refs.append(real)
        return real

    def source(self, source_name: str, table_name: str) -> str:
        """A source table's view (a lookup)."""
        if not isinstance(source_name, str) or not isinstance(table_name, str):
            raise _Fail("source() takes two names: source('crm', 'customers')")
        tables = self.renderer.sources.get(source_name.lower())
        if tables is None:
            raise _Fail(f"unknown source '{source_name}'" + did_you_mean(
                source_name, self.renderer.source_names.values()),
                        hint="declare it under sources: in a models/*.yml "
                             "(docs/AE_GUIDE.md, Sources and seeds)")
        view = tables.get(table_name.lower())
        if view is None:
            known = [t.name for t in self.project.sources
                     if t.source.lower() == source_name.lower()]
            raise _Fail(f"source '{source_name}' has no table '{table_name}'"
                        + did_you_mean(table_name, known),
                        hint=f"its tables: {', '.join(known)}; declare more under its "
                             "tables:")
        return self._lookup(view)

    def config(self, **kwargs: Any) -> str:
        """Record the model's configuration (and the template line of the call)."""
        capture = self.capture
        capture.config_line = self.renderer.calling_line() or capture.config_line
        hint = materialized_hint(kwargs.get("materialized"))
        if hint is not None:
            raise _Fail(*hint)
        capture.config.update(kwargs)
        capture.config_line = self.renderer.calling_line() or capture.config_line
        return ""

    def var(self, name: str, default: Any = _MISSING) -> Any:
        """A project variable (project.yml reads only public environment variables, so no
        var holds a secret: :mod:`runner.project.secrets`)."""
        project_vars = self.project.config.vars
        if name in project_vars:
            self.capture.vars[name] = project_vars[name]
            return project_vars[name]
        if default is _MISSING:
            raise _Fail(f"undefined var '{name}'" + did_you_mean(name, project_vars),
                        hint=f"add it under vars: in project.yml or write "
                             f"var('{name}', default)")
        self.capture.vars[name] = default
        return default

    def env_var(self, name: str, default: Any = _MISSING) -> Any:
        """An environment variable with a public prefix (its value ends up in target/)."""
        prefixes = self.project.config.env_var_prefixes
        if not isinstance(name, str) or not public_env_var(name, prefixes):
            declared = ", ".join(prefixes) or "none declared"
            raise _Fail(f"env_var('{name}'): a model reads only environment variables "
                        f"with a public prefix ({declared}); its value is written to "
                        "target/, the docs and messages",
                        hint="name the variable with a prefix listed under "
                             "env_var_prefixes: in project.yml (e.g. [PUBLIC_]); secrets "
                             "belong in project.yml's source options")
        value = os.environ.get(name)
        if value is not None:
            return value
        if default is _MISSING:
            raise _Fail(f"environment variable '{name}' is not set and has no default",
                        hint=f"export {name}=... or write env_var('{name}', 'default')")
        return default


class _Renderer:
    def __init__(self, project: Project, budget: RenderBudget) -> None:
        self.project = project
        self.budget = budget
        self.model_names = {m.name.lower(): m.name for m in project.models}
        self.seeds = {s.name.lower(): s.name for s in project.seeds}
        self.sources: dict[str, dict[str, str]] = {}  # source -> table -> view (lower-cased)
        self.source_names: dict[str, str] = {}
        for t in project.sources:
            self.source_names.setdefault(t.source.lower(), t.source)
            self.sources.setdefault(t.source.lower(), {})[t.name.lower()] = t.view
        sources = {m.path: m.text for m in project.models}
        sources.update({m.path: m.text for m in project.macros})
        self.templates = sources
        self.paths = set(sources)
        self.env = BudgetedEnvironment(
            budget=budget,
            loader=jinja2.FunctionLoader(lambda name: (self.templates[name], name, lambda: True)
                                         if name in self.templates else None),
            undefined=jinja2.StrictUndefined,
            keep_trailing_newline=True,
            autoescape=False,
            extensions=[SourceMarkers],
        )
        self.env.marked_templates.update(m.path for m in project.models)  # type: ignore[attr-defined]
        self.macros: dict[str, tuple[str, int, str]] = {}
        self.macro_files = {m.path: m.text for m in project.macros}
        self.macro_templates = []
        for macro in project.macros:
            try:
                self.macro_templates.append(self.env.get_template(macro.path))
            except jinja2.TemplateSyntaxError as e:
                raise TemplateError(f"macro syntax error: {e.message}", path=macro.path,
                                    line=e.lineno) from e
            self.macros.update(_macro_index(self.env, macro.path, macro.text))

    def calling_line(self) -> int | None:
        """Template line of the innermost template frame on the current call stack."""
        frame: FrameType | None = sys._getframe(1)  # noqa: SLF001 - the template line lives only in the frame stack
        while frame is not None:
            filename = frame.f_code.co_filename
            if filename in self.paths:
                return self.env.get_template(filename).get_corresponding_lineno(frame.f_lineno)
            frame = frame.f_back
        return None

    def render(self, model: ModelSource, *, seconds: float | None = None,
               extra: Mapping[str, Any] | None = None) -> RenderedModel:
        capture = _Capture()
        context: dict[str, Any] = {**_JinjaFunctions(self, capture).as_context(), **(extra or {})}
        self.env.start()
        try:
            with time_limit(self.budget, seconds=seconds):
                for template in self.macro_templates:
                    module = template.make_module(vars=dict(context))
                    for name in dir(module):
                        if not name.startswith("_"):
                            context.setdefault(name, getattr(module, name))
                template = self.env.get_template(model.path)
                chunks = template.generate(context)
                rendered = bounded(chunks, self.budget)
        except jinja2.TemplateSyntaxError as e:
            raise TemplateError(f"template syntax error: {e.message}",
                                path=e.filename or model.path, line=e.lineno) from e
        except _Fail as e:
            path, line = _template_line(self.paths)
            raise TemplateError(e.message, path=path or model.path, line=line, hint=e.hint) from e
        except jinja2.UndefinedError as e:
            path, line = _template_line(self.paths)
            raise TemplateError(f"undefined name: {e.message}", path=path or model.path,
                                line=line) from e
        except BudgetExceeded as e:
            path, line = _template_line(self.paths)
            if line is None:  # stopped between two chunks of output: where the model was
                path, line = model.path, _suspended_line(template, chunks)
            raise TemplateError(str(e), path=path or model.path, line=line,
                                hint="compile gives each model a time and size budget; "
                                     "generate less SQL, or move work into SQL") from e
        except MemoryError as e:  # a last resort: the sandbox refuses big strings before
            path, line = _template_line(self.paths)
            raise TemplateError("rendering ran out of memory", path=path or model.path,
                                line=line) from e
        except RecursionError as e:
            path, line = _template_line(self.paths)
            raise TemplateError("macro recursion too deep (a macro that calls itself without "
                                "end?)", path=path or model.path, line=line) from e
        except jinja2.exceptions.SecurityError as e:
            path, line = _template_line(self.paths)
            raise TemplateError(f"refused by the template sandbox: {e}", path=path or model.path,
                                line=line) from e
        except (TypeError, ValueError, ArithmeticError, LookupError, AttributeError) as e:
            path, line = _template_line(self.paths)
            raise TemplateError(f"template error: {type(e).__name__}: {e}",
                                path=path or model.path, line=line) from e
        sql, source_map = strip_markers(rendered, self.env.source_origins,  # type: ignore[attr-defined]
                                        path=model.path, macros=self.macros)
        try:
            config = ModelConfig.model_validate(capture.config)
        except ValidationError as e:
            messages = "; ".join(m for _, m in validation_message(e, ModelConfig))
            dbt = [f"{k} is dbt's: {DBT_CONFIG_KEYS[k]}" for k in capture.config
                   if k in DBT_CONFIG_KEYS and k not in ModelConfig.model_fields]
            raise TemplateError("config: " + messages, path=model.path,
                                line=capture.config_line, hint="; ".join(dbt) or None) from e
        definition = definition_of(
            compiled=sql, config=config.model_dump(mode="json", by_alias=True), text=model.text,
            vars_read=capture.vars, macro_files=self.macro_files, macro_index=self.macros)
        return RenderedModel(model.name, model.path, sql, config, tuple(capture.refs),
                             capture.config_line, source_map, tuple(capture.lookups),
                             definition)


def _suspended_line(template: jinja2.Template, chunks: Any) -> int | None:
    """The template line a suspended ``template.generate()`` generator stands at."""
    line = None
    while chunks is not None and getattr(chunks, "gi_frame", None) is not None:
        if chunks.gi_frame.f_code.co_filename == template.filename:
            line = template.get_corresponding_lineno(chunks.gi_frame.f_lineno)
        chunks = chunks.gi_yieldfrom
    return line


def _macro_index(env: jinja2.Environment, path: str, text: str
                 ) -> dict[str, tuple[str, int, str]]:
    """Macro name -> (file, line of its definition, its body's text) for one macros file."""
    lines = text.splitlines()
    index = {}
    for node in env.parse(text).find_all(jinja2.nodes.Macro):
        body = []
        for source_line in lines[node.lineno - 1:]:
            body.append(source_line)
            if "endmacro" in source_line:
                break
        index[node.name] = (path, node.lineno, "\n".join(body))
    return index


def render_models(project: Project, *, budget: RenderBudget = RenderBudget(),  # noqa: B008
                  deadline: float | None = None
                  ) -> tuple[list[RenderedModel], dict[str, RunnerError]]:
    """Render every model; collect the errors of all models instead of stopping at the first.

    Each model's render has ``budget``'s seconds and output characters (a render past either
    is that model's error), and all of them end by ``deadline`` (``time.monotonic()``;
    default: ``budget.total_seconds`` from now).

    Returns:
        The models that rendered, and model name -> error for each model that did not (the
        error's path may be a macro file when the failure is inside a macro).
    """
    renderer = _Renderer(project, budget)
    rendered: list[RenderedModel] = []
    errors: dict[str, RunnerError] = {}
    deadline = time.monotonic() + budget.total_seconds if deadline is None else deadline
    with timer_handler():
        for model in project.models:
            left = deadline - time.monotonic()
            if left <= 0:
                errors[model.name] = TemplateError(
                    f"compile's total budget of {budget.total_seconds:g}s was spent before "
                    f"model {model.name} rendered", path=model.path,
                    hint="fewer or cheaper models (docs/SECURITY.md)")
                continue
            try:
                rendered.append(renderer.render(model, seconds=min(budget.seconds, left)))
            except TemplateError as e:
                errors[model.name] = e
    return rendered, errors


def render_test(project: Project, *, macros: Sequence[MacroSource], path: str, text: str,
                context: Mapping[str, Any]) -> RenderedModel:
    """Render one data test's SQL in the models' sandbox and budget: ``text`` (a template
    calling a test macro, named ``path`` in messages) with the project's macros, ``macros``
    (the test macros: :mod:`runner.model_tests.generic`) and ``context``. ``ref()`` and
    ``source()`` are recorded as for a model.

    Raises:
        TemplateError: as a model's render, located in the test macro's file.
    """
    renderer = _Renderer(replace(project, macros=(*project.macros, *macros)), RenderBudget())
    renderer.templates[path] = text
    renderer.paths.add(path)
    with timer_handler():
        return renderer.render(ModelSource(path, path, text), extra=context)
