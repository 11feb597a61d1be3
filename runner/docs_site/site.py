"""Build the static documentation site: ``target/docs/index.html`` and one page per model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import jinja2
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from runner.compile.plan import Lookup, Plan, Step
from runner.compile.selection import select_names
from runner.docs_site.graph_svg import GraphEdge, GraphNode, layered_svg
from runner.docs_site.lineage import PARSED_EVENTS, ColumnLineage, plan_lineage
from runner.docs_site.templates import CSS, INDEX, JS, LEGEND, MODEL
from runner.model_tests.data_tests import data_test_name
from runner.model_tests.spec import ModelSpec, load_specs
from runner.project.event_schema import Field
from runner.project.loader import Project
from runner.project.secrets import mask_secrets
from runner.storage.ops import write_atomic

__all__ = ["DocsSite", "build_site", "dag_svg"]


@dataclass(frozen=True)
class DocsSite:
    """What ``runner docs`` wrote."""

    root: Path
    index: Path
    pages: tuple[Path, ...]


def _reads_events(step: Step) -> bool:
    try:
        tree = sqlglot.parse_one(step.sql, read="spark")
    except SqlglotError:
        return True
    return any(t.name.lower() == PARSED_EVENTS for t in tree.find_all(exp.Table))


def _depths(steps: Sequence[Step]) -> dict[str, int]:
    names = {s.name for s in steps}
    depth: dict[str, int] = {}
    for s in steps:  # plan order: parents first
        parents = [depth[d] for d in s.depends_on if d in names and d in depth]
        depth[s.name] = 1 + max(parents, default=0)
    return depth


def _lookup_sub(lookup: Lookup) -> str:
    return f"{lookup.kind} · {len(lookup.columns)} cols"


def dag_svg(steps: Sequence[Step], *, dead_letter: str, href: str = "models/",
            reads_events: Mapping[str, bool] | None = None,
            lookups: Sequence[Lookup] = ()) -> str:
    """The model DAG: ``parsed_events``, sources and seeds -> models (by depth) -> the
    dead-letter table."""
    reads = reads_events if reads_events is not None else {s.name: _reads_events(s) for s in steps}
    depth = _depths(steps)
    last = max(depth.values(), default=0) + 1
    nodes = [GraphNode(PARSED_EVENTS, PARSED_EVENTS, 0, "parsed once per batch", "source")]
    read = {v.lower() for s in steps for v in s.lookups}
    nodes += [GraphNode(f"lookup:{lk.view}", lk.name, 0, _lookup_sub(lk), "lookup",
                        title=f"{lk.kind} {lk.name}: {lk.location} (one version per batch)")
              for lk in lookups if lk.view.lower() in read]
    edges = [GraphEdge(f"lookup:{v}", s.name, "lookup") for s in steps for v in s.lookups]
    for s in steps:
        c = s.config
        sub = c.kind + (f" on {', '.join(c.unique_key)}" if c.unique_key else "")
        sub += f" · {len(s.table_columns)} cols"
        nodes.append(GraphNode(s.name, s.name, depth[s.name], sub, c.materialized,
                               f"{href}{s.name}.html", f"{s.name} ({s.path})"))
        if reads[s.name]:
            edges.append(GraphEdge(PARSED_EVENTS, s.name, "events"))
        edges += [GraphEdge(d, s.name) for d in s.depends_on if d in depth]
        if any(e.on_violation == "quarantine" for e in c.expectations):
            edges.append(GraphEdge(s.name, dead_letter, "dead"))
    nodes.append(GraphNode(dead_letter, dead_letter, last, "dead letters", "dead",
                           title="records that fail to parse, and quarantined rows"))
    edges.append(GraphEdge(PARSED_EVENTS, dead_letter, "dead"))
    return layered_svg(nodes, edges, css_class="dag", label="model DAG", shrink=0.75)


def _lineage_svg(model: str, lineage: Sequence[ColumnLineage]) -> str:
    first: dict[str, tuple[float, str]] = {}  # a field sits level with its first column
    for i, c in enumerate(lineage):
        for s in (*c.sources, *c.lookups):
            first.setdefault(s, (i, s))
    lookups = {s for c in lineage for s in c.lookups}
    fields = sorted(first, key=lambda f: first[f])
    nodes = [GraphNode(f"field:{f}", f, 0, kind="lookup" if f in lookups else "field", order=i)
             for i, f in enumerate(fields)]
    nodes += [GraphNode(f"col:{c.column}", c.column, 1, kind="column", order=i)
              for i, c in enumerate(lineage)]
    edges = [GraphEdge(f"field:{s}", f"col:{c.column}", "events", data=c.column)
             for c in lineage for s in c.sources]
    edges += [GraphEdge(f"field:{s}", f"col:{c.column}", "lookup", data=c.column)
              for c in lineage for s in c.lookups]
    return layered_svg(nodes, edges, css_class="lineage", label=f"column lineage of {model}",
                       align="top")


def _config_rows(step: Step) -> list[tuple[str, str]]:
    c = step.config
    rows: list[tuple[str, str]] = [("materialized", c.materialized)]
    if c.sequence_by is not None:  # change data capture (docs/AE_GUIDE.md)
        rows.append(("unique_key", ", ".join(c.unique_key)))
        rows.append(("sequence_by", c.sequence_by))
        rows.append(("apply_as_deletes", c.apply_as_deletes or "(none: no change deletes)"))
        rows.append(("stored_as_scd_type", str(c.stored_as_scd_type)))
        if c.stored_as_scd_type == 2:
            rows.append(("track_history_column_list",
                         ", ".join(c.track_history_column_list or ())
                         or "(every non-key column but the sequence column)"))
    elif c.materialized == "merge":
        rows.append(("unique_key", ", ".join(c.unique_key)))
        rows.append(("merge_update", ", ".join(f"{k} = {v}" for k, v in c.merge_update.items())
                     if c.merge_update else "(every non-key column from the source)"))
        rows.append(("merge_condition", c.merge_condition or "(always)"))
    rows.append(("partition_by", ", ".join(c.partition_by) or "(none)"))
    rows.append(("tags", ", ".join(c.tags) or "(none)"))
    rows.append(("on_schema_change", c.on_schema_change))
    rows.append(("enabled", str(c.enabled).lower()))
    shown = {key for key, _ in rows} | {"expectations"}  # expectations: a section of their own
    for field, info in type(c).model_fields.items():  # every other key the model sets
        key = info.alias or field
        if field in c.model_fields_set and key not in shown:
            rows.append((key, _config_value(getattr(c, field))))
    return rows


def _config_value(value: Any) -> str:
    """A config value as the page shows it: lists joined, booleans as YAML writes them."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (tuple, list)):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k} = {v}" for k, v in value.items())
    return "(none)" if value is None else str(value)


