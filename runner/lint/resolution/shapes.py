"""What name resolution knows about a relation and what it found in one model.

A :class:`Shape` is the set of columns a relation (``parsed_events``, a ref'd model, a CTE, a
subquery, a lateral view) offers, with their Spark types. ``open`` shapes may have columns we
cannot know (an unknown table, ``SELECT *`` over one): names are never flagged against them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sqlglot import exp

from runner.lint.spark_types.infer import UNKNOWN

__all__ = ["Analysis", "Finding", "Output", "Shape", "OPEN"]


@dataclass(frozen=True)
class Shape:
    """Columns of a relation, in order, plus what is known about their uniqueness.

    Attributes:
        columns: ``(name, type)`` pairs as Spark would name them.
        open: more columns may exist than we know of (never flag names against it).
        unique: sets of lower-cased column names known to be unique per micro-batch.
        rownums: lower-cased column -> the (lower-cased) columns its row_number() is
            partitioned by, so that ``WHERE rn = 1`` proves those columns unique.
        unresolved: lower-cased columns computed from a name that did not resolve (a typo's
            follow-on): never offered as "did you mean", which would point at the typo.
    """

    columns: tuple[tuple[str, exp.DataType], ...] = ()
    open: bool = False
    unique: tuple[frozenset[str], ...] = ()
    rownums: Mapping[str, frozenset[str]] = field(default_factory=dict)
    unresolved: frozenset[str] = frozenset()
    #: lower-cased names two different columns of the relation have (not one column selected
    #: twice): a reference to one is ambiguous
    repeated: frozenset[str] = frozenset()
    _index: dict[str, tuple[str, exp.DataType]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        index: dict[str, tuple[str, exp.DataType]] = {}
        for name, dtype in self.columns:
            index.setdefault(name.lower(), (name, dtype))
        object.__setattr__(self, "_index", index)

    def find(self, name: str) -> tuple[str, exp.DataType] | None:
        """``(canonical name, type)`` of column ``name`` (case-insensitive), or None."""
        return self._index.get(name.lower())

    @property
    def names(self) -> list[str]:
        return [n for n, _ in self.columns]

    @property
    def suggestions(self) -> list[str]:
        """The names worth a "did you mean": every column but the unresolved ones."""
        return [n for n, _ in self.columns if n.lower() not in self.unresolved]

    def renamed(self, names: list[str]) -> Shape:
        """The shape seen through ``AS t(a, b, ...)`` column aliases."""
        cols = [(new, dtype) for new, (_, dtype) in zip(names, self.columns)]
        cols += [(new, UNKNOWN) for new in names[len(self.columns):]]
        return Shape(tuple(cols), open=False)


OPEN = Shape(open=True)


@dataclass(frozen=True)
class Finding:
    """A problem at a node of the parsed SQL, before a rule turns it into a Violation."""

    node: exp.Expr
    message: str
    hint: str | None = None


@dataclass(frozen=True)
class Output:
    """One output column of a SELECT.

    Attributes:
        name: the column's name as Spark gives it.
        type: its type (``UNKNOWN`` when not inferable).
        node: where to point a finding at (the alias, the column, the star).
        named: False when Spark would generate the name from the expression.
        expr: the projected expression (None for a star's columns).
        origin: ``(id(source shape), lower-cased column)`` when the column is passed through
            unchanged from a source (a plain column reference or a star).
    """

    name: str
    type: exp.DataType
    node: exp.Expr
    named: bool = True
    expr: exp.Expr | None = None
    origin: tuple[int, str] | None = None


@dataclass
class Analysis:
    """Everything name resolution learned about one model's query."""

    shape: Shape
    outputs: list[Output]
    unknown_columns: list[Finding] = field(default_factory=list)
    ambiguous_columns: list[Finding] = field(default_factory=list)
    #: ``AS t(a, b)`` naming more or fewer columns than its relation has
    #: ([ASSIGNMENT_ARITY_MISMATCH]): the ``relation-shape`` rule reports them
    arity_mismatches: list[Finding] = field(default_factory=list)
    used_fields: set[str] = field(default_factory=set)
    star_over_events: bool = False
    #: id(SELECT node) -> its output columns, for every SELECT of the query (UNION branches,
    #: CTEs, subqueries) whose columns are all known: what a rule reads of a branch whose
    #: ``*`` it cannot expand itself
    selects: dict[int, list[Output]] = field(default_factory=dict)
    #: id() of the column references resolved in an enclosing query (correlated)
    outer_references: set[int] = field(default_factory=set)
    #: id() of a resolved column reference (struct paths too) -> the relation it reads
    sources: dict[int, Shape] = field(default_factory=dict)
    #: id() of an expression without an alias (a select-list item, a grouping set's item) ->
    #: the name Spark gives its column, when lint knows it (GROUP BY/ORDER BY may use it)
    generated: dict[int, str] = field(default_factory=dict)
