"""The site's HTML, CSS and JavaScript, as Jinja templates (autoescaped). Everything is inline:
the pages open from disk (``file://``) with no server and no network."""

from __future__ import annotations

__all__ = ["CSS", "INDEX", "JS", "LEGEND", "MODEL"]

#: The DAG's legend: one entry per kind of node (its colour's CSS variable, its text).
LEGEND = (
    ("events", "parsed_events (the stream, parsed once per batch)"),
    ("lookup", "source or seed (joined at one version per batch)"),
    ("append", "append model"),
    ("merge", "merge model"),
    ("dead", "dead letters (parse failures, quarantined rows)"),
)

CSS = """
:root { --fg:#1d2330; --muted:#5b6475; --line:#d9dee8; --bg:#f6f7fa; --card:#fff;
  --accent:#2f5fd0;
  /* one colour per kind of DAG node, from Paul Tol's colour-blind safe "light" scheme (far
     apart in CIELAB, also as deuteranopes see them; tests/unit/test_docs_legend.py) */
  --events:#eedd88; --lookup:#ee8866; --append:#77aadd; --merge:#44bb99; --dead:#dddddd; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.5 -apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"Liberation Sans","DejaVu Sans",sans-serif;
  color:var(--fg); background:var(--bg); }
header { background:#1d2330; color:#fff; padding:10px 24px; display:flex; gap:24px; align-items:baseline; }
header a { color:#fff; text-decoration:none; } header .project { font-weight:700; font-size:16px; }
header nav a { color:#c9d3ea; margin-right:16px; }
main { max-width:1200px; margin:0 auto; padding:20px 24px 60px; }
h1 { font-size:24px; margin:8px 0 4px; } h2 { font-size:17px; margin:28px 0 10px; }
.muted { color:var(--muted); } .desc { margin:4px 0 12px; }
.card { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:14px 16px; }
.facts { display:grid; grid-template-columns:repeat(auto-fill,minmax(220px,1fr)); gap:10px; }
.facts div { overflow-wrap:anywhere; background:var(--card); border:1px solid var(--line); border-radius:8px; padding:8px 12px; }
.facts code { word-break:break-all; }
.facts b { display:block; font-size:11px; text-transform:uppercase; letter-spacing:.04em; color:var(--muted); }
table { border-collapse:collapse; width:100%; background:var(--card); border:1px solid var(--line); }
th, td { text-align:left; padding:7px 10px; border-bottom:1px solid var(--line); vertical-align:top; }
th { background:#eef1f6; font-weight:600; font-size:12px; color:#39414f; }
tr:hover td { background:#fafbff; }
code, pre { font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; font-size:12.5px; }
pre { background:#1f2430; color:#e6e9ef; padding:12px 14px; border-radius:8px; overflow:auto; }
.chip { display:inline-block; background:#eef1f6; border:1px solid var(--line); border-radius:12px;
  padding:0 8px; margin:1px 3px 1px 0; font-size:12px; white-space:nowrap; }
.chip.field { background:var(--events); } .chip.test { background:#f1ecff; }
.chip.drop { background:#fff4de; } .chip.quarantine { background:var(--dead); } .chip.fail { background:#ffd9d9; }
.badge { display:inline-block; border-radius:4px; padding:0 6px; font-size:12px; font-weight:600; }
.badge.append { background:var(--append); } .badge.merge { background:var(--merge); }
.scroll { overflow-x:auto; background:var(--card); border:1px solid var(--line); border-radius:10px; padding:8px; }
.scroll.wide { margin-left:calc(50% - 50vw + 24px); margin-right:calc(50% - 50vw + 24px); }
svg.dag { display:block; max-width:100%; height:auto; }
svg .node rect { fill:var(--append); stroke:#4d7fb3; stroke-width:1.2; }
svg .node--merge rect { fill:var(--merge); stroke:#2b8a6f; }
svg .node--source rect, svg .node--field rect { fill:var(--events); stroke:#b8a545; }
svg .node--lookup rect { fill:var(--lookup); stroke:#c0573a; }
.chip.lookup { background:var(--lookup); }
svg .node--dead rect { fill:var(--dead); stroke:#8a8a8a; stroke-dasharray:4 3; }
svg .node--column rect { fill:#fff; stroke:#9aa6bd; }
svg a .node:hover rect { stroke:var(--accent); stroke-width:2.2; }
svg text { font:13px -apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"Liberation Sans","DejaVu Sans",sans-serif; text-anchor:middle; fill:#1d2330; }
svg text.label { font-weight:600; } svg text.sub { font-size:11px; fill:#5b6475; }
svg .edge { fill:none; stroke:#98a2b6; stroke-width:1.6; }
svg .edge--dead { stroke:#8a8a8a; stroke-dasharray:5 4; }
svg .edge--lookup { stroke:#d9785a; }
svg .edge.hot { stroke:var(--accent); stroke-width:3; }
svg .node.hot rect { stroke:var(--accent); stroke-width:2.5; }
svg .arrowhead { fill:#98a2b6; }
input.filter { padding:6px 10px; border:1px solid var(--line); border-radius:6px; width:260px; margin-bottom:8px; }
.legend span { margin-right:14px; font-size:12px; color:var(--muted); }
.legend i { display:inline-block; width:12px; height:12px; border-radius:3px; vertical-align:-2px; margin-right:4px; border:1px solid #aab; }
footer { color:var(--muted); font-size:12px; margin-top:40px; }
"""

