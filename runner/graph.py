"""The model DAG, from the refs each model's render recorded; cycles named by file."""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from .lint.base import Violation
from .render import RenderedModel

__all__ = ["ancestors", "descendants", "sort_models"]


def _find_cycle(start: str, edges: Mapping[str, Sequence[str]], pending: set[str]) -> list[str]:
    """A cycle through the pending nodes, as a list of names ending where it began."""
    path: list[str] = []
    seen: dict[str, int] = {}
    node = start
    while node not in seen:
        seen[node] = len(path)
        path.append(node)
        node = next(d for d in edges[node] if d in pending)
    return path[seen[node]:] + [node]


def sort_models(models: Sequence[RenderedModel]) -> tuple[list[RenderedModel], list[Violation]]:
    """Order models so every model comes after the models it refs (ties by name).

    Returns:
        The ordered models that are not on a cycle, and one ``cycle`` violation per cycle.
    """
    by_name = {m.name: m for m in models}
    edges = {m.name: [r for r in m.refs if r in by_name] for m in models}
    ordered: list[RenderedModel] = []
    done: set[str] = set()
    pending = set(by_name)
    progress = True
    while pending and progress:
        ready = sorted(n for n in pending if all(d in done for d in edges[n]))
        progress = bool(ready)
        for name in ready:
            ordered.append(by_name[name])
            done.add(name)
            pending.discard(name)
    violations = []
    # What is left is on a cycle or downstream of one: report each cycle once.
    while pending:
        try:
            cycle = _find_cycle(min(pending), edges, pending)
        except StopIteration:  # downstream of a cycle already reported
            pending.discard(min(pending))
            continue
        files = ", ".join(by_name[n].path for n in cycle[:-1])
        first = by_name[cycle[0]]
        violations.append(Violation(
            "cycle", "error", first.path, first.config_line, None,
            f"models ref each other in a cycle: {' -> '.join(cycle)} ({files})",
            "a model may only ref models that do not ref it back, directly or indirectly"))
        pending -= set(cycle)
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
