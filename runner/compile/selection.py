"""dbt-style model selection: ``name``, ``tag:x``, ``+name`` (with ancestors), ``name+``
(with descendants), ``+name+``; several selectors are a union."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from runner.compile.graph import ancestors, descendants
from runner.errors import ConfigError, did_you_mean

__all__ = ["select_names"]


def select_names(selectors: Sequence[str], *, edges: Mapping[str, Sequence[str]],
                 tags: Mapping[str, Sequence[str]]) -> set[str]:
    """The model names the selectors pick (all models when there are none).

    Args:
        selectors: as given on the command line (each may also hold space-separated items).
        edges: model name -> names of the models it refs.
        tags: model name -> its tags.

    Raises:
        ConfigError: a selector matches no model (with a "did you mean").
    """
    items = [part for s in selectors for part in s.split()]
    if not items:
        return set(edges)
    chosen: set[str] = set()
    for item in items:
        up, down = item.startswith("+"), item.endswith("+")
        core = item.strip("+")
        if core.startswith("tag:"):
            tag = core[4:]
            base = {m for m, ts in tags.items() if tag in ts}
            if not base:
                known = sorted({t for ts in tags.values() for t in ts})
                raise ConfigError(f"--select {item}: no model has tag '{tag}'"
                                  + did_you_mean(tag, known))
        else:
            match = next((m for m in edges if m.lower() == core.lower()), None)
            if match is None:
                raise ConfigError(f"--select {item}: no model named '{core}'"
                                  + did_you_mean(core, edges))
            base = {match}
        chosen |= base
        for name in base:
            if up:
                chosen |= ancestors(name, edges)
            if down:
                chosen |= descendants(name, edges)
    return chosen
