"""What a compiled model reads, found once at compile time from its SQL and carried on its
:class:`~runner.compile.plan.Step`: how often it reads ``parsed_events``, and which names it
may read (to know, e.g., whether any model reads a source metadata column).

The answers are conservative: SQL that sqlglot cannot parse (or nests too deep) reads
``parsed_events`` once and may read any name; a ``*`` may read any name.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from runner.compile.tree import TreeIndex

__all__ = ["ANY_READS", "PARSED_EVENTS", "Reads", "reads_from", "reads_of"]

PARSED_EVENTS = "parsed_events"


@dataclass(frozen=True)
class Reads:
    """``parsed_events``: table references to it; ``names``: every identifier the SQL names
    (lower case), or None when it may read any column (a ``*``, or unparseable SQL)."""

    parsed_events: int
    names: frozenset[str] | None

    def may_read(self, columns: frozenset[str] | set[str]) -> bool:
        """False only when it is certain that none of ``columns`` is read (case-insensitive).

        >>> reads_of("SELECT a, b FROM parsed_events").may_read({"_source_file"})
        False
        >>> reads_of("SELECT a, _SOURCE_FILE AS f FROM parsed_events").may_read({"_source_file"})
        True
        >>> reads_of("SELECT * FROM parsed_events").may_read({"_source_file"})
        True
        """
        if self.names is None:
            return True
        return any(c.lower() in self.names for c in columns)


#: What a step of unknown SQL may read: everything.
ANY_READS = Reads(parsed_events=1, names=None)


def reads_of(sql: str | exp.Expr | None) -> Reads:
    """What ``sql`` reads (its text, or the statement lint already parsed from it; None: a
    model that did not parse, which may read anything).

    >>> reads_of("SELECT a FROM parsed_events").parsed_events
    1
    >>> reads_of("SELECT * FROM parsed_events p JOIN parsed_events q USING (id)").parsed_events
    2
    >>> r = reads_of("SELECT n FROM other_model"); r.parsed_events, sorted(r.names or ())
    (0, ['n', 'other_model'])
    """
    if sql is None:
        return ANY_READS
    try:
        tree = sqlglot.parse_one(sql, read="spark") if isinstance(sql, str) else sql
    except (sqlglot.errors.SqlglotError, RecursionError):  # lint reports either, by model
        return ANY_READS
    return reads_from(TreeIndex([tree]))


def reads_from(index: TreeIndex) -> Reads:
    """What the tree ``index`` was built from reads (lint builds one index per model and
    shares it: no walk of its own)."""
    ctes = {node.alias_or_name.lower() for node in index.of(exp.CTE)}
    tables = len([t for t in index.of(exp.Table)
                  if t.name.lower() == PARSED_EVENTS and not t.args.get("db")])
    events = 1 if PARSED_EVENTS in ctes else tables
    if index.has(exp.Star):
        return Reads(events, None)
    return Reads(events, frozenset(node.name.lower() for node in index.of(exp.Identifier)))
