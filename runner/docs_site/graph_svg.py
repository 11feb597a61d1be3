"""A layered graph as inline SVG, laid out here (no JavaScript, no external library).

Nodes sit in columns by layer (left to right); within a column they are ordered by the mean
position of their parents (one barycentre sweep), ties by label, unless every node of the
column has a fixed ``order``. Edges are cubic curves from a node's right side to its child's
left side; an edge that skips a column runs down the gap after its source's column, along a
lane under every node and up the gap before its target's column instead (never through a box).
Each source of such edges has its own lane and its own verticals in the gaps, and the edges
into a node end at their own points of its left side (ordered as their sources sit), so edges
from two sources never merge into one line.

>>> svg = layered_svg([GraphNode("a", "a", 0), GraphNode("b", "b", 1)], [GraphEdge("a", "b")])
>>> svg.startswith("<svg") and 'data-node="b"' in svg and "<path" in svg
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Literal

__all__ = ["GraphEdge", "GraphNode", "layered_svg"]

_NODE_H = 46
_V_GAP = 22
_H_GAP = 90
_PAD = 16
_CHAR_W = 7.6  # average width of a 13px sans-serif character


@dataclass(frozen=True)
class GraphNode:
    id: str
    label: str
    layer: int
    sub: str = ""  # a second, smaller line
    kind: str = "model"  # a CSS class suffix: source, append, merge, dead, field, column
    href: str | None = None
    title: str = ""
    order: float | None = None  # a fixed position in its layer (else: by its parents)


@dataclass(frozen=True)
class GraphEdge:
    source: str
    target: str
    kind: str = "ref"  # a CSS class suffix: ref, events, dead
    data: str = ""  # space-separated tokens for data-for (used by the page's highlighting)
    below: bool = False  # route under every node (bottom to bottom), not straight across


def _width(node: GraphNode) -> float:
    return max(120.0, max(len(node.label), len(node.sub) * 0.85) * _CHAR_W + 28)


def _order(nodes: Sequence[GraphNode], edges: Sequence[GraphEdge]) -> dict[int, list[GraphNode]]:
    layers: dict[int, list[GraphNode]] = {}
    for node in sorted(nodes, key=lambda n: (n.layer, n.order if n.order is not None
                                             else float("inf"), n.label)):
        layers.setdefault(node.layer, []).append(node)
    position: dict[str, float] = {}
    parents: dict[str, list[str]] = {}
    for e in edges:
        parents.setdefault(e.target, []).append(e.source)
    for layer in sorted(layers):
        members = layers[layer]

        def centre(n: GraphNode) -> float:
            ps = [position[p] for p in parents.get(n.id, []) if p in position]
            return sum(ps) / len(ps) if ps else float("inf")

        if layer != min(layers) and any(n.order is None for n in members):
            members.sort(key=lambda n: (centre(n), n.label))
        for i, n in enumerate(members):
            position[n.id] = i
    return layers


def _under(x1: float, y1: float, x2: float, y2: float, *, down: float, up: float,
           floor: float, r: float = 8.0) -> str:
    """A path from a node's right side to another's left side that runs down the gap after
    the first node's column (at x ``down``), along the lane ``floor`` under every node, and up
    the gap before the target's column (at x ``up``): gaps and lanes hold no node, so the path
    crosses none."""
    r = min(r, (up - down) / 2, (down - x1) / 2, (x2 - up) / 2)
    return (f"M {x1:.1f} {y1:.1f} L {down - r:.1f} {y1:.1f} Q {down:.1f} {y1:.1f} {down:.1f} "
            f"{y1 + r:.1f} L {down:.1f} {floor - r:.1f} Q {down:.1f} {floor:.1f} {down + r:.1f} "
            f"{floor:.1f} L {up - r:.1f} {floor:.1f} Q {up:.1f} {floor:.1f} {up:.1f} "
            f"{floor - r:.1f} L {up:.1f} {y2 + r:.1f} Q {up:.1f} {y2:.1f} {up + r:.1f} "
            f"{y2:.1f} L {x2:.1f} {y2:.1f}")


def _ports(edges: Sequence[GraphEdge], drawn: Sequence[int], under: set[int],
           centre_y: dict[str, float]) -> dict[int, float]:
    """Edge index -> where it ends on its target's left side, as an offset from the middle:
    the edges into one node are spread over its side, ordered by where they come from (edges
    from the lanes below last), so no two of them end on one line."""
    into: dict[str, list[int]] = {}
    for i in drawn:
        into.setdefault(edges[i].target, []).append(i)
    out: dict[int, float] = {}
    for members in into.values():
        members.sort(key=lambda i: (i in under, centre_y[edges[i].source], edges[i].source))
        step = min(8.0, (_NODE_H - 16) / max(len(members) - 1, 1))
        for k, i in enumerate(members):
            out[i] = (k - (len(members) - 1) / 2) * step
    return out


_LANE_STEP = 10.0


@dataclass(frozen=True)
class _Layout:
    """Where everything goes: each node's box, the edges drawn, which of them run underneath
    (and in which lane, with which verticals), and where each ends on its target."""

    boxes: dict[str, tuple[float, float, float]]  # id -> x, y, width
    width: float
    height: float
    block_height: float  # the nodes' part of the height; the lanes run below it
    drawn: list[int]  # edges whose both ends are nodes
    under: set[int]  # edges that skip a column: routed under every node
    lanes: dict[str, int]  # source of skipping edges -> its lane
    down_index: dict[str, int]  # source -> its vertical among the lane sources of its column
    v_step: float  # between two verticals in one gap
    port: dict[int, float]  # edge -> where it ends on its target's left side (see _ports)


def _skipping(nodes: Sequence[GraphNode], edges: Sequence[GraphEdge]
              ) -> tuple[set[int], dict[str, int]]:
    """The edges that skip a column (or ask to go below): they would cross its nodes, so they
    go underneath; and one lane per source of such edges, in first-seen order."""
    layer_of = {n.id: n.layer for n in nodes}
    under = {i for i, e in enumerate(edges) if e.below or (
        e.source in layer_of and e.target in layer_of
        and layer_of[e.target] - layer_of[e.source] > 1)}
    lanes: dict[str, int] = {}
    for i in sorted(under):
        if edges[i].source in layer_of and edges[i].target in layer_of:
            lanes.setdefault(edges[i].source, len(lanes))
    return under, lanes


def _place(layers: dict[int, list[GraphNode]], block_height: float,
           align: Literal["centre", "top"]) -> tuple[dict[str, tuple[float, float, float]], float]:
    """Each node's box (x, y, width), column by column from the left; and the total width."""
    boxes: dict[str, tuple[float, float, float]] = {}
    x = float(_PAD)
    for layer in sorted(layers):
        members = layers[layer]
        column_width = max(_width(n) for n in members)
        block = len(members) * _NODE_H + (len(members) - 1) * _V_GAP
        y = (block_height - block) / 2 if align == "centre" else float(_PAD)
        for n in members:
            boxes[n.id] = (x, y, column_width)
            y += _NODE_H + _V_GAP
        x += column_width + _H_GAP
    return boxes, x - _H_GAP + _PAD