def _field_rows(project: Project, lineage: Mapping[str, Sequence[ColumnLineage]]
                ) -> list[dict[str, Any]]:
    used: dict[str, list[dict[str, str]]] = {}
    for model, columns in lineage.items():
        for c in columns:
            for s in c.sources:
                used.setdefault(s.lower(), []).append({"model": model, "column": c.column})

    rows: list[dict[str, Any]] = []

    def walk(fields: Sequence[Field], prefix: str) -> None:
        for f in fields:
            is_array = f.type.is_type(exp.DataType.Type.ARRAY)
            path = f"{prefix}{f.name}"
            users = used.get(path.lower(), []) + used.get(f"{path}[]".lower(), [])
            rows.append({"path": path, "type": f.type_sql, "not_null": f.not_null,
                         "metadata": False, "used_by": users})
            walk(f.children, f"{path}[]." if is_array else f"{path}.")

    walk(project.schema.fields, "")
    for name, dtype in project.parsed_events_columns.items():
        rows.append({"path": name, "type": dtype, "not_null": False, "metadata": True,
                     "used_by": used.get(name.lower(), [])})
    return rows


def _lookup_rows(project: Project, plan: Plan,
                 lineage: Mapping[str, Sequence[ColumnLineage]]) -> list[dict[str, Any]]:
    """The sources and seeds the plan reads, each column with the model columns it feeds."""
    used: dict[str, list[dict[str, str]]] = {}
    for model, columns in lineage.items():
        for c in columns:
            for s in c.lookups:
                used.setdefault(s.lower(), []).append({"model": model, "column": c.column})
    descriptions: dict[str, tuple[str | None, dict[str, str]]] = {  # columns: by lower name
        t.view.lower(): (t.description, {n.lower(): d for n, d in t.descriptions})
        for t in project.sources}
    descriptions.update({s.name.lower(): (s.description,
                                          {n.lower(): d for n, d in s.descriptions})
                         for s in project.seeds})
    rows = []
    for lk in plan.lookups:
        description, by_column = descriptions.get(lk.view.lower(), (None, {}))
        rows.append({
            "kind": lk.kind, "name": lk.name, "view": lk.view, "location": lk.location,
            "description": description,
            "version": "content hash " + lk.content_hash[:12] if lk.content_hash
            else "its latest Delta version when each batch first runs",
            "read_by": sorted(s.name for s in plan.steps if lk.view in s.lookups),
            "columns": [{"name": c.name, "type": c.type,
                         "description": by_column.get(c.name.lower()),
                         "used_by": used.get(f"{lk.name}.{c.name}".lower(), [])}
                        for c in lk.columns]})
    return rows