JS = """
(function () {
  var filter = document.getElementById('filter');
  if (filter) {
    filter.addEventListener('input', function () {
      var q = filter.value.toLowerCase();
      document.querySelectorAll('[data-model-row]').forEach(function (row) {
        row.hidden = q !== '' && row.getAttribute('data-model-row').indexOf(q) < 0;
      });
    });
  }
  function mark(column, on) {
    document.querySelectorAll('svg.lineage .edge').forEach(function (edge) {
      var tokens = (edge.getAttribute('data-for') || '').split(' ');
      if (tokens.indexOf(column) >= 0) { edge.classList.toggle('hot', on); }
    });
    var node = document.querySelector('svg.lineage [data-node="col:' + column + '"]');
    if (node) { node.classList.toggle('hot', on); }
  }
  document.querySelectorAll('[data-column-row]').forEach(function (row) {
    var column = row.getAttribute('data-column-row');
    row.addEventListener('mouseenter', function () { mark(column, true); });
    row.addEventListener('mouseleave', function () { mark(column, false); });
  });
  document.documentElement.setAttribute('data-ready', '1');
})();
"""

_BASE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{% block title %}{% endblock %} · {{ project.name }}</title>
<style>{{ css|safe }}</style></head>
<body>
<header><a class="project" href="{{ root }}index.html">{{ project.name }}</a>
<nav><a href="{{ root }}index.html#dag">DAG</a><a href="{{ root }}index.html#models">Models</a>
<a href="{{ root }}index.html#schema">Event schema</a></nav></header>
<main>{% block body %}{% endblock %}
<footer>Generated by <code>runner docs</code> from {{ project.root }}. Static files: no server needed.</footer>
</main>
<script>{{ js|safe }}</script>
</body></html>
"""

INDEX = _BASE.replace("{% block title %}{% endblock %}", "Pipeline").replace(
    "{% block body %}{% endblock %}", """
<h1>{{ project.name }}</h1>
<p class="muted desc">One stream of events, parsed once into <code>parsed_events</code>, fanned
out to {{ models|length }} model table{{ 's' if models|length != 1 }} in one micro-batch.</p>
<div class="facts">
  <div><b>Source</b>{{ project.source }}</div>
  <div><b>Warehouse</b><code>{{ project.warehouse }}</code></div>
  <div><b>Dead-letter table</b><code>{{ project.dead_letter_path }}</code></div>
  <div><b>Checkpoint</b><code>{{ project.checkpoint }}</code></div>
  <div><b>Trigger</b>{{ project.trigger }}</div>
  <div><b>Delta engine</b>{{ project.engine }}</div>
</div>

<h2 id="dag">Model DAG</h2>
<div class="legend">{% for colour, text in legend %}<span><i style="background:var(--{{ colour }})"></i>{{ text }}</span>
{% endfor %}</div>
<div class="scroll wide" id="dag-graph">{{ dag|safe }}</div>

