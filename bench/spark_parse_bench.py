"""How long does Spark's grammar take on a model? (compile's syntax tier, runner/lint/spark_parser)

Renders the models of every project in the repository (its own, ``examples/*``, and the test
fixtures' projects), then, in one fresh process, parses each rendered SQL with Spark's grammar
(no verdict cache), in order, twice:

- **first pass**: as a compile meets them; the parser's prediction tables (DFA) start empty
  and fill as new shapes of SQL come, so the first models of a process pay most;
- **second pass**: the same SQL again, the tables warm: what a shape already seen costs.

Also timed: loading the grammar (the ATNs) once per process.

Usage::

    .venv/bin/python -m bench.spark_parse_bench [--json out.json]

Raw results go to ``bench/results/spark_parse_bench-<date>-<sha>.json`` (or ``--json``).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import REPO, bench_parser, command_line, git_state, machine, write_result


def _projects() -> list[Path]:
    found = [REPO, *sorted(p.parent for p in (REPO / "examples").glob("*/project.yml")),
             *sorted(p.parent for p in (REPO / "tests" / "fixtures").rglob("project.yml"))]
    return [p for p in found if "target" not in p.parts]


def rendered_sql() -> list[tuple[str, str]]:
    """``(project/model, rendered SQL)`` of every model that renders."""
    from runner.compile.render import render_models
    from runner.errors import RunnerError
    from runner.project.loader import load_project

    out: list[tuple[str, str]] = []
    for root in _projects():
        try:
            models, _ = render_models(load_project(root))
        except RunnerError:
            continue  # a fixture that is broken on purpose before rendering
        name = str(root.relative_to(REPO)) or "."
        out += [(f"{name}/{m.name}", m.sql) for m in models]
    return out


def _quantile(xs: list[float], q: float) -> float:
    ordered = sorted(xs)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _summary(xs: list[float]) -> dict[str, float]:
    return {"median_ms": round(statistics.median(xs) * 1000, 2),
            "p95_ms": round(_quantile(xs, 0.95) * 1000, 2),
            "max_ms": round(max(xs) * 1000, 1), "total_s": round(sum(xs), 2)}


def docs_rows(d: dict[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    """The docs' table (``bench.report``): the command, then (figure, value) rows."""
    def ms(p: dict[str, Any]) -> str:
        return (f"median {p['median_ms']:.1f} ms, p95 {p['p95_ms']:.0f} ms, max {p['max_ms']:.0f} "
                f"ms; {p['total_s']:.1f} s in all")
    rows = [("models parsed (the repository's projects, examples and test fixtures)",
             f"{d['models']} ({d['refused']} refused on purpose), median {d['sql_chars_median']} "
             "characters"),
            ("loading Spark's grammar, once per process", f"{d['load_seconds']:.2f} s"),
            ("Spark's grammar per model, first pass (prediction tables fill)", ms(d["first_pass"])),
            ("Spark's grammar per model, second pass (tables warm)", ms(d["second_pass"]))]
    return command_line("spark_parse_bench"), rows


def main(argv: list[str] | None = None) -> int:
    args = bench_parser(__doc__, json=True).parse_args(argv)
    sql = rendered_sql()
    started = time.perf_counter()
    from runner.lint.sql.spark_parser import recognizers
    from runner.lint.sql.spark_parser.error_strategy import Refused
    load_seconds = time.perf_counter() - started
    passes: list[list[float]] = []
    refused = 0
    for _ in range(2):
        times: list[float] = []
        refused = 0
        for _, text in sql:
            t = time.perf_counter()
            try:
                recognizers.parse(text)
            except Refused:
                refused += 1
            times.append(time.perf_counter() - t)
        passes.append(times)
    doc: dict[str, Any] = {
        "bench": "spark_parse_bench", "models": len(sql), "refused": refused,
        "sql_chars_median": int(statistics.median(len(s) for _, s in sql)),
        "load_seconds": round(load_seconds, 3),
        "first_pass": _summary(passes[0]), "second_pass": _summary(passes[1]),
        "slowest_first_pass": sorted(((round(t * 1000, 1), n) for t, (n, _) in
                                      zip(passes[0], sql)), reverse=True)[:5],
        "machine": machine(), "git": git_state()}
    print(f"{len(sql)} models ({refused} refused), grammar load {load_seconds:.2f}s")
    for name in ("first_pass", "second_pass"):
        print(f"{name}: {doc[name]}")
    path = write_result(__file__, doc, args.json)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
