"""What every bench shares: the repository, result files, the shared command-line options,
copies of the example project, Spark event logs, Delta counts (processes read from ``/proc``:
:mod:`bench.processes`).

Results: every bench writes ``bench/results/<bench>-<UTC date YYYYMMDD>-<git short sha>.json``
(``<bench>`` is its module name, as in ``python -m bench.<bench>``) and keeps one current file
per bench: writing a new one removes the older ones (they live in git history).

Nothing here imports pyspark or the runner at import time: a bench module imports fast, and
its worker processes import the runner copy their ``PYTHONPATH`` names.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
#: ``<bench>-<YYYYMMDD>-<short sha>.json``: the name of every file in ``bench/results``.
RESULT_NAME = re.compile(r"^(?P<bench>[a-z][a-z0-9_]*)-(?P<date>\d{8})-(?P<sha>[0-9a-f]{7,40})"
                         r"\.json$")


# ---- git, machine, results -----------------------------------------------------------------

def git(*args: str) -> str:
    """``git -C REPO args...``: its stdout, stripped ('' when git fails)."""
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True,
                          text=True).stdout.strip()


def git_state() -> dict[str, Any]:
    """HEAD (short sha and subject) and the runner files that differ from it."""
    return {"head": git("rev-parse", "--short", "HEAD"),
            "head_subject": git("log", "-1", "--format=%s"),
            "runner_uncommitted": git("status", "--porcelain", "runner").splitlines()}


def machine() -> dict[str, Any]:
    """Cores, Python, platform and the load average: what a figure was measured on."""
    return {"cpus": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform(), "loadavg": os.getloadavg()}


def spark_machine() -> dict[str, Any]:
    """:func:`machine` plus the pyspark and Java versions the benches' Spark runs used."""
    import pyspark

    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    return {**machine(), "pyspark": pyspark.__version__,
            "java": java.splitlines()[0] if java else None}


def bench_name(module_file: str) -> str:
    """``bench/stream_bench.py`` -> ``stream_bench``."""
    return Path(module_file).stem


def result_path(bench: str, *, when: dt.datetime | None = None, sha: str | None = None) -> Path:
    """``bench/results/<bench>-<UTC date>-<git short sha>.json``."""
    day = (when or dt.datetime.now(dt.UTC)).astimezone(dt.UTC).strftime("%Y%m%d")
    return RESULTS / f"{bench}-{day}-{sha or git('rev-parse', '--short', 'HEAD') or 'nogit'}.json"


def write_result(module_file: str, doc: Mapping[str, Any], path: Path | None = None) -> Path:
    """Write ``doc`` as JSON to ``path`` (``--json``), else to :func:`result_path`; in the
    second case the bench's older results are removed (one current result per bench)."""
    bench = bench_name(module_file)
    out = path or result_path(bench)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"bench": bench, "when_utc": dt.datetime.now(dt.UTC).isoformat(
        timespec="seconds"), **doc}, indent=1, default=str) + "\n", encoding="utf-8")
    if path is None:
        for old in RESULTS.glob(f"{bench}-*.json"):
            m = RESULT_NAME.match(old.name)
            if old != out and m and m["bench"] == bench:
                old.unlink()
    print(f"raw results: {out}")
    return out


# ---- command line --------------------------------------------------------------------------

#: The options several benches take: name -> (type, default, help).
SHARED_OPTIONS: dict[str, tuple[Any, Any, str]] = {
    "events": (int, None, "events to generate"),
    "files": (int, None, "input files the events are spread over"),
    "max_files": (int, 10, "files per trigger"),
    "rounds": (int, None, "rounds (the order of the variants rotated each round)"),
    "master": (str, "local[2]", "Spark master of every run"),
    "timeout": (float, None, "seconds per run"),
    "workdir": (Path, None, "keep data and outputs here (default: a temp folder, removed)"),
    "json": (Path, None, "result file (default bench/results/<bench>-<UTC date>-<git sha>.json)"),
}


def bench_parser(doc: str | None, **shared: Any) -> argparse.ArgumentParser:
    """A parser described by ``doc``'s first paragraph, with the named shared options:
    ``bench_parser(__doc__, events=1_000_000, master=True, json=True)`` (``True``: the usual
    default; a value: this bench's default). ``conf=True`` adds a repeatable ``--conf
    KEY=VALUE`` (extra Spark settings), ``jars=True`` a ``--jars DIR`` (Spark's jars)."""
    first = (doc or "").strip().split("\n\n")[0]
    ap = argparse.ArgumentParser(description=" ".join(first.split()))
    for name, default in shared.items():
        flag = "--" + name.replace("_", "-")
        if name == "conf":
            ap.add_argument(flag, action="append", default=[], metavar="KEY=VALUE",
                            help="extra Spark setting for every run (project.yml spark.conf); "
                                 "repeatable")
        elif name == "jars":
            ap.add_argument(flag, default=None, metavar="DIR",
                            help="folder of Spark jars for every run's spark.jars; default "
                                 "$RUNNER_JARS_DIR, else .jars/spark; '' for none")
        else:
            kind, usual, text = SHARED_OPTIONS[name]
            ap.add_argument(flag, type=kind, default=usual if default is True else default,
                            help=text)
    return ap