<h2 id="models">Models</h2>
<input id="filter" class="filter" placeholder="Filter models, tags..." aria-label="Filter models">
<table class="models">
<thead><tr><th>Model</th><th>Materialized</th><th>Tags</th><th>Columns</th><th>Expectations</th>
<th>Tests</th><th>Description</th></tr></thead>
<tbody>
{% for m in models %}
<tr data-model-row="{{ (m.name ~ ' ' ~ m.tags|join(' '))|lower }}">
<td><a href="models/{{ m.name }}.html"><b>{{ m.name }}</b></a>{% if m.relation %}<br><code>{{ m.relation }}</code>{% endif %}</td>
<td><span class="badge {{ m.materialized }}">{{ m.kind }}</span></td>
<td>{% for t in m.tags %}<span class="chip">{{ t }}</span>{% endfor %}</td>
<td>{{ m.columns|length }}</td>
<td>{% for e in m.expectations %}<span class="chip {{ e.on_violation }}">{{ e.name }}</span>{% endfor %}</td>
<td>{{ m.unit_tests|length }} unit, {{ m.data_tests|length }} data</td>
<td>{{ m.description or '' }}</td></tr>
{% endfor %}
</tbody></table>

{% if lookups %}
<h2 id="lookups">Sources and seeds</h2>
<p class="muted">Reference data the models join. Each batch reads each one at one version,
recorded with the batch: every replay and backfill of the batch joins the same rows.</p>
{% for l in lookups %}
<h3 id="lookup-{{ l.view }}">{{ l.name }} <span class="chip lookup">{{ l.kind }}</span></h3>
<p class="desc">{{ l.description or '' }}</p>
<div class="facts"><div><b>Location</b><code>{{ l.location }}</code></div>
<div><b>Read as</b><code>{{ l.view }}</code></div><div><b>Version</b>{{ l.version }}</div>
<div><b>Read by</b>{% for r in l.read_by %}<a class="chip" href="models/{{ r }}.html">{{ r }}</a>{% endfor %}</div></div>
<table><thead><tr><th>Column</th><th>Type</th><th>Used by</th><th>Description</th></tr></thead><tbody>
{% for c in l.columns %}
<tr><td><code>{{ c.name }}</code></td><td><code>{{ c.type }}</code></td>
<td>{% for u in c.used_by %}<a class="chip" href="models/{{ u.model }}.html">{{ u.model }}.{{ u.column }}</a>{% endfor %}</td>
<td>{{ c.description or '' }}</td></tr>
{% endfor %}
</tbody></table>
{% endfor %}
{% endif %}

<h2 id="schema">Event schema (<code>parsed_events</code>)</h2>
<p class="muted">Every record is parsed once with this schema. A record that is not a JSON object,
lacks a NOT NULL field or has a wrongly typed field goes to <code>{{ project.dead_letter }}</code>
with a reason naming the field.</p>
<table><thead><tr><th>Field</th><th>Type</th><th>Used by</th></tr></thead><tbody>
{% for f in fields %}
<tr><td><code>{{ f.path }}</code>{% if f.not_null %} <span class="chip fail">NOT NULL</span>{% endif %}
{% if f.metadata %} <span class="chip">metadata</span>{% endif %}</td>
<td><code>{{ f.type }}</code></td>
<td>{% for u in f.used_by %}<a class="chip" href="models/{{ u.model }}.html">{{ u.model }}.{{ u.column }}</a>{% endfor %}</td></tr>
{% endfor %}
</tbody></table>
""")

MODEL = _BASE.replace("{% block title %}{% endblock %}", "{{ m.name }}").replace(
    "{% block body %}{% endblock %}", """
<p class="muted"><a href="../index.html">{{ project.name }}</a> / models</p>
<h1 id="model-title">{{ m.name }} <span class="badge {{ m.materialized }}">{{ m.kind }}</span></h1>
<p class="desc">{{ m.description or '' }}</p>
<div class="facts">
  <div><b>File</b><code>{{ m.path }}</code>{% if m.yml_path %}, <code>{{ m.yml_path }}</code>{% endif %}</div>
  <div><b>Delta table</b><code>{{ m.table_path }}</code></div>
  {% if m.relation %}<div><b>Name</b><code>{{ m.relation }}</code></div>{% endif %}
  <div><b>Reads</b>{% if m.reads_events %}<span class="chip field">parsed_events</span>{% endif %}
    {% for u in m.upstream %}<a class="chip" href="{{ u }}.html">{{ u }}</a>{% endfor %}
    {% for l in m.lookups %}<a class="chip lookup" href="../index.html#lookup-{{ l }}">{{ l }}</a>{% endfor %}</div>
  <div><b>Read by</b>{% for d in m.downstream %}<a class="chip" href="{{ d }}.html">{{ d }}</a>{% else %}<span class="muted">no model</span>{% endfor %}</div>
</div>