def _lay_out(nodes: Sequence[GraphNode], edges: Sequence[GraphEdge],
             align: Literal["centre", "top"]) -> _Layout:
    """The whole layout: columns ordered, boxes placed, skipping edges given lanes."""
    layers = _order(nodes, edges)
    tallest = max(len(members) for members in layers.values())
    block_height = tallest * _NODE_H + (tallest - 1) * _V_GAP + 2 * _PAD
    under, lanes = _skipping(nodes, edges)
    lane = 24.0 + _LANE_STEP * (len(lanes) - 1) if lanes else 0.0
    boxes, width = _place(layers, block_height, align)
    # the verticals share a gap's halves: down on the left half, up on the right half
    layer_of = {n.id: n.layer for n in nodes}
    down_index: dict[str, int] = {}  # among the lane sources of the same column
    for source in lanes:
        down_index[source] = sum(1 for other in down_index
                                 if layer_of[other] == layer_of[source])
    drawn = [i for i, e in enumerate(edges) if e.source in boxes and e.target in boxes]
    return _Layout(boxes=boxes, width=width, height=block_height + lane,
                   block_height=block_height, drawn=drawn, under=under, lanes=lanes,
                   down_index=down_index,
                   v_step=min(8.0, (_H_GAP / 2 - 14) / max(len(lanes), 1)),
                   port=_ports(edges, drawn, under, {k: b[1] for k, b in boxes.items()}))