def spark_conf(pairs: list[str]) -> dict[str, str]:
    """``--conf KEY=VALUE`` values as a dict (a pair without ``=`` is a usage error)."""
    bad = [kv for kv in pairs if "=" not in kv]
    if bad:
        raise SystemExit(f"--conf takes KEY=VALUE, not {bad[0]!r}")
    conf = dict(kv.split("=", 1) for kv in pairs)
    allow_spark_conf(conf)  # the bench's own command line: a deployment's choice
    return conf


def spark_jars(folder: str | None) -> tuple[str, list[str]]:
    """The jars folder (``--jars``, else ``$RUNNER_JARS_DIR``, else ``.jars/spark``; '' for
    none) and the jar names in it."""
    if folder is None:
        folder = os.environ.get("RUNNER_JARS_DIR", str(REPO / ".jars" / "spark"))
    names = sorted(p.name for p in Path(folder).glob("*.jar")) if folder.strip() else []
    return folder, names


def progress_record(line: str) -> dict[str, Any] | None:
    """One record of ``runner stream --progress json`` (a JSON object on a line of its own),
    None for any other line (Spark's log, a traceback, a line cut short by a kill)."""
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        doc = json.loads(line)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def is_batch_record(doc: dict[str, Any]) -> bool:
    """``doc`` (a :func:`progress_record`) is a committed batch's record: other events carry a
    ``batch_id`` too (a stop requested while batch N was in flight), under another ``type``;
    records written before ``type`` existed are batches when they have a ``batch_id``."""
    return "batch_id" in doc and doc.get("type", "batch_done") == "batch_done"


def median(xs: Sequence[float]) -> float:
    """The median, NaN for no values (a failed variant still gets a table row)."""
    return statistics.median(xs) if xs else float("nan")


# ---- projects and runner copies ------------------------------------------------------------

def example_project(dest: Path, *, base: str = "project.yml", models: bool = True,
                    extra_models: Mapping[str, str] | None = None, **settings: Any) -> Path:
    """A copy of the example project in ``dest``: ``macros/``, ``seeds/``,
    ``models/`` (unless ``models`` is False), ``extra_models`` (name -> SQL) and ``base`` (a
    project.yml of the repository) with the top-level ``settings`` replaced (``source=``,
    ``delta=``...). What ``dest`` held before is removed (a round reuses its folder)."""
    import yaml

    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    shutil.copytree(REPO / "macros", dest / "macros")
    shutil.copytree(REPO / "seeds", dest / "seeds")
    if models:
        shutil.copytree(REPO / "models", dest / "models")
    (dest / "models").mkdir(exist_ok=True)
    for name, sql in (extra_models or {}).items():
        (dest / "models" / f"{name}.sql").write_text(sql, encoding="utf-8")
    config = yaml.safe_load((REPO / base).read_text(encoding="utf-8"))
    config.update(settings)
    write_project_yml(dest, config)
    return dest


_PROFILES: list[Path] = []


def bench_profiles() -> Path:
    """The bench run's own profiles.yml, in a temporary folder this process points
    ``RUNNER_PROFILES_DIR`` at (the runners it starts inherit it); never the user's."""
    if not _PROFILES:
        import tempfile

        folder = Path(tempfile.mkdtemp(prefix="bench-profiles-"))
        (folder / "profiles.yml").write_text("{}\n", encoding="utf-8")
        os.environ["RUNNER_PROFILES_DIR"] = str(folder)
        _PROFILES.append(folder / "profiles.yml")
    return _PROFILES[0]


def write_project_yml(dest: Path, config: Mapping[str, Any]) -> None:
    """``dest/project.yml`` from ``config``; the deployment's keys in it (the master, locations
    outside the project, brokers, storage options) go to a profile of this project's own in
    :func:`bench_profiles` (``runner.project.boundary.migrate``)."""
    import yaml

    from runner.project.boundary import migrate

    profile = "b_" + hashlib.sha1(str(dest.resolve()).encode()).hexdigest()[:12]
    project = migrate(config, profiles=bench_profiles(), profile=profile)
    (dest / "project.yml").write_text(yaml.safe_dump(project, sort_keys=False), encoding="utf-8")


