"""Column-level lineage: which ``parsed_events`` fields, and which columns of sources and
seeds, each model column is computed from.

Built on :func:`sqlglot.lineage.lineage` with the event schema (plus the metadata columns) and
every model's compiled SQL as a source, so lineage runs through ``ref``'d models down to
``parsed_events``. sqlglot stops at top-level fields (``request``); the walk here follows the
struct accesses and ``explode``s on the way up, to give paths such as ``request.status_code``
and ``errors[].errorCode``.

>>> from runner.project.event_schema import EventSchema
>>> schema = EventSchema.parse("id STRING, req STRUCT<code: INT>, errs ARRAY<STRUCT<c: STRING>>")
>>> sql = ("SELECT id, req.code >= 500 AS bad, e.c AS c "
...        "FROM parsed_events LATERAL VIEW explode(errs) x AS e")
>>> lin = column_lineage("m", sql, schema=schema, metadata={"_batch_id": "BIGINT"}, sources={})
>>> [(c.column, c.sources, c.direct) for c in lin]
[('id', ('id',), True), ('bad', ('req.code',), False), ('c', ('errs[].c',), True)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.lineage import Node, lineage

from runner.compile.plan import Plan
from runner.project.event_schema import EventSchema, Field
from runner.project.loader import Project

__all__ = ["ColumnLineage", "column_lineage", "plan_lineage"]

PARSED_EVENTS = "parsed_events"
_EXPLODES = (exp.Explode, exp.Posexplode, exp.ExplodeOuter, exp.Inline)


@dataclass(frozen=True)
class ColumnLineage:
    """Where one output column of a model comes from.

    Attributes:
        column: the output column.
        sources: ``parsed_events`` paths it reads (``request.status_code``, ``errors[].errorCode``,
            ``_batch_id``), sorted; empty for constants and ``count(*)``.
        via: models it passes through on the way (through ``ref``), nearest first.
        lookups: columns of sources and seeds it reads (``crm.customers.segment``,
            ``endpoint_owners.team``), sorted.
        expression: its SQL expression in the model (without the alias).
        direct: a plain copy of one field (no computation on the way).
        error: why lineage is unknown, when it is.
    """

    column: str
    sources: tuple[str, ...] = ()
    via: tuple[str, ...] = ()
    expression: str = ""
    direct: bool = False
    error: str | None = None
    lookups: tuple[str, ...] = ()


#: A lookup's view -> (its name as docs show it: ``crm.customers``, its columns: name -> type).
LookupColumns = Mapping[str, tuple[str, Mapping[str, str]]]


def _sqlglot_schema(schema: EventSchema, metadata: Mapping[str, str],
                    lookups: LookupColumns) -> dict[str, dict[str, str]]:
    columns = {f.name: f.type_sql for f in schema.fields}
    columns.update(metadata)
    tables = {view: dict(cols) for view, (_, cols) in lookups.items()}
    return {PARSED_EVENTS: columns, **tables}


def _canonical(path: list[str], schema: EventSchema) -> str:
    """The path with the schema's spelling of each name (sqlglot lower-cases them)."""
    out: list[str] = []
    field: Field | None = None
    for i, part in enumerate(path):
        element = part.endswith("[]")
        name = part[:-2] if element else part
        found = schema.field(name) if i == 0 else (field.child(name) if field else None)
        if found is not None:
            name = found.name
        field = found
        out.append(name + ("[]" if element else ""))
    return ".".join(out)


def _dots(node: exp.Expr, name: str) -> list[list[str]]:
    """For each reference to column ``name`` inside ``node``: the struct fields accessed on it."""
    found = []
    for col in node.find_all(exp.Column):
        if col.name.lower() != name.lower():
            continue
        suffix = []
        current: exp.Expr = col
        while isinstance(current.parent, exp.Dot) and current.parent.this is current:
            suffix.append(current.parent.expression.name)
            current = current.parent
        found.append(suffix)
    return found


def _body(expr: exp.Expr) -> exp.Expr:
    return expr.this if isinstance(expr, exp.Alias) else expr


def _is_copy(body: exp.Expr) -> bool:
    """A column or a chain of struct accesses on one (no computation)."""
    while isinstance(body, exp.Dot):
        body = body.this
    return isinstance(body, exp.Column)


def _paths(chain: Sequence[Node], i: int, name: str, prefix: list[str]
           ) -> tuple[set[tuple[str, ...]], bool]:
    """Paths of the leaf field through ``chain[i]`` up to the root; and whether all copies."""
    if i < 0:
        return {tuple(prefix)}, True
    node = chain[i]
    expr = node.expression
    if isinstance(expr, exp.Identifier) and isinstance(node.source, exp.Lateral):
        generator = node.source.this
        out: set[tuple[str, ...]] = set()
        direct = True
        for suffix in _dots(node.source, name) or [[]]:
            path = prefix + suffix
            if isinstance(generator, _EXPLODES) and path:
                path = path[:-1] + [path[-1] + "[]"]
            found, copy = _paths(chain, i - 1, expr.name, path)
            out |= found
            direct = direct and copy
        return out, direct
    body = expr.this if isinstance(expr, exp.Alias) else expr
    copy = _is_copy(body)
    suffixes = _dots(expr, name) or [[]]
    if not copy:
        return {tuple(prefix + s) for s in suffixes}, False
    out, direct = set(), True
    for s in suffixes:
        found, d = _paths(chain, i - 1, expr.alias_or_name, prefix + s)
        out |= found
        direct = direct and d
    return out, direct