def _edge_svg(i: int, e: GraphEdge, layout: _Layout) -> str:
    """Edge ``i``'s ``<path>``: a curve across the gap, or the way under every node."""
    sx, sy, sw = layout.boxes[e.source]
    tx, ty, _ = layout.boxes[e.target]
    x1, y1 = sx + sw, sy + _NODE_H / 2
    x2, y2 = tx - 2, ty + _NODE_H / 2 + layout.port[i]
    if i in layout.under:
        k = layout.lanes[e.source]
        d = _under(x1, y1, x2, y2, down=x1 + 12 + layout.down_index[e.source] * layout.v_step,
                   up=tx - 12 - k * layout.v_step,
                   floor=layout.block_height + 10 + k * _LANE_STEP)
    else:
        dx = max(30.0, (x2 - x1) / 2)
        d = (f"M {x1:.1f} {y1:.1f} C {x1 + dx:.1f} {y1:.1f}, {x2 - dx:.1f} {y2:.1f}, "
             f"{x2:.1f} {y2:.1f}")
    data = f' data-for="{escape(e.data)}"' if e.data else ""
    return (f'<path class="edge edge--{escape(e.kind)}" data-from="{escape(e.source)}" '
            f'data-to="{escape(e.target)}"{data} d="{d}" marker-end="url(#arrow)"/>')


def _node_svg(n: GraphNode, box: tuple[float, float, float]) -> str:
    """Node ``n``'s box and text(s), a link when it has an ``href``."""
    nx, ny, nw = box
    text_y = ny + (_NODE_H / 2 + 5 if not n.sub else 20)
    inner = [f'<rect x="{nx:.1f}" y="{ny:.1f}" width="{nw:.1f}" height="{_NODE_H}" rx="8"/>',
             f'<text x="{nx + nw / 2:.1f}" y="{text_y:.1f}" class="label">'
             f'{escape(n.label)}</text>']
    if n.sub:
        inner.append(f'<text x="{nx + nw / 2:.1f}" y="{ny + 36:.1f}" class="sub">'
                     f'{escape(n.sub)}</text>')
    if n.title:
        inner.insert(0, f"<title>{escape(n.title)}</title>")
    group = (f'<g class="node node--{escape(n.kind)}" data-node="{escape(n.id)}">'
             + "".join(inner) + "</g>")
    return f'<a href="{escape(n.href)}">{group}</a>' if n.href else group


def layered_svg(nodes: Sequence[GraphNode], edges: Sequence[GraphEdge], *,
                css_class: str = "graph", label: str = "graph",
                align: Literal["centre", "top"] = "centre", shrink: float = 1.0) -> str:
    """The graph as one ``<svg>`` element (nodes are links when they have an ``href``);
    each column is centred vertically, or starts at the top. Its width, height and viewBox
    hold every node and edge; ``shrink`` < 1 lets a page scale it down to fit, to at most that
    factor (a CSS ``min-width``: narrower, its container scrolls)."""
    if not nodes:
        return f'<svg class="{escape(css_class)}" width="0" height="0" role="img"></svg>'
    layout = _lay_out(nodes, edges, align)
    width, height = layout.width, layout.height
    style = f' style="min-width:{width * shrink:.0f}px"' if shrink < 1 else ""
    parts = [f'<svg class="{escape(css_class)}" xmlns="http://www.w3.org/2000/svg" '
             f'width="{width:.0f}" height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" '
             f'role="img" aria-label="{escape(label)}"{style}>',
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
             'markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" '
             'class="arrowhead"/></marker></defs>']
    parts += [_edge_svg(i, edges[i], layout) for i in layout.drawn]
    parts += [_node_svg(n, layout.boxes[n.id]) for n in nodes]
    parts.append("</svg>")
    return "\n".join(parts)