<h2 id="columns">Columns</h2>
<table class="columns"><thead><tr><th>Column</th><th>Type</th><th>From (parsed_events, sources, seeds)</th>
<th>Expression</th><th>Data tests</th><th>Description</th></tr></thead><tbody>
{% for c in m.columns %}
<tr data-column-row="{{ c.name }}"><td><code><b>{{ c.name }}</b></code></td><td><code>{{ c.type }}</code></td>
<td>{% for s in c.lineage.sources %}<span class="chip field">{{ s }}</span>{% endfor %}
{% for s in c.lineage.lookups %}<span class="chip lookup">{{ s }}</span>{% endfor %}
{% if c.lineage.via %}<br><span class="muted">via {{ c.lineage.via|join(', ') }}</span>{% endif %}
{% if c.lineage.error %}<span class="muted">{{ c.lineage.error }}</span>{% elif not c.lineage.sources and not c.lineage.lookups %}<span class="muted">none (computed)</span>{% endif %}</td>
<td>{% if c.lineage.direct %}<span class="muted">copy of</span> {% endif %}<code>{{ c.lineage.expression }}</code></td>
<td>{% for t in c.tests %}<span class="chip test">{{ t }}</span>{% endfor %}</td>
<td>{{ c.description or '' }}</td></tr>
{% endfor %}
</tbody></table>

<h2 id="lineage">Column lineage</h2>
<p class="muted">From <code>parsed_events</code> fields (left) to this model's columns (right). Hover a
column in the table above to highlight its inputs.</p>
<div class="scroll">{{ m.lineage_svg|safe }}</div>

<h2 id="config">Config</h2>
<table class="config"><tbody>
{% for key, value in m.config %}<tr><th style="width:200px">{{ key }}</th><td><code>{{ value }}</code></td></tr>{% endfor %}
</tbody></table>

<h2 id="expectations">Expectations</h2>
{% if m.expectations %}
<table><thead><tr><th>Name</th><th>Predicate (must be TRUE)</th><th>On violation</th><th>Effect</th></tr></thead><tbody>
{% for e in m.expectations %}<tr><td><b>{{ e.name }}</b></td><td><code>{{ e.expr }}</code></td>
<td><span class="chip {{ e.on_violation }}">{{ e.on_violation }}</span></td>
<td>{% if e.on_violation == 'drop' %}the row is not written{% elif e.on_violation == 'quarantine' %}the row goes to <code>{{ project.dead_letter }}</code> with reason <code>expectation {{ m.name }}.{{ e.name }} failed: ...</code>{% else %}the batch fails, naming the model, the expectation and a violating row{% endif %}</td></tr>{% endfor %}
</tbody></table>
{% else %}<p class="muted">None declared: every row the SQL yields is written.</p>{% endif %}

<h2 id="dead-letters">Dead letters</h2>
<p>Dead-letter table: <code>{{ project.dead_letter_path }}</code> (columns <code>raw</code>, <code>reason</code>,
<code>_batch_id</code>{% for c in project.metadata %}, <code>{{ c }}</code>{% endfor %}).
Records that do not parse never reach this model.
{% if m.quarantines %}Rows of this model that break {{ m.quarantines|join(', ') }} are quarantined there.{% endif %}</p>

<h2 id="tests">Tests</h2>
{% if m.unit_tests %}
<table><thead><tr><th>Unit test</th><th>Given</th><th>Expect</th><th>Description</th></tr></thead><tbody>
{% for t in m.unit_tests %}<tr><td><b>{{ t.name }}</b></td><td>{{ t.events }} event{{ 's' if t.events != 1 }}{% if t.prior %}, {{ t.prior }} prior row{{ 's' if t.prior != 1 }}{% endif %}</td>
<td>{{ t.rows }} row{{ 's' if t.rows != 1 }}{% if t.dead %}, {{ t.dead }} dead letter{{ 's' if t.dead != 1 }}{% endif %}</td><td>{{ t.description or '' }}</td></tr>{% endfor %}
</tbody></table>
{% else %}<p class="muted">No unit tests: declare some in <code>{{ m.tests_file }}</code> (see docs/AE_GUIDE.md).</p>{% endif %}
{% if m.data_tests %}<p>Data tests: {% for t in m.data_tests %}<span class="chip test">{{ t }}</span>{% endfor %}</p>{% endif %}

<h2 id="sql">Compiled SQL</h2>
<pre><code>{{ m.sql }}</code></pre>
<h2 id="source">Source (Jinja)</h2>
<pre><code>{{ m.source }}</code></pre>
""")
