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
from runner.lint.checks.aggregate_calls import AggregateCall
from runner.lint.checks.analysis import (
    AmbiguousColumn,
    MisplacedAggregate,
    MissingAggregation,
    TypeMismatch,
    WindowOrder,
)
from runner.lint.checks.ansi import AnsiCast, AnsiDivide, AnsiIndex
from runner.lint.checks.cdc_config import ChangeDataCapture
from runner.lint.checks.clauses import QueryShape
from runner.lint.checks.common_type import CommonType
from runner.lint.checks.format_options import FormatOptions
from runner.lint.checks.frames import WindowFrame
from runner.lint.checks.generators import GeneratorUse
from runner.lint.checks.grouping import GroupingShape
from runner.lint.checks.kafka import KafkaColumns
from runner.lint.checks.literals import InvalidLiteral
from runner.lint.checks.recursive_cte import RecursiveCte
from runner.lint.checks.relations import RelationShape
from runner.lint.checks.rules import (
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
from runner.lint.checks.signatures import ArgumentType, FunctionArguments
from runner.lint.checks.streaming import (
    AppendAggregate,
    AppendWindow,
    MergeKeyNotUnique,
    NondeterministicMerge,
)
from runner.lint.checks.subqueries import SubqueryShape
from runner.lint.guard import GUARD_RULES, NotAQuery, UnknownTable, UnsafeFunction, UnsafeTable
from runner.lint.reading.context import ModelContext, parse_sql
from runner.lint.reading.rule import Rule
from runner.lint.resolution.resolve import Resolver
from runner.lint.resolution.shapes import Shape
from runner.lint.spark_types.infer import parse_type, type_string
from runner.project.config import LintConfig
from runner.project.loader import Project

__all__ = ["BUILTIN_RULES", "LintResult", "check_lint_config", "lint_models", "rules_table"]

BUILTIN_RULES: tuple[Rule, ...] = (
    SyntaxRule(), SingleSelect(), NotAQuery(), UnsafeFunction(), UnsafeTable(), UnknownTable(),
    UnknownColumn(), DuplicateOutputColumn(),
    UnnamedOutputColumn(), MergeKey(), MergeUpdate(), PartitionBy(), Expectations(),
    NondeterministicMerge(), AppendAggregate(), AppendWindow(), MergeKeyNotUnique(),
    MissingAggregation(), MisplacedAggregate(), WindowOrder(), AmbiguousColumn(), TypeMismatch(),
    AnsiIndex(), AnsiDivide(), AnsiCast(), JoinKeyTypes(), ChangeDataCapture(), KafkaColumns(),
    FunctionArguments(), ArgumentType(), InvalidLiteral(), QueryShape(), RecursiveCte(),
    AggregateCall(), GroupingShape(), GeneratorUse(), FormatOptions(), CommonType(),
    WindowFrame(), RelationShape(), SubqueryShape(),
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


def _keys(project: Project, lookup: Lookup) -> tuple[frozenset[str], ...]:
    """A lookup's keys: a seed's, read from its file; a source's, declared by ``unique`` data
    tests. A join on one keeps a merge model's key unique
    (:mod:`runner.lint.resolution.join_keys`)."""
    if lookup.kind == "seed":
        from runner.project.seeds import seed_keys  # loaded only when a project has seeds

        return next((seed_keys(s) for s in project.seeds if s.name == lookup.name), ())
    return next((t.keys for t in project.sources if t.full_name == lookup.name), ())


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
    deadline = time.monotonic() + budget.total_seconds if deadline is None else deadline
    linter = _Linter(project, models, budget, lookups or {})
    with timer_handler():
        for model in models:
            linter.lint_within_budget(model, deadline)
    return linter.result()


class _Linter:
    """One lint pass over a project's models, in dependency order.

    The constructor gathers what every model is checked against (the active rules, the
    parsed_events shape, the names of models, sources and seeds); each
    :meth:`lint_within_budget` adds one model's findings and inferred shape, which the models
    after it that ref it resolve against; :meth:`result` is what the pass found.
    """

    def __init__(self, project: Project, models: Sequence[RenderedModel], budget: RenderBudget,
                 lookups: Mapping[str, Lookup]) -> None:
        self.project = project
        self.budget = budget
        severities = project.config.lint.rules
        self.active: list[tuple[Rule, Level]] = []
        for rule in BUILTIN_RULES:
            level = "error" if rule.id in GUARD_RULES else severities.get(
                rule.id, rule.default_severity)
            if level != "off":
                self.active.append((rule, level))
        self.events = _events_shape(project)
        self.event_fields = {f.name.lower(): f.name for f in project.schema.fields}
        self.all_models = {m.name.lower(): m.name for m in project.models}
        self.all_models.update({m.name.lower(): m.name for m in models})
        self.how_to_read = {t.view.lower(): f"{{{{ source('{t.source}', '{t.name}') }}}}"
                            for t in project.sources}
        self.how_to_read.update({s.name.lower(): f"{{{{ ref('{s.name}') }}}}"
                                 for s in project.seeds})
        self.lookup_shapes = {view: Shape(tuple((c.name, parse_type(c.type))
                                                for c in lk.columns), unique=_keys(project, lk))
                              for view, lk in lookups.items()}
        # what the pass has found so far, model by model
        self.shapes: dict[str, Shape | None] = {}
        self.violations: list[Violation] = []
        self.seen: set[Violation] = set()
        self.columns: dict[str, tuple[Column, ...]] = {}
        self.partial: set[str] = set()  # models with an open shape (columns may be missing)
        self.ast: dict[str, exp.Expr] = {}
        self.model_reads: dict[str, Reads] = {}
        self.used: set[str] | None = set()  # parsed_events fields read (None: maybe all)

    def lint_within_budget(self, model: RenderedModel, deadline: float) -> None:
        """Lint ``model`` within its budget and what is left before ``deadline``; past
        either, a ``budget`` violation (the model may then read any field)."""
        self.shapes[model.name.lower()] = None
        left = deadline - time.monotonic()
        budget = self.budget
        reads: set[str] | None
        try:
            if left <= 0:
                raise BudgetExceeded("compile's total budget of "
                                     f"{budget.total_seconds:g}s was spent before this model")
            with time_limit(budget, seconds=min(budget.lint_seconds, left), what="lint"):
                reads = self.lint_one(model)
        except (BudgetExceeded, RecursionError, MemoryError) as e:
            why = {RecursionError: "the SQL nests too deeply",
                   MemoryError: "lint ran out of memory"}.get(type(e), str(e))
            self.violations.append(Violation(
                "budget", "error", model.path, None, None, f"model {model.name}: {why}",
                "compile gives each model a time and size budget (docs/SECURITY.md)"))
            reads = None
        self.used = None if self.used is None or reads is None else self.used | reads

    def lint_one(self, model: RenderedModel) -> set[str] | None:
        """Lint one model; return the parsed_events fields it reads (None: maybe all)."""
        budget = self.budget
        statements, syntax = parse_sql(model.sql, max_chars=budget.max_sql_chars,
                                       max_depth=budget.max_depth)
        ctx = ModelContext(self.project, model, statements, syntax, upstream=self.shapes,
                           models=self.all_models, lookups=self.how_to_read)
        reads: set[str] | None = set()
        if statements:
            self.ast[model.name] = statements[0]
            self.columns[model.name] = ()
        if ctx.query is not None:
            reads = self._resolve(ctx, model)
        self._check_rules(ctx)
        self.model_reads[model.name] = reads_from(ctx.nodes) if ctx.query is not None else \
            reads_of(statements[0] if statements else None)
        return reads

    def _resolve(self, ctx: ModelContext, model: RenderedModel) -> set[str] | None:
        """Resolve the query's names (``ctx.analysis``) and record its output shape; return
        the parsed_events fields it reads (None: unknown, the engine must parse them all)."""
        refs = {r.lower(): self.shapes.get(r.lower()) for r in model.refs}
        refs.update({v.lower(): self.lookup_shapes.get(v.lower()) for v in model.lookups})
        resolver = Resolver(events=self.events, event_fields=self.event_fields, refs=refs,
                            models=self.all_models, sql=model.sql)
        try:
            ctx.analysis = resolver.run(ctx.scope) if ctx.scope is not None else None
        except SqlglotError:  # a construct sqlglot cannot type: lint the rest, infer nothing
            ctx.analysis = None
        if ctx.analysis is None:
            return None
        shape = ctx.analysis.shape
        self.shapes[model.name.lower()] = shape
        self.columns[model.name] = tuple(Column(n, type_string(t)) for n, t in shape.columns)
        if shape.open:
            self.partial.add(model.name)
        return None if ctx.analysis.star_over_events else ctx.analysis.used_fields

    def _check_rules(self, ctx: ModelContext) -> None:
        """Run the active rules, at their project severity; one finding per place (a macro
        expanded twice is one)."""
        for rule, level in self.active:
            for v in rule.check(ctx):
                v = replace(v, severity=level)
                if v not in self.seen:
                    self.seen.add(v)
                    self.violations.append(v)

    def result(self) -> LintResult:
        """What the pass found, the fields read in schema order."""
        used_fields = None if self.used is None else tuple(
            f.name for f in self.project.schema.fields if f.name in self.used)
        return LintResult(tuple(self.violations), self.columns, used_fields, self.ast,
                          self.model_reads, frozenset(self.partial))
