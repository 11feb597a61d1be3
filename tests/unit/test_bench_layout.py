"""bench/ is a package run as ``python -m bench.<name>``: no ``sys.path`` edits, every module
importable without starting Spark, one current result per bench named
``<bench>-<UTC date YYYYMMDD>-<git short sha>.json``; and the imports go one way: bench may
import ``tests.support``, tests import nothing from ``bench`` or ``scripts``; no module over
runner/'s line budget (a bench is small scripts over shared helpers). No JVM."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

from tests.unit.test_layout import MAX_LINES, imported_roots

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"
#: The name of every file in bench/results (the same pattern as ``bench.common.RESULT_NAME``,
#: spelt here because tests import nothing from bench/).
RESULT_NAME = re.compile(r"^(?P<bench>[a-z][a-z0-9_]*)-(?P<date>\d{8})-(?P<sha>[0-9a-f]{7,40})"
                         r"\.json$")
#: A test may import the one script it tests (not test support): the jars fetcher's test and
#: the corpus builder's, the functions probe's check against Spark.
SCRIPT_UNDER_TEST = {"tests/unit/test_jars.py": {"scripts"},
                     "tests/unit/test_spark_sql_corpus_builder.py": {"scripts"},
                     # checks what scripts/spark_functions.py recorded, with its probe's values
                     "tests/spark/test_signatures_vs_spark.py": {"scripts"}}


def _bench_modules() -> list[str]:
    return sorted(p.stem for p in BENCH.glob("*.py") if p.stem != "__init__")


def test_bench_edits_no_sys_path() -> None:
    edits = []
    for path in sorted(BENCH.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Attribute) and node.attr == "path" and \
                    isinstance(node.value, ast.Name) and node.value.id == "sys":
                edits.append(f"{path.name}:{node.lineno}: sys.path")
        edits += [f"{path.name}: noqa: E402" for _ in range(text.count("noqa: E402"))]
    assert edits == []


def test_no_bench_module_over_the_line_budget() -> None:
    long = {p.name: n for p in sorted(BENCH.glob("*.py"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}, f"bench modules over {MAX_LINES} lines: {long}"


def test_tests_never_import_bench_or_scripts() -> None:
    bad = {}
    for path in sorted((REPO / "tests").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        wrong = imported_roots(path) & ({"bench", "scripts"} - SCRIPT_UNDER_TEST.get(rel, set()))
        if wrong:
            bad[rel] = sorted(wrong)
    assert bad == {}, "tests import bench/ or scripts/ (move what they need to tests/support)"


def test_every_bench_module_imports_as_bench_dot_name_without_spark() -> None:
    """A fresh interpreter imports every module (import only: nothing runs) and pyspark is
    still not loaded: a bench's module level starts no JVM."""
    names = _bench_modules()
    code = ("import importlib, json, sys\n"
            f"for name in {names!r}: importlib.import_module('bench.' + name)\n"
            "print(json.dumps(sorted(m for m in ('pyspark', 'py4j') if m in sys.modules)))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []
    assert {"common", "stream_bench", "compile_bench", "kafka_bench"} <= set(names)


def test_results_hold_one_current_file_per_bench_named_by_the_scheme() -> None:
    files = sorted(p.name for p in (BENCH / "results").iterdir())
    misnamed = [f for f in files if not RESULT_NAME.match(f)]
    assert misnamed == [], "bench/results/<bench>-<YYYYMMDD>-<git short sha>.json only"
    benches = Counter(RESULT_NAME.match(f)["bench"] for f in files)  # type: ignore[index]
    assert {b: n for b, n in benches.items() if n > 1} == {}, "one current result per bench"
    assert set(benches) <= set(_bench_modules()), "a result names its bench module"
