"""The docs site's DAG: an edge that skips a column runs in the gaps between columns and in a
lane under the nodes, never through a node's box (with 5 models, the dashed
parsed_events -> _dead_letter edge used to cut through the last model)."""

from __future__ import annotations

import re

import pytest

from runner.docs_site.graph_svg import GraphEdge, GraphNode, layered_svg


def _points(d: str, steps: int = 40) -> list[tuple[float, float]]:
    """Points along an SVG path of absolute M, L, Q and C commands."""
    tokens = re.findall(r"[MLQC]|-?\d+(?:\.\d+)?", d)
    points: list[tuple[float, float]] = []
    i, current = 0, (0.0, 0.0)
    while i < len(tokens):
        cmd = tokens[i]
        n = {"M": 1, "L": 1, "Q": 2, "C": 3}[cmd]
        coords = [(float(tokens[i + 1 + 2 * k]), float(tokens[i + 2 + 2 * k])) for k in range(n)]
        i += 1 + 2 * n
        if cmd == "M":
            current = coords[0]
            points.append(current)
            continue
        ctrl = [current, *coords]
        for s in range(1, steps + 1):
            t = s / steps
            pts = ctrl
            while len(pts) > 1:  # de Casteljau
                pts = [((1 - t) * a[0] + t * b[0], (1 - t) * a[1] + t * b[1])
                       for a, b in zip(pts, pts[1:])]
            points.append(pts[0])
        current = coords[-1]
    return points


def _boxes(svg: str) -> dict[str, tuple[float, float, float, float]]:
    out = {}
    for node, x, y, w, h in re.findall(r'data-node="([^"]+)"><rect x="([\d.]+)" y="([\d.]+)" '
                                       r'width="([\d.]+)" height="(\d+)"', svg):
        out[node] = (float(x), float(y), float(w), float(h))
    return out


@pytest.mark.parametrize("models", [1, 2, 3, 5, 8])
def test_skipping_edge_never_crosses_a_box(models: int) -> None:
    names = [f"model_{i}" for i in range(models)]
    nodes = [GraphNode("parsed_events", "parsed_events", 0, "parsed once per batch", "source"),
             *(GraphNode(n, n, 1, "append · 3 cols") for n in names),
             GraphNode("_dead_letter", "_dead_letter", 2, "dead letters", "dead")]
    edges = [*(GraphEdge("parsed_events", n, "events") for n in names),
             GraphEdge("parsed_events", "_dead_letter", "dead")]
    svg = layered_svg(nodes, edges)
    boxes = _boxes(svg)
    [d] = re.findall(r'data-from="parsed_events" data-to="_dead_letter" d="([^"]+)"', svg)
    height = float(re.search(r'height="([\d.]+)"', svg).group(1))
    for px, py in _points(d):
        assert 0 <= py <= height, (px, py)
        for name, (x, y, w, h) in boxes.items():
            inside = x + 1 < px < x + w - 1 and y + 1 < py < y + h - 1
            assert not inside, f"the dead-letter edge crosses {name} at ({px:.0f}, {py:.0f})"
