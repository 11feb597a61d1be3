"""How fast is ``runner compile`` on a big project? (target: 1000 models under 5 s)

Generates a project with ``--models`` models (default 1000) in a temp directory, on the example
project's event schema and macro, then times compile two ways, ``--repeat`` times each:

- **process**: ``runner compile --project-dir DIR`` as a whole process (interpreter start,
  imports, load, render, lint, plan, write ``target/``): what a pull-request check pays.
- **in-process**: ``load_project`` + ``compile_project`` + ``write_target`` in this interpreter
  (imports already done), with ``render_models`` timed on its own for a breakdown. The first
  repetition is reported separately (it fills any per-process caches).

The generated models, by share:
    60% projections of parsed_events (nested fields, aliases, a WHERE with a var),
    15% projections that use a macro (``status_class``, ``latency_bucket``),
    10% exploded arrays (``LATERAL VIEW explode(errors)``),
    10% models reading ``ref()`` of an earlier model (chains up to 3 deep),
     5% merge models: GROUP BY key, ``unique_key``, an accumulating ``merge_update``.
Every generated model compiles clean (0 errors; the run fails otherwise).

Usage::

    .venv/bin/python -m bench.compile_bench                 # 1000 models, 5 repetitions
    .venv/bin/python -m bench.compile_bench --models 200 --repeat 3 --json out.json

Raw results go to ``bench/results/compile_bench-<date>-<sha>.json`` (or ``--json``).
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import REPO, bench_parser, command_line, git_state, machine, write_result

TARGET_SECONDS = 5.0

_EXTRA_MACROS = """\
{#- Bucket a latency in milliseconds: 'fast', 'ok' or 'slow'. -#}
{% macro latency_bucket(column, slow) -%}
CASE WHEN {{ column }} < 100 THEN 'fast' WHEN {{ column }} < {{ slow }} THEN 'ok' ELSE 'slow' END
{%- endmacro %}
"""

# Columns of the example schema a projection may pick, as (expression, alias).
_FIELDS = [
    ("eventId", "eventId"),
    ("`timestamp`", "event_ts"),
    ("user.userId", "userId"),
    ("user.country", "country"),
    ("request.endpoint", "endpoint"),
    ("request.method", "method"),
    ("request.latency_ms", "latency_ms"),
    ("request.status_code", "status_code"),
]
_ENDPOINTS = ["/checkout", "/cart", "/search", "/login", "/products", "/orders", "/profile"]


def _projection(i: int) -> str:
    picked = [_FIELDS[0]] + [f for k, f in enumerate(_FIELDS[1:]) if (i >> k) & 1 or k == i % 7]
    cols = ",\n  ".join(f"{expr} AS {alias}" for expr, alias in picked)
    where = ""
    if i % 3 == 0:
        where = "\nWHERE request.latency_ms >= {{ var('slow_request_ms') }}"
    elif i % 3 == 1:
        where = f"\nWHERE request.endpoint = '{_ENDPOINTS[i % len(_ENDPOINTS)]}'"
    tag = ["requests", "performance", "users"][i % 3]
    return (f"-- Generated projection {i}.\n"
            f"{{{{ config(materialized='append', tags=['{tag}', 'generated']) }}}}\n"
            f"SELECT\n  {cols}\nFROM parsed_events{where}\n")


def _macro_model(i: int) -> str:
    if i % 2:
        expr = "{{ status_class('request.status_code') }} AS status_class"
    else:
        expr = "{{ latency_bucket('request.latency_ms', var('slow_request_ms')) }} AS bucket"
    return (f"-- Generated macro model {i}.\n"
            "{{ config(materialized='append', tags=['macros']) }}\n"
            "SELECT\n  eventId,\n  `timestamp`,\n  request.endpoint AS endpoint,\n"
            f"  {expr}\nFROM parsed_events\n")


def _explode_model(i: int) -> str:
    where = "\nWHERE err.severity = 'critical'" if i % 2 else ""
    return (f"-- Generated exploded model {i}: one row per error.\n"
            "{{ config(materialized='append', tags=['errors']) }}\n"
            "SELECT\n  eventId,\n  `timestamp`,\n  user.userId AS userId,\n"
            "  err.errorCode AS errorCode,\n  err.severity AS severity\n"
            f"FROM parsed_events\nLATERAL VIEW explode(errors) e AS err{where}\n")


def _ref_model(i: int, parent: str) -> str:
    return (f"-- Generated model {i} reading {parent}.\n"
            "{{ config(materialized='append', tags=['derived']) }}\n"
            f"SELECT\n  eventId,\n  endpoint,\n  upper(endpoint) AS endpoint_upper\n"
            f"FROM {{{{ ref('{parent}') }}}}\nWHERE endpoint IS NOT NULL\n")


def _merge_model(i: int) -> str:
    key = ["request.endpoint", "user.country", "request.method"][i % 3]
    alias = key.split(".")[1]
    return (f"-- Generated merge model {i}: running totals per {alias}.\n"
            f"{{{{ config(materialized='merge', unique_key='{alias}',\n"
            "           merge_update={'requests': 'target.requests + source.requests',\n"
            "                         'errors': 'target.errors + source.errors'}) }}\n"
            f"SELECT\n  {key} AS {alias},\n  count(*) AS requests,\n"
            "  sum(CASE WHEN request.status_code >= 500 THEN 1 ELSE 0 END) AS errors\n"
            f"FROM parsed_events\nGROUP BY {key}\n")


def generate_project(root: Path, models: int) -> dict[str, int]:
    """Write a project with ``models`` models under ``root``; return the count per kind."""
    (root / "models").mkdir(parents=True)
    (root / "macros").mkdir()
    shutil.copy(REPO / "project.yml", root / "project.yml")
    for macro in (REPO / "macros").glob("*.sql"):
        shutil.copy(macro, root / "macros" / macro.name)
    (root / "macros" / "latency_bucket.sql").write_text(_EXTRA_MACROS, encoding="utf-8")
    kinds = {"projection": 0, "macro": 0, "explode": 0, "ref": 0, "merge": 0}
    projections: list[str] = []  # names a ref model may read (they have an `endpoint` column)
    depth: dict[str, int] = {}  # ref chain depth of a readable model
    for i in range(models):
        name = f"m{i:04d}"
        slot = i % 20
        if slot < 12 or (slot < 14 and not projections):
            text, kind = _projection(i), "projection"
            if "request.endpoint AS endpoint" in text:
                projections.append(name)
                depth[name] = 0
        elif slot < 15:
            text, kind = _macro_model(i), "macro"
        elif slot < 17:
            text, kind = _explode_model(i), "explode"
        elif slot < 19:
            parent = projections[(i * 7) % len(projections)]
            text, kind = _ref_model(i, parent), "ref"
            if depth[parent] < 2:  # a ref model is readable too: chains up to 3 deep
                projections.append(name)
                depth[name] = depth[parent] + 1
        else:
            text, kind = _merge_model(i), "merge"
        kinds[kind] += 1
        (root / "models" / f"{name}.sql").write_text(text, encoding="utf-8")
    return kinds


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_process(project: Path, repeat: int) -> tuple[list[float], list[float], dict[str, Any]]:
    """Run ``runner compile`` ``repeat`` times as a whole process; return wall and CPU
    seconds (CPU = user + system of the child: less sensitive to a busy machine)."""
    runner = Path(sys.executable).with_name("runner")
    cmd = [str(runner), "compile", "--project-dir", str(project), "--format", "json"]
    times: list[float] = []
    cpu: list[float] = []
    report: dict[str, Any] = {}
    for _ in range(repeat):
        cpu0 = _children_cpu()
        started = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        times.append(time.perf_counter() - started)
        cpu.append(_children_cpu() - cpu0)
        if proc.returncode != 0:
            sys.exit(f"runner compile exited {proc.returncode}:\n{proc.stdout[-3000:]}\n"
                     f"{proc.stderr[-3000:]}")
        report = {"stdout_tail": proc.stdout.strip()[-300:]}
    return times, cpu, report


def _compile_cpu(checkout: Path, project: Path, cache: str | None = None) -> float:
    """CPU seconds (user + system) of one ``python -m runner compile`` of ``checkout``'s runner
    (``PYTHONSAFEPATH``: the current folder does not shadow it); with ``cache``, that
    ``RUNNER_CACHE_DIR`` (``""``: Spark's grammar verdicts not cached)."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONSAFEPATH": "1"}
    if cache is not None:
        env["RUNNER_CACHE_DIR"] = cache
    cpu0 = _children_cpu()
    proc = subprocess.run([sys.executable, "-m", "runner", "compile", "--project-dir",
                           str(project), "--format", "json"], capture_output=True, text=True,
                          env=env, cwd=project)
    if proc.returncode not in (0, 1):
        sys.exit(f"{checkout}: runner compile exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return _children_cpu() - cpu0


def compare(baseline: Path, projects: dict[str, Path], rounds: int) -> dict[str, Any]:
    """This checkout's whole-process compile against ``baseline``'s on each project,
    interleaved round by round (a noisy machine hits both alike); CPU seconds and the ratio
    of the medians (this / baseline). This checkout is timed twice a round: with Spark's
    grammar verdicts cached (a cache of the bench's own, filled by one untimed compile: every
    compile after a project's first on a machine) and with none (a first compile, the cold
    case)."""
    out: dict[str, Any] = {}
    for name, project in projects.items():
        ours: list[float] = []
        cold: list[float] = []
        theirs: list[float] = []
        with tempfile.TemporaryDirectory(prefix="runner-compile-bench-cache-") as cache:
            _compile_cpu(REPO, project, cache)  # fills the cache, untimed
            for i in range(rounds):
                order = [(REPO, ours, cache), (REPO, cold, ""), (baseline, theirs, None)]
                for checkout, xs, c in (order if i % 2 == 0 else order[::-1]):
                    xs.append(_compile_cpu(checkout, project, c))
        ratio = statistics.median(ours) / statistics.median(theirs)
        cold_ratio = statistics.median(cold) / statistics.median(theirs)
        out[name] = {"this_cpu": ours, "this_cold_cpu": cold, "baseline_cpu": theirs,
                     "ratio": round(ratio, 3), "cold_ratio": round(cold_ratio, 3)}
        print(f"| {name} | {statistics.median(ours):.2f} | {statistics.median(cold):.2f} | "
              f"{statistics.median(theirs):.2f} | {ratio:.2f} | {cold_ratio:.2f} |")
    return out


def time_in_process(project: Path, repeat: int) -> dict[str, list[float]]:
    """load + compile + write in this interpreter; render alone timed separately."""
    from runner.build import compile_project, write_target
    from runner.compile.render import render_models
    from runner.project.loader import load_project

    stages: dict[str, list[float]] = {"load": [], "compile": [], "write": [], "total": [],
                                      "render_only": [], "total_cpu": []}
    for _ in range(repeat):
        c0 = time.process_time()
        t0 = time.perf_counter()
        proj = load_project(str(project))
        t1 = time.perf_counter()
        result = compile_project(proj)
        t2 = time.perf_counter()
        write_target(proj, result)
        t3 = time.perf_counter()
        stages["total_cpu"].append(time.process_time() - c0)
        if not result.ok:
            first = result.errors[0]
            sys.exit(f"generated project has {len(result.errors)} errors, e.g. "
                     f"{first.path}:{first.line}: {first.rule}: {first.message}")
        render_models(proj)
        t4 = time.perf_counter()
        for key, value in (("load", t1 - t0), ("compile", t2 - t1), ("write", t3 - t2),
                           ("total", t3 - t0), ("render_only", t4 - t3)):
            stages[key].append(value)
        models = len(result.plan.steps)
    stages["models"] = [float(models)]
    stages["warnings"] = [float(len(result.violations))]
    return stages


def profile(project: Path, top: int = 25) -> None:
    """One load+compile+write under cProfile: the functions with the most cumulative time."""
    import cProfile
    import io
    import pstats

    from runner.build import compile_project, write_target
    from runner.project.loader import load_project

    prof = cProfile.Profile()
    prof.enable()
    proj = load_project(str(project))
    write_target(proj, compile_project(proj))
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(top)
    print(buf.getvalue())


def _fmt(xs: list[float]) -> str:
    return f"{statistics.median(xs):.2f}"


def docs_rows(d: dict[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    """The rows of docs/BENCHMARKS.md for a result file of this bench (``bench.report``)."""
    cache = {"on": ", grammar verdicts cached after the first", "off": ", no cache"}.get(
        d.get("verdict_cache", ""), "")
    rows = [(f"`runner compile` of {d['models']} generated models, whole process{cache} "
             f"(target < {d['target_seconds']:g} s)",
             f"{statistics.median(d['process_seconds']):.2f} s wall, "
             f"{statistics.median(d['process_cpu_seconds']):.2f} s CPU (median of {d['repeat']})")]
    for name, c in (d.get("compared") or {}).items():
        if "cold_ratio" in c:
            rows.append((f"compile CPU, {name}: this / baseline checkout, Spark's grammar "
                         "verdicts cached (every compile after a project's first)",
                         f"{c['ratio']:.2f}x"))
            rows.append((f"compile CPU, {name}: this / baseline checkout, no cache (a first "
                         "compile)", f"{c['cold_ratio']:.2f}x"))
        else:
            rows.append((f"compile CPU, {name}: this / baseline checkout", f"{c['ratio']:.2f}x"))
    return command_line("compile_bench", ("repeat", d["repeat"]),
                ("baseline", "CHECKOUT" if d.get("baseline") else None)), rows


def main(argv: list[str] | None = None) -> int:
    ap = bench_parser(__doc__, json=True)
    ap.add_argument("--models", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--keep", action="store_true", help="keep the generated project")
    ap.add_argument("--baseline", type=Path, default=None, metavar="CHECKOUT",
                    help="also compare whole-process compile CPU with another checkout's "
                         "runner (e.g. a `git worktree` of an older commit), on the example "
                         "project and the generated one, interleaved")
    ap.add_argument("--profile", action="store_true",
                    help="also run one in-process compile under cProfile; print the top entries")
    args = ap.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="runner-compile-bench-"))
    project = tmp / "project"
    try:
        kinds = generate_project(project, args.models)
        # in-process first: its first repetition is the only cold one here
        stages = time_in_process(project, args.repeat)
        proc_times, proc_cpu, report = time_process(project, args.repeat)
        if args.profile:
            profile(project)
        compared = None
        if args.baseline is not None:
            print(f"\n## whole-process compile CPU s, median of {args.repeat}: this checkout "
                  f"vs {args.baseline}\n\n| project | this, cached | this, no cache | "
                  "baseline | ratio | ratio, no cache |\n|---|---:|---:|---:|---:|---:|")
            compared = compare(args.baseline, {"example project": REPO,
                                               f"{args.models} generated models": project},
                               args.repeat)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    models = int(stages.pop("models")[0])
    warnings = int(stages.pop("warnings")[0])
    assert models == args.models, (models, args.models)

    med = statistics.median(proc_times)
    print(f"\n## runner compile, {models} models "
          f"({', '.join(f'{v} {k}' for k, v in kinds.items())}); {warnings} warnings\n")
    print("| measure | median s | min s | max s | first s | per model ms |")
    print("|---|---:|---:|---:|---:|---:|")
    print(f"| whole process (`runner compile`) | {med:.2f} | {min(proc_times):.2f} | "
          f"{max(proc_times):.2f} | {proc_times[0]:.2f} | {1000 * med / models:.2f} |")
    cmed = statistics.median(proc_cpu)
    print(f"| whole process, CPU (user+sys) | {cmed:.2f} | {min(proc_cpu):.2f} | "
          f"{max(proc_cpu):.2f} | {proc_cpu[0]:.2f} | {1000 * cmed / models:.2f} |")
    labels = {"total": "in-process load+render+lint+plan+write", "load": "  load",
              "compile": "  render+graph+lint+plan", "write": "  write target/",
              "render_only": "  (render alone)",
              "total_cpu": "in-process total, CPU"}
    for key, label in labels.items():
        xs = stages[key]
        print(f"| {label} | {_fmt(xs)} | {min(xs):.2f} | {max(xs):.2f} | {xs[0]:.2f} | "
              f"{1000 * statistics.median(xs) / models:.2f} |")
    verdict = "PASS" if med < TARGET_SECONDS else "FAIL"
    print(f"\ntarget: {models} models under {TARGET_SECONDS:.0f} s as a whole process -> "
          f"{verdict} ({med:.2f} s wall, {cmed:.2f} s CPU, median of {len(proc_times)}; "
          f"load average at end {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")

    write_result(__file__, {
        "models": models, "kinds": kinds, "warnings": warnings,
        "repeat": args.repeat, "process_seconds": proc_times, "process_cpu_seconds": proc_cpu,
        "in_process_seconds": stages,
        "verdict_cache": "off" if os.environ.get("RUNNER_CACHE_DIR") == "" else "on",
        "target_seconds": TARGET_SECONDS, "pass": med < TARGET_SECONDS,
        "machine": machine(), "runner_stdout_tail": report.get("stdout_tail"),
        "git": git_state(), "baseline": str(args.baseline) if args.baseline else None,
        "compared": compared,
    }, args.json)
    return 0 if med < TARGET_SECONDS else 1


if __name__ == "__main__":
    raise SystemExit(main())