def bench_project(dest: Path, *, source: Mapping[str, Any], engine: str = "rs",
                  master: str = "local[2]", conf: Mapping[str, str] | None = None,
                  delta: Mapping[str, Any] | None = None, **settings: Any) -> Path:
    """:func:`example_project` as a bench runs it: ``source``, the Delta ``engine`` (never
    ``auto``: a figure names its engine) with any other ``delta`` settings, the Spark
    ``master`` and extra Spark ``conf``; ``settings`` as :func:`example_project` takes them
    (``models=``, ``extra_models=``, ``base=``, top-level keys)."""
    spark: dict[str, Any] = {"master": master, **({"conf": dict(conf)} if conf else {})}
    return example_project(dest, source=dict(source), delta={"engine": engine, **(delta or {})},
                           spark=spark, **settings)


def files_source(path: Path | str, max_files: int) -> dict[str, Any]:
    """project.yml's ``source:`` for input files in ``path``, ``max_files`` per trigger."""
    return {"type": "files", "path": str(path), "max_files_per_trigger": max_files}


def demo_data(folder: Path, events: int, files: int) -> dict[str, Any]:
    """Example-shaped events (``runner.demo``, seed 42, no poison lines) in ``folder``, reused when
    an earlier run wrote the same (``<folder>.json`` says so). Returns what is there and the
    rows each example table should hold (``expected``)."""
    from runner.demo import write_demo_files

    marker = folder.with_suffix(".json")
    want = {"events": events, "files": files, "seed": 42, "poison_every": 0}
    if marker.is_file() and (meta := json.loads(marker.read_text())).get("params") == want:
        print(f"reusing {meta['events']:,} events in {folder}", flush=True)
        return dict(meta)
    shutil.rmtree(folder, ignore_errors=True)
    t0 = time.perf_counter()
    result = write_demo_files(folder, events=events, files=files, seed=42, poison_every=0)
    errors = blanks = size = 0
    for path in sorted(folder.glob("events-*.json")):
        text = path.read_text(encoding="utf-8")
        size += len(text.encode())
        errors += text.count('"errorCode"')
        blanks += sum(1 for line in text.split("\n")[:-1] if not line.strip())
    meta = {"params": want, "events": result.events, "files": result.files, "bytes": size,
            "blank_lines": blanks,
            "expected": {"request_logs": result.events, "performance_metrics": result.events,
                         "error_events": errors},
            "seconds": time.perf_counter() - t0}
    marker.write_text(json.dumps(meta, indent=2))
    print(f"generated {result.events:,} events ({size / 1e6:.0f} MB, {result.files} files, "
          f"{errors:,} errors) in {meta['seconds']:.0f} s", flush=True)
    return meta


def example_config(base: str = "project.yml") -> dict[str, Any]:
    """The repository's ``project.yml`` (or ``base``), parsed."""
    import yaml

    return dict(yaml.safe_load((REPO / base).read_text(encoding="utf-8")))