def _source_text(project: Project) -> str:
    s = project.config.source
    if s.type == "files":
        return f"files: {project.resolve(s.path)}"
    return f"kafka: {', '.join(s.topics)} @ {s.bootstrap_servers}"


def build_site(project: Project, plan: Plan, *, select: Sequence[str] = (),
               out_dir: Path | None = None) -> DocsSite:
    """Write the site for the selected models (lineage always sees every model).

    Args:
        project: the project.
        plan: the compiled plan of every enabled model.
        select: dbt-style selectors; none: every model.
        out_dir: where to write (default ``<project>/target/docs``).

    Raises:
        ConfigError: a selector matches no model.
        SpecError: a ``models/<model>.yml`` is invalid.
    """
    edges = {s.name: list(s.depends_on) for s in plan.steps}
    chosen = select_names(select, edges=edges, tags={s.name: list(s.config.tags)
                                                     for s in plan.steps})
    steps = [s for s in plan.steps if s.name in chosen]
    specs = load_specs(project)
    lineage = plan_lineage(project, plan)
    reads = {s.name: _reads_events(s) for s in plan.steps}
    sources = {m.name: m.text for m in project.models}
    out = out_dir or project.root / "target" / "docs"
    (out / "models").mkdir(parents=True, exist_ok=True)

    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    info = {
        "name": project.config.name, "root": str(project.root), "source": _source_text(project),
        "warehouse": str(project.warehouse), "dead_letter": project.config.dead_letter,
        "dead_letter_path": str(project.table_path(project.config.dead_letter)),
        "checkpoint": str(project.checkpoint), "trigger": project.config.trigger,
        "engine": project.config.delta.engine,
        "metadata": [c for c in project.parsed_events_columns if c != "_batch_id"],
    }
    models = [_model_view(project, s, specs.get(s.name), lineage[s.name], edges, reads[s.name],
                          sources.get(s.name, "")) for s in steps]
    for m in models:
        m["tests_file"] = _tests_file(m["name"], specs)
    pages = []
    page = env.from_string(MODEL)
    for m in models:
        path = out / "models" / f"{m['name']}.html"
        _write(path, page.render(project=info, m=m, css=CSS, js=JS, root="../"))
        pages.append(path)
    index = out / "index.html"
    _write(index, env.from_string(INDEX).render(
        project=info, models=models, css=CSS, js=JS, root="", legend=LEGEND,
        dag=dag_svg(steps, dead_letter=project.config.dead_letter, reads_events=reads,
                    lookups=plan.lookups),
        fields=_field_rows(project, {s.name: lineage[s.name] for s in steps}),
        lookups=_lookup_rows(project, plan, {s.name: lineage[s.name] for s in steps})))
    return DocsSite(out, index, tuple(pages))


