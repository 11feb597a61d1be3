"""Lint rendered models: parse each once, resolve its names, run the rules, apply severities."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from sqlglot import exp
from sqlglot.errors import SqlglotError

from runner.compile.budget import BudgetExceeded, RenderBudget, time_limit, timer_handler
from runner.compile.plan import Column, Lookup
from runner.compile.reads import ANY_READS, Reads, reads_from, reads_of
from runner.compile.render import RenderedModel
from runner.errors import ConfigError, Level, Violation, did_you_mean
from runner.lint.analysis import (
    AmbiguousColumn,
    MisplacedAggregate,
    MissingAggregation,
    TypeMismatch,
    WindowOrder,
)
from runner.lint.ansi import AnsiCast, AnsiDivide, AnsiIndex
from runner.lint.base import Rule
from runner.lint.cdc import ChangeDataCapture
from runner.lint.context import ModelContext, parse_sql
from runner.lint.guard import GUARD_RULES, NotAQuery, UnknownTable, UnsafeFunction, UnsafeTable
from runner.lint.infer import parse_type, type_string
from runner.lint.resolve import Resolver
from runner.lint.rules import (
    DuplicateOutputColumn,
    Expectations,
    JoinKeyTypes,
    MergeKey,
    MergeUpdate,
    PartitionBy,
    SingleSelect,
    SyntaxRule,
    UnknownColumn,
    UnnamedOutputColumn,
)
from runner.lint.shapes import Shape
from runner.lint.streaming import (
    AppendAggregate,
    AppendWindow,
    MergeKeyNotUnique,
    NondeterministicMerge,
)
from runner.project.config import LintConfig
from runner.project.loader import Project

__all__ = ["BUILTIN_RULES", "LintResult", "check_lint_config", "lint_models", "rules_table"]

BUILTIN_RULES: tuple[Rule, ...] = (
    SyntaxRule(), SingleSelect(), NotAQuery(), UnsafeFunction(), UnsafeTable(), UnknownTable(),
    UnknownColumn(), DuplicateOutputColumn(),
    UnnamedOutputColumn(), MergeKey(), MergeUpdate(), PartitionBy(), Expectations(),
    NondeterministicMerge(), AppendAggregate(), AppendWindow(), MergeKeyNotUnique(),
    MissingAggregation(), MisplacedAggregate(), WindowOrder(), AmbiguousColumn(), TypeMismatch(),
    AnsiIndex(), AnsiDivide(), AnsiCast(), JoinKeyTypes(), ChangeDataCapture(),
)


@dataclass(frozen=True)
class LintResult:
    """What lint found and inferred.

    Attributes:
        violations: all findings of all models, severity from project.yml applied ('off'
            rules dropped).
        columns: inferred output columns (name, Spark type string) per model that parsed.
        used_fields: top-level parsed_events fields (schema fields, not metadata columns) read
            by the models, in schema order; None when one selects ``*`` over parsed_events.
        ast: the parsed statement per model that parsed.
        reads: what each model's SQL reads (for its ``Step``; found from the walk the rules
            share); a model missing here (past its budget) may read anything.
        partial: models whose ``columns`` may lack some of their outputs.
    """

    violations: tuple[Violation, ...]
    columns: Mapping[str, tuple[Column, ...]]
    used_fields: tuple[str, ...] | None
    ast: Mapping[str, exp.Expr]
    reads: Mapping[str, Reads] = field(default_factory=dict)
    #: models whose inferred columns may be incomplete (an open shape: a generator or a relation
    #: lint cannot see into): never check names against their ``columns``
    partial: frozenset[str] = frozenset()

    def reads_of(self, model: str) -> Reads:
        """What ``model``'s SQL reads (anything, when lint does not know)."""
        return self.reads.get(model, ANY_READS)


def rules_table() -> list[tuple[str, str, str]]:
    """``(rule id, default severity, description)`` of every built-in rule, for the docs."""
    return [(r.id, r.default_severity, r.description) for r in BUILTIN_RULES]


def check_lint_config(lint: LintConfig) -> None:
    """Refuse unknown rule ids in project.yml's ``lint: rules:``, and any severity but
    ``error`` for the rules that guard execution (:data:`~runner.lint.guard.GUARD_RULES`).

    Raises:
        ConfigError: naming the unknown id (with "did you mean") or the guarded key.
    """
    ids = [r.id for r in BUILTIN_RULES]
    for rule_id, level in lint.rules.items():
        if rule_id not in ids:
            raise ConfigError(f"lint.rules: unknown rule '{rule_id}'" + did_you_mean(rule_id, ids),
                              path="project.yml", hint="rules: " + ", ".join(ids))
        if rule_id in GUARD_RULES and level != "error":
            raise ConfigError(f"lint.rules.{rule_id}: '{rule_id}' guards what the stream "
                              f"executes and is always an error (got '{level}')",
                              path="project.yml", hint="remove the entry; rules that cannot be "
                              "changed: " + ", ".join(sorted(GUARD_RULES)))


def _events_shape(project: Project) -> Shape:
    columns = [(f.name, f.type) for f in project.schema.fields]
    columns += [(name, parse_type(t)) for name, t in project.parsed_events_columns.items()]
    return Shape(tuple(columns))