def _select_expressions(sql: str) -> dict[str, str]:
    """Output column (lower-cased) -> its expression as the model wrote it (alias dropped)."""
    try:
        query = sqlglot.parse_one(sql, read="spark")
    except SqlglotError:
        return {}
    if not isinstance(query, exp.Query):
        return {}
    out: dict[str, str] = {}
    for projection in query.selects:
        body = projection.this if isinstance(projection, exp.Alias) else projection
        if not isinstance(projection, exp.Star):
            out.setdefault(projection.alias_or_name.lower(), body.sql(dialect="spark"))
    return out


def _walk(root: Node) -> list[list[Node]]:
    """Every root-to-leaf chain of a lineage tree."""
    chains: list[list[Node]] = []
    stack: list[list[Node]] = [[root]]
    while stack:
        chain = stack.pop()
        if not chain[-1].downstream:
            chains.append(chain)
        stack.extend(chain + [d] for d in chain[-1].downstream)
    return chains


def column_lineage(model: str, sql: str, *, schema: EventSchema, metadata: Mapping[str, str],
                   sources: Mapping[str, str], columns: Sequence[str] | None = None,
                   lookups: LookupColumns | None = None) -> tuple[ColumnLineage, ...]:
    """Lineage of every output column of one model (``columns``: names to report, in order;
    default: the query's own select list).

    ``sources`` maps model names to their compiled SQL (the models this one refs, and
    theirs); ``lookups`` the views of the sources and seeds to their names and columns.
    Never raises: a column sqlglot cannot trace carries ``error``.
    """
    lookups = lookups or {}
    views = {v.lower(): (name, {c.lower(): c for c in cols})
             for v, (name, cols) in lookups.items()}
    glot_schema = _sqlglot_schema(schema, metadata, lookups)
    try:
        roots = lineage(None, sql, schema=glot_schema, sources=dict(sources), dialect="spark")
    except (SqlglotError, KeyError, ValueError, AttributeError, TypeError) as e:
        names = list(columns or [])
        return tuple(ColumnLineage(c, error=f"lineage unavailable: {e}") for c in names)
    if isinstance(roots, Node):
        roots = {roots.name: roots}
    by_lower = {k.lower(): v for k, v in roots.items()}
    original = _select_expressions(sql)
    names = list(columns) if columns is not None else list(roots)
    out = []
    for column in names:
        root = by_lower.get(column.lower())
        if root is None:
            out.append(ColumnLineage(column, error="lineage unavailable for this column"))
            continue
        paths: set[str] = set()
        read: set[str] = set()
        via: list[str] = []
        direct = True
        leaves = 0
        for chain in _walk(root):
            leaf = chain[-1]
            for node in chain[1:-1]:
                owner = node.name.split(".", 1)[0]
                if owner in sources and owner != model and owner not in via:
                    via.append(owner)
            table = leaf.source.name.lower() if isinstance(leaf.source, exp.Table) else ""
            if table in views and "." in leaf.name:
                leaves += 1
                name, spelled = views[table]
                column_name = leaf.name.split(".", 1)[1].strip('"`')
                read.add(f"{name}.{spelled.get(column_name.lower(), column_name)}")
                direct = direct and all(_is_copy(_body(n.expression)) for n in chain[:-1])
                continue
            if not (isinstance(leaf.source, exp.Table) and leaf.source.name.lower() == PARSED_EVENTS
                    and "." in leaf.name):
                if leaf is not root:
                    direct = False
                continue
            leaves += 1
            field = leaf.name.split(".", 1)[1].strip('"`')
            found, copy = _paths(chain, len(chain) - 2, field, [field])
            direct = direct and copy
            paths |= {_canonical(list(p), schema) for p in found}
        written = original.get(column.lower()) or root.expression.sql(dialect="spark")
        out.append(ColumnLineage(
            column, tuple(sorted(paths)), tuple(via), written,
            direct=direct and leaves == 1 and len(paths) + len(read) == 1,
            lookups=tuple(sorted(read))))
    return tuple(out)


def plan_lineage(project: Project, plan: Plan) -> dict[str, tuple[ColumnLineage, ...]]:
    """Lineage of every column of every model in ``plan`` (sources: all of the plan's models;
    lookups: the plan's sources and seeds)."""
    sources = {s.name: s.sql for s in plan.steps}
    metadata = project.parsed_events_columns
    lookups = {lk.view: (lk.name, {c.name: c.type for c in lk.columns}) for lk in plan.lookups}
    return {s.name: column_lineage(s.name, s.sql, schema=project.schema, metadata=metadata,
                                   sources={k: v for k, v in sources.items() if k != s.name},
                                   columns=[c.name for c in s.columns] or None,
                                   lookups=lookups)
            for s in plan.steps}
