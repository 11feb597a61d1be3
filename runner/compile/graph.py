"""The model DAG, from the refs each model's render recorded; cycles named by file.

Order and cycle detection are :class:`graphlib.TopologicalSorter`'s. graphlib has no
ancestor/descendant queries, so those two (for ``--select +m`` / ``m+``) are a short walk here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from graphlib import CycleError, TopologicalSorter

from runner.compile.render import RenderedModel
from runner.errors import Violation

__all__ = ["ancestors", "descendants", "sort_models"]


def _prepared(edges: Mapping[str, Iterable[str]]) -> tuple[TopologicalSorter[str], list[str]]:
    """A prepared sorter over ``edges`` (model -> the models it refs), and a cycle (in ref
    order, first node repeated at the end) when there is one (else ``[]``)."""
    sorter: TopologicalSorter[str] = TopologicalSorter({n: edges[n] for n in sorted(edges)})
    try:
        sorter.prepare()
    except CycleError as e:
        # graphlib lists the cycle from a model to the one that refs it: reverse it, then start
        # at the smallest name so that the report does not depend on dict order.
        cycle = list(reversed(e.args[1]))[:-1]
        start = cycle.index(min(cycle))
        return sorter, cycle[start:] + cycle[:start + 1]
    return sorter, []


def _drain(sorter: TopologicalSorter[str]) -> list[str]:
    """Every node the sorter can hand out, round by round, each round by name."""
    out: list[str] = []
    while sorter.is_active():
        ready = sorted(sorter.get_ready())
        if not ready:  # the rest waits on a cycle
            break
        out += ready
        sorter.done(*ready)
    return out


def sort_models(models: Sequence[RenderedModel]) -> tuple[list[RenderedModel], list[Violation]]:
    """Order models so every model comes after the models it refs (ties by name).

    Returns:
        The ordered models that are not on a cycle nor downstream of one, and one ``cycle``
        violation per cycle (at the cycle's first model by name).
    """
    by_name = {m.name: m for m in models}
    edges = {m.name: [r for r in m.refs if r in by_name] for m in models}
    sorter, cycle = _prepared(edges)
    ordered = [by_name[n] for n in _drain(sorter)]
    pending = set(by_name) - {m.name for m in ordered}
    violations = []
    # graphlib names one cycle at a time: report it, drop it and what only waited on it, repeat.
    while cycle:
        files = ", ".join(by_name[n].path for n in cycle[:-1])
        first = by_name[cycle[0]]
        violations.append(Violation(
            "cycle", "error", first.path, first.config_line, None,
            f"models ref each other in a cycle: {' -> '.join(cycle)} ({files})",
            "a model may only ref models that do not ref it back, directly or indirectly"))
        pending -= set(cycle)
        sorter, cycle = _prepared({n: [d for d in edges[n] if d in pending] for n in pending})
        pending -= set(_drain(sorter))
    return ordered, violations


def ancestors(name: str, edges: Mapping[str, Iterable[str]]) -> set[str]:
    """Every model ``name`` reads from, directly or indirectly."""
    out: set[str] = set()
    stack = list(edges.get(name, ()))
    while stack:
        n = stack.pop()
        if n not in out:
            out.add(n)
            stack.extend(edges.get(n, ()))
    return out


def descendants(name: str, edges: Mapping[str, Iterable[str]]) -> set[str]:
    """Every model that reads ``name``, directly or indirectly."""
    reverse: dict[str, list[str]] = {}
    for child, parents in edges.items():
        for p in parents:
            reverse.setdefault(p, []).append(child)
    return ancestors(name, reverse)
