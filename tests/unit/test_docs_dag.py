"""The docs site's DAG with two sources, a seed, append and merge models:
each source's edges stay apart, every node lies inside the drawing, the legend names each kind
once, and the kinds' colours are far apart (also for deuteranopes)."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from runner.build import compile_project
from runner.docs_site import build_site
from runner.docs_site.graph_svg import GraphEdge, GraphNode, layered_svg
from runner.docs_site.templates import CSS, LEGEND
from runner.project.loader import load_project
from tests.support.projects import write_project
from tests.unit.test_docs_site import CHROMIUM, _chromium
from tests.unit.test_graph_svg import _boxes

_MERGE = ("{{ config(materialized='merge', unique_key='%s', "
          "merge_update={'n': 'target.n + source.n'}) }}\n")
_QUARANTINE = ("{{ config(expectations=[{'name': 'ok', 'expr': '%s IS NOT NULL', "
               "'on_violation': 'quarantine'}]) }}\n")

#: Two sources and a seed feeding models several columns apart; wider than 1400 px.
FILES = {
    "models/sources.yml": """
        sources:
          - name: crm
            tables:
              - name: customers
                path: ref/customers
                columns:
                  - {name: customer_id, data_type: string}
                  - {name: segment, data_type: string}
          - name: catalog
            tables:
              - name: products
                path: ref/products
                columns:
                  - {name: endpoint, data_type: string}
                  - {name: product_line, data_type: string}
        """,
    "seeds/endpoint_owners.csv": "endpoint,team\n/a,core\n",
    "models/requests_enriched_with_everything.sql": """
        SELECT e.eventId, e.request.endpoint AS endpoint, c.segment, o.team
        FROM parsed_events e
        LEFT JOIN {{ source('crm', 'customers') }} c ON c.customer_id = e.user.userId
        LEFT JOIN {{ ref('endpoint_owners') }} o ON o.endpoint = e.request.endpoint
        """,
    "models/errors_flat.sql": _QUARANTINE % "errorCode"
    + "SELECT eventId, x.errorCode FROM parsed_events LATERAL VIEW explode(errors) t AS x",
    "models/segment_totals_by_customer_segment.sql": _MERGE % "segment"
    + "SELECT segment, count(*) AS n FROM {{ ref('requests_enriched_with_everything') }} "
      "GROUP BY segment",
    "models/product_line_requests.sql": """
        SELECT r.eventId, p.product_line FROM {{ ref('requests_enriched_with_everything') }} r
        JOIN {{ source('catalog', 'products') }} p ON p.endpoint = r.endpoint
        """,
    "models/product_line_totals_all_time.sql": _MERGE % "product_line"
    + "SELECT product_line, count(*) AS n FROM {{ ref('product_line_requests') }} "
      "GROUP BY product_line",
    "models/product_line_top_customers_report.sql": _QUARANTINE % "product_line"
    + "SELECT p.product_line, c.segment FROM {{ ref('product_line_totals_all_time') }} p "
      "CROSS JOIN {{ source('crm', 'customers') }} c",
}


def wide_site(root: Path) -> Path:
    """The site of :data:`FILES` (its index.html)."""
    project = load_project(write_project(root, FILES))
    return build_site(project, compile_project(project).plan).index


def _dag(index: Path) -> str:
    found = re.search(r'<svg class="dag".*?</svg>', index.read_text(), re.S)
    assert found is not None
    return found.group(0)


def _segments(d: str) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """The straight (L) segments of a path of absolute M, L, Q and C commands."""
    tokens = re.findall(r"[MLQC]|-?\d+(?:\.\d+)?", d)
    out = []
    i, current = 0, (0.0, 0.0)
    while i < len(tokens):
        n = {"M": 1, "L": 1, "Q": 2, "C": 3}[tokens[i]]
        coords = [(float(tokens[i + 1 + 2 * k]), float(tokens[i + 2 + 2 * k])) for k in range(n)]
        if tokens[i] == "L":
            out.append((current, coords[0]))
        current = coords[-1]
        i += 1 + 2 * n
    return out


def _overlap(a: tuple[tuple[float, float], tuple[float, float]],
             b: tuple[tuple[float, float], tuple[float, float]]) -> float:
    """How long two axis-parallel segments run on one line (0 when they do not)."""
    (ax1, ay1), (ax2, ay2) = a
    (bx1, by1), (bx2, by2) = b
    if abs(ax1 - ax2) < 0.5 and abs(bx1 - bx2) < 0.5 and abs(ax1 - bx1) < 1.5:  # vertical
        lo, hi = max(min(ay1, ay2), min(by1, by2)), min(max(ay1, ay2), max(by1, by2))
        return max(0.0, hi - lo)
    if abs(ay1 - ay2) < 0.5 and abs(by1 - by2) < 0.5 and abs(ay1 - by1) < 1.5:  # horizontal
        lo, hi = max(min(ax1, ax2), min(bx1, bx2)), min(max(ax1, ax2), max(bx1, bx2))
        return max(0.0, hi - lo)
    return 0.0


def _assert_sources_apart(svg: str) -> None:
    edges = re.findall(r'data-from="([^"]+)" data-to="([^"]+)"[^>]* d="([^"]+)"', svg)
    assert edges
    for (s1, t1, d1), (s2, t2, d2) in itertools.combinations(edges, 2):
        if s1 == s2:
            continue  # one source's edges may share their start
        for a in _segments(d1):
            for b in _segments(d2):
                shared = _overlap(a, b)
                assert shared < 3, (f"edges {s1}->{t1} and {s2}->{t2} share a {shared:.0f} px "
                                    f"line at {a} / {b}")


def _assert_inside(svg: str) -> None:
    view = re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg)
    width = re.search(r'width="([\d.]+)"', svg)
    assert view is not None and width is not None
    vw, vh = float(view.group(1)), float(view.group(2))
    assert float(width.group(1)) >= vw
    boxes = _boxes(svg)
    assert boxes
    for name, (x, y, w, h) in boxes.items():
        assert 0 <= x and x + w <= vw and 0 <= y and y + h <= vh, f"{name} is cut off"
    for d in re.findall(r' d="(M [^"]+)"', svg):
        for x, y in re.findall(r"(-?\d+(?:\.\d+)?) (-?\d+(?:\.\d+)?)", d):
            assert 0 <= float(x) <= vw and 0 <= float(y) <= vh, (x, y)


def test_wide_dag_keeps_sources_apart_and_every_node_inside(tmp_path: Path) -> None:
    svg = _dag(wide_site(tmp_path / "p"))
    for node in ("lookup:crm__customers", "lookup:catalog__products",
                 "lookup:endpoint_owners", "_dead_letter"):
        assert f'data-node="{node}"' in svg
    assert float(re.search(r'width="([\d.]+)"', svg).group(1)) > 1400  # type: ignore[union-attr]
    _assert_inside(svg)
    _assert_sources_apart(svg)


@pytest.mark.parametrize("sources", [2, 3, 6])
def test_skipping_edges_of_several_sources_never_share_a_line(sources: int) -> None:
    names = [f"src_{i}" for i in range(sources)]
    nodes = [*(GraphNode(n, n, 0, kind="lookup") for n in names),
             GraphNode("a", "a", 1), GraphNode("b", "b", 2), GraphNode("c", "c", 3),
             GraphNode("dead", "dead", 4, kind="dead")]
    edges = [GraphEdge("a", "b"), GraphEdge("b", "c"), GraphEdge("c", "dead", "dead"),
             *(GraphEdge(n, "a", "lookup") for n in names),
             *(GraphEdge(n, t, "lookup") for n in names for t in ("b", "c")),
             GraphEdge("a", "dead", "dead")]
    svg = layered_svg(nodes, edges)
    _assert_inside(svg)
    _assert_sources_apart(svg)


def test_legend_names_each_kind_once(tmp_path: Path) -> None:
    index = wide_site(tmp_path / "p").read_text()
    legend = re.search(r'<div class="legend">(.*?)</div>', index, re.S)
    assert legend is not None
    entries = re.findall(r'<i style="background:var\(--([\w-]+)\)"></i>([^<]+)</span>',
                         legend.group(1))
    colours = [c for c, _ in entries]
    labels = [text for _, text in entries]
    assert len(entries) == 5 and len(set(colours)) == len(colours)
    assert len(set(labels)) == len(labels)
    for word in ("source", "seed", "append", "merge", "dead"):  # each kind named once
        assert sum(word in text for text in labels) == 1, (word, labels)
    kinds = set(re.findall(r'class="node node--(\w+)"', _dag(tmp_path / "p" / "target" / "docs"
                                                            / "index.html")))
    assert kinds <= {"source", "lookup", "append", "merge", "dead"}


def _linear(colour: str) -> tuple[float, float, float]:
    rgb = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb)
    return r, g, b


def _lab(lin: tuple[float, float, float]) -> tuple[float, float, float]:
    r, g, b = (min(1.0, max(0.0, c)) for c in lin)
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def _deuteranope(lin: tuple[float, float, float]) -> tuple[float, float, float]:
    """Machado et al. (2009), deuteranopia at full severity, on linear RGB."""
    r, g, b = lin
    return (0.367322 * r + 0.860646 * g - 0.227968 * b,
            0.280085 * r + 0.672501 * g + 0.047413 * b,
            -0.011820 * r + 0.042940 * g + 0.968881 * b)


def test_kind_colours_are_far_apart() -> None:
    colours = {name: re.search(rf"--{name}:(#[0-9a-fA-F]{{6}})", CSS) for name, _ in LEGEND}
    assert all(colours.values()), colours
    values = {k: m.group(1) for k, m in colours.items() if m}
    for (k1, c1), (k2, c2) in itertools.combinations(values.items(), 2):
        seen = math_dist(_lab(_linear(c1)), _lab(_linear(c2)))
        assert seen >= 25, f"{k1} {c1} and {k2} {c2} are {seen:.1f} apart (CIELAB ΔE)"
        deut = math_dist(_lab(_deuteranope(_linear(c1))), _lab(_deuteranope(_linear(c2))))
        assert deut >= 15, f"{k1} and {k2} are {deut:.1f} apart for a deuteranope"


def math_dist(a: tuple[float, float, float], b: tuple[float, float, float]) -> float:
    return sum((p - q) ** 2 for p, q in zip(a, b)) ** 0.5


_MEASURE = """<script>
var box = document.querySelector('svg.dag [data-node="_dead_letter"]').getBoundingClientRect();
var pane = document.getElementById('dag-graph').getBoundingClientRect();
document.documentElement.setAttribute('data-dead-right', Math.round(box.right));
document.documentElement.setAttribute('data-pane-right', Math.round(pane.right));
</script></body>"""


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (Debian: apt-get install -y "
                                               "chromium; .ci/run installs it)")
def test_wide_dag_shows_every_node_in_a_1600px_window(tmp_path: Path) -> None:
    index = wide_site(tmp_path / "p")
    measured = index.with_name("measured.html")
    measured.write_text(index.read_text().replace("</body>", _MEASURE))
    dom = _chromium(tmp_path, "--window-size=1600,1000", "--dump-dom", measured.as_uri()).stdout
    dead = re.search(r'data-dead-right="(\d+)"', dom)
    pane = re.search(r'data-pane-right="(\d+)"', dom)
    assert dead is not None and pane is not None, dom[:400]
    assert int(dead.group(1)) <= int(pane.group(1)) <= 1600, (dead.group(1), pane.group(1))