def snapshot_runner(workdir: Path) -> Path:
    """Copy the work tree's ``runner/`` once: other engineers edit it while a bench runs, and
    every run must use the same code. Returns the folder to put on ``PYTHONPATH``."""
    dest = workdir / "src" / "worktree"
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(REPO / "runner", dest / "runner",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


def tree_digest(root: Path) -> str:
    """A short hash of the ``.py`` files under ``root`` (which runner code a run used)."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def run_env(runner_src: Path | str | None = None, jars_dir: str | None = None, *,
            bench: bool = False) -> dict[str, str]:
    """The environment of a run: loopback Spark, unbuffered output, the runner copy
    ``runner_src`` first on ``PYTHONPATH`` (else the repository's), the repository after it
    when the run is a ``python -m bench.<name>`` worker (``bench``), and ``jars_dir``; the
    bench's own ``RUNNER_PROFILES_DIR`` (:func:`bench_profiles`), never the user's."""
    path = [str(runner_src or REPO)] + ([str(REPO)] if bench and runner_src else [])
    bench_profiles()  # every run reads the bench's own profiles, even one made after this call
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "PYTHONUNBUFFERED": "1", "PYTHONPATH": os.pathsep.join(path)}
    if jars_dir is not None:
        env["RUNNER_JARS_DIR"] = str(Path(jars_dir).resolve()) if jars_dir.strip() else ""
    return env


def table_rows(path: Path | str) -> int | None:
    """Rows of the Delta table at ``path`` (None when there is none), read through a dataset
    (never ``to_pyarrow_table()``: it aborts the process on large tables)."""
    from deltalake import DeltaTable

    if not DeltaTable.is_deltatable(str(path)):
        return None
    return int(DeltaTable(str(path)).to_pyarrow_dataset().count_rows())


def tables_and_columns(warehouse: Path, names: Iterable[str]
                       ) -> tuple[dict[str, int], dict[str, list[str]]]:
    """Rows (-1: no table) and column names of each table ``names`` under ``warehouse``."""
    from deltalake import DeltaTable

    counts: dict[str, int] = {}
    columns: dict[str, list[str]] = {}
    for name in names:
        path = warehouse / name
        if not DeltaTable.is_deltatable(str(path)):
            counts[name] = -1
            continue
        dataset = DeltaTable(str(path)).to_pyarrow_dataset()  # never to_pyarrow_table()
        counts[name] = dataset.count_rows()
        columns[name] = list(dataset.schema.names)
    return counts, columns


def count_tables(warehouse: Path, names: Iterable[str] | None = None) -> dict[str, int]:
    """Rows of the Delta tables under ``warehouse``: each of ``names`` (0 when it has no
    table), else every table there."""
    if names is None:
        names = sorted(p.name for p in warehouse.iterdir()) if warehouse.is_dir() else []
        return {n: rows for n in names if (rows := table_rows(warehouse / n)) is not None}
    return {n: table_rows(warehouse / n) or 0 for n in names}


# ---- Spark event logs ----------------------------------------------------------------------

def event_log_conf(folder: Path) -> dict[str, str]:
    """Make ``folder`` (new, empty) and return the Spark settings that write an uncompressed
    event log into it. They are not on project.yml's allowlist (a path to write): the bench
    opts in as a deployment would, in its environment (``RUNNER_ALLOW_SPARK_CONF``, which the
    runner processes it starts inherit)."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    conf = {"spark.eventLog.enabled": "true", "spark.eventLog.dir": folder.as_uri(),
            "spark.eventLog.compress": "false"}
    allow_spark_conf(conf)
    return conf


def allow_spark_conf(keys: Iterable[str]) -> None:
    """Opt in to Spark settings a bench writes into project.yml, as a deployment does: in this
    process's ``RUNNER_ALLOW_SPARK_CONF`` (:func:`run_env` and the runner processes the bench
    starts take it from there)."""
    allowed = {k for k in os.environ.get("RUNNER_ALLOW_SPARK_CONF", "").split(",") if k}
    os.environ["RUNNER_ALLOW_SPARK_CONF"] = ",".join(sorted(allowed | set(keys)))


def read_events(path: Path) -> list[dict[str, Any]]:
    """The events of one application's log: a rolled ``eventlog_v2_*`` folder or one file."""
    files = sorted(p for p in path.iterdir() if p.name.startswith("events_")) \
        if path.is_dir() else [path]
    out: list[dict[str, Any]] = []
    for f in files:
        with open(f, encoding="utf-8") as fh:
            out.extend(json.loads(line) for line in fh if line.strip())
    return out


def event_logs(folder: Path) -> Iterator[Path]:
    """Every application's log in an event-log folder (``spark.eventLog.dir``)."""
    for path in sorted(folder.iterdir()):
        if not path.name.startswith((".", "appstatus")):
            yield path


def job_description(event: Mapping[str, Any]) -> str:
    """The first line of a ``SparkListenerJobStart``'s description (the runner names its
    jobs ``runner: <model> batch <id>``), else its call site."""
    props = event.get("Properties") or {}
    desc = props.get("spark.job.description") or props.get("callSite.short") or ""
    return str(desc).strip().splitlines()[0] if str(desc).strip() else ""


# ---- the docs' tables (bench.report and the benches that render their own rows) ----------

def command_line(bench: str, *opts: tuple[str, Any]) -> str:
    """``python -m bench.<bench> --opt value ...``, leaving out options that are None."""
    parts = [f"python -m bench.{bench}"]
    parts += [f"--{k}" if v is True else f"--{k} {v:g}" if isinstance(v, float) else
              f"--{k} {v}" for k, v in opts if v is not None and v is not False and v != "None"]
    return "`" + " ".join(parts) + "`"


def span(xs: Sequence[float], unit: str = "", fmt: str = "{:.2f}") -> str:
    """``median<unit> (min-max)``, or just the median when all read the same."""
    med = fmt.format(statistics.median(xs)) + unit
    low, high = fmt.format(min(xs)), fmt.format(max(xs))
    return med if low == high else f"{med} ({low}-{high})"