def lint_models(project: Project, models: Sequence[RenderedModel], *,
                budget: RenderBudget = RenderBudget(),  # noqa: B008 - frozen
                deadline: float | None = None,
                lookups: Mapping[str, Lookup] | None = None) -> LintResult:
    """Lint ``models`` (in dependency order: refs before the models that use them).

    Each model's SQL is parsed once; its names are resolved against parsed_events and the
    output columns inferred for the models it refs (earlier in ``models``). Each model has
    ``budget``'s lint seconds, SQL size and nesting depth; all of them end by ``deadline``
    (``time.monotonic()``; default: ``budget.total_seconds`` from now). A model past its
    budget is a ``budget`` violation, never a crash. ``lookups`` (lower-cased view ->
    :class:`Lookup`) are the sources and seeds the models read, with their columns.
    """
    severities = project.config.lint.rules
    active: list[tuple[Rule, Level]] = []
    for rule in BUILTIN_RULES:
        level = "error" if rule.id in GUARD_RULES else severities.get(rule.id,
                                                                       rule.default_severity)
        if level != "off":
            active.append((rule, level))
    events = _events_shape(project)
    event_fields = {f.name.lower(): f.name for f in project.schema.fields}
    all_models = {m.name.lower(): m.name for m in project.models}
    all_models.update({m.name.lower(): m.name for m in models})

    shapes: dict[str, Shape | None] = {}
    how_to_read = {t.view.lower(): f"{{{{ source('{t.source}', '{t.name}') }}}}"
                   for t in project.sources}
    how_to_read.update({s.name.lower(): f"{{{{ ref('{s.name}') }}}}" for s in project.seeds})
    lookup_shapes = {view: Shape(tuple((c.name, parse_type(c.type)) for c in lk.columns))
                     for view, lk in (lookups or {}).items()}
    violations: list[Violation] = []
    seen: set[Violation] = set()
    columns: dict[str, tuple[Column, ...]] = {}
    partial: set[str] = set()  # models with an open shape (columns may be missing)
    ast: dict[str, exp.Expr] = {}
    model_reads: dict[str, Reads] = {}
    used: set[str] | None = set()
    def one(model: RenderedModel) -> set[str] | None:
        """Lint one model; return the parsed_events fields it reads (None: maybe all)."""
        statements, syntax = parse_sql(model.sql, max_chars=budget.max_sql_chars,
                                       max_depth=budget.max_depth)
        ctx = ModelContext(project, model, statements, syntax, upstream=shapes,
                           models=all_models, lookups=how_to_read)
        reads: set[str] | None = set()
        if statements:
            ast[model.name] = statements[0]
            columns[model.name] = ()
        query = ctx.query
        if query is not None:
            refs = {r.lower(): shapes.get(r.lower()) for r in model.refs}
            refs.update({v.lower(): lookup_shapes.get(v.lower()) for v in model.lookups})
            resolver = Resolver(events=events, event_fields=event_fields, refs=refs,
                                models=all_models)
            try:
                ctx.analysis = resolver.run(ctx.scope) if ctx.scope is not None else None
            except SqlglotError:  # a construct sqlglot cannot type: lint the rest, infer nothing
                ctx.analysis = None
            if ctx.analysis is None:
                reads = None  # which fields it reads is unknown: the engine must parse them all
            else:
                shape = ctx.analysis.shape
                shapes[model.name.lower()] = shape
                columns[model.name] = tuple(Column(n, type_string(t)) for n, t in shape.columns)
                if shape.open:
                    partial.add(model.name)
                reads = None if ctx.analysis.star_over_events else ctx.analysis.used_fields
        for rule, level in active:
            for v in rule.check(ctx):  # one finding per place: a macro expanded twice is one
                v = replace(v, severity=level)
                if v not in seen:
                    seen.add(v)
                    violations.append(v)
        model_reads[model.name] = reads_from(ctx.nodes) if query is not None else \
            reads_of(statements[0] if statements else None)
        return reads

    deadline = time.monotonic() + budget.total_seconds if deadline is None else deadline
    with timer_handler():
        for model in models:
            shapes[model.name.lower()] = None
            left = deadline - time.monotonic()
            try:
                if left <= 0:
                    raise BudgetExceeded("compile's total budget of "
                                         f"{budget.total_seconds:g}s was spent before this model")
                with time_limit(budget, seconds=min(budget.lint_seconds, left), what="lint"):
                    reads = one(model)
            except (BudgetExceeded, RecursionError, MemoryError) as e:
                why = {RecursionError: "the SQL nests too deeply",
                       MemoryError: "lint ran out of memory"}.get(type(e), str(e))
                violations.append(Violation(
                    "budget", "error", model.path, None, None, f"model {model.name}: {why}",
                    "compile gives each model a time and size budget (docs/SECURITY.md)"))
                reads = None
            used = None if used is None or reads is None else used | reads
    used_fields = None if used is None else tuple(
        f.name for f in project.schema.fields if f.name in used)
    return LintResult(tuple(violations), columns, used_fields, ast, model_reads,
                      frozenset(partial))