def _model_view(project: Project, step: Step, spec: ModelSpec | None,
                lineage: Sequence[ColumnLineage], edges: Mapping[str, Sequence[str]],
                reads_events: bool, source: str) -> dict[str, Any]:
    by_column = {c.column.lower(): c for c in lineage}
    tests_by_column: dict[str, list[str]] = {}
    data_tests = []
    if spec is not None:
        for t in spec.all_data_tests():
            name = data_test_name(t)
            data_tests.append(name)
            if t.column is not None:
                tests_by_column.setdefault(t.column.lower(), []).append(
                    name.split(" ", 1)[1] + _test_args(t))
    columns = []
    added = {c.name.lower() for c in step.table_columns[len(step.columns):]}
    for c in step.table_columns:
        col_spec = spec.column(c.name) if spec is not None else None
        why = (f"added by stored_as_scd_type=2: the {step.config.sequence_by} of the change "
               "that opened (valid_from) or closed (valid_to) the version"
               if c.name.lower() in added else "lineage unavailable")
        columns.append({
            "name": c.name, "type": c.type,
            "description": col_spec.description if col_spec else None,
            "tests": tests_by_column.get(c.name.lower(), []),
            "lineage": by_column.get(c.name.lower(), ColumnLineage(c.name, error=why)),
        })
    outputs = {c.name.lower() for c in step.table_columns}
    for doc in spec.columns if spec is not None else ():
        if doc.name.lower() not in outputs:  # lint could not infer it (compile refuses a
            columns.append({                  # column it knows is not output): keep it
                "name": doc.name, "type": "UNKNOWN", "description": doc.description,
                "tests": tests_by_column.get(doc.name.lower(), []),
                "lineage": ColumnLineage(doc.name, error="lineage unavailable")})
    downstream = sorted(n for n, parents in edges.items() if step.name in parents)
    return {
        "name": step.name, "path": step.path, "materialized": step.config.materialized,
        "kind": step.config.kind,
        "tags": list(step.config.tags), "description": spec.description if spec else None,
        "yml_path": spec.path if spec else None,
        "table_path": str(project.table_path(step.name)),
        "relation": step.relation.dotted if step.relation else None,
        "upstream": list(step.depends_on), "downstream": downstream,
        "lookups": list(step.lookups),
        "reads_events": reads_events, "columns": columns, "config": _config_rows(step),
        "expectations": list(step.config.expectations),
        "quarantines": [e.name for e in step.config.expectations
                        if e.on_violation == "quarantine"],
        "unit_tests": [{"name": t.name, "description": t.description,
                        "events": len(t.given.events), "prior": len(t.given.prior_rows),
                        "rows": len(t.expect.rows), "dead": len(t.expect.dead_letters or ())}
                       for t in (spec.unit_tests if spec else ())],
        "data_tests": data_tests,
        "lineage_svg": _lineage_svg(step.name, [by_column.get(c.name.lower(),
                                                               ColumnLineage(c.name))
                                                for c in step.columns]),
        "sql": step.sql.strip(), "source": source.strip(),
    }


def _tests_file(model: str, specs: Mapping[str, ModelSpec]) -> str:
    """The file where ``model``'s tests go, as the project keeps them: the file that describes
    it; else the file of dbt's ``models:`` list the project already keeps (a ``schema.yml``);
    else ``models/<model>.yml`` next to its SQL."""
    own = specs.get(model)
    if own is not None:
        return own.path
    shared = sorted({s.path for s in specs.values()
                     if PurePosixPath(s.path).stem.lower() != s.model.lower()})
    return shared[0] if shared else f"models/{model}.yml"


def _test_args(test: Any) -> str:
    args = test.args
    if test.kind == "accepted_values":
        return ": " + ", ".join(str(v) for v in args.values)
    if test.kind == "relationships":
        return f" → {args.to}.{args.field}"
    return ""


def _write(path: Path, text: str) -> None:
    """Write a page; project.yml's secret values never reach one (the project's cards show
    its paths: :func:`runner.project.secrets.mask_secrets`)."""
    write_atomic(path, mask_secrets(text))
