"""One run of ``bench.scale_bench``: ``python -m bench.scale_worker CONFIG`` loads, compiles
and streams the project the config names in this process, then prints one line,
:data:`PREFIX` and a JSON report (input rows, per-batch seconds and writes, stream, compile and
session seconds, the Python process's and its JVMs' peak memory, optional timers)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from bench.processes import command_name, descendants, status_kb

PREFIX = "SCALE "


def _jvm_pids(root: int) -> list[int]:
    """``java`` processes under ``root`` (the driver JVM; executors in local-cluster)."""
    return [pid for pid in descendants(root) if command_name(pid) == "java"]


def worker(cfg: dict[str, Any]) -> None:
    """Run the runner once in this process; print one ``SCALE {json}`` line."""
    t_start = time.perf_counter()
    from runner.build import compile_project
    from runner.events import BatchDone, Event
    from runner.project.loader import load_project
    from runner.runtime.batches.batch import BatchResult
    from runner.runtime.start.stream import run_stream

    if cfg.get("arrow_appends"):  # contrast: every append through toArrow + write_deltalake
        import runner.sinks.rs as rs

        original = rs.RsWriter._prepare

        def via_arrow(self, spec, data, rows_hint=None):  # type: ignore[no-untyped-def]
            if spec.materialized == "append" and not isinstance(data, rs.pa.Table):
                return rs.as_nullable(data.toArrow())
            return original(self, spec, data, rows_hint)

        rs.RsWriter._prepare = via_arrow  # type: ignore[method-assign]

    timers: dict[str, list[float]] = {}
    if cfg.get("profile"):
        import runner.sinks.rs as rs

        def timed(name: str, fn: Any) -> Any:
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                t0 = time.perf_counter()
                try:
                    return fn(*args, **kwargs)
                finally:
                    timers.setdefault(name, []).append(time.perf_counter() - t0)
            return wrapper

        for name in ("write_staged", "collect_staged", "commit_staged", "check_table_schema"):
            setattr(rs, name, timed(name, getattr(rs, name)))
        rs.RsWriter.committed_version = timed(  # type: ignore[method-assign]
            "committed_version", rs.RsWriter.committed_version)

    project = load_project(Path(cfg["project"]))
    plan = compile_project(project).plan

    progress: list[dict[str, Any]] = []
    if cfg.get("profile"):
        from pyspark.sql.streaming import StreamingQueryListener

        from runner.runtime.client.session import build_session

        spark = build_session(master=project.config.spark.master,
                              conf=dict(project.config.spark.conf),
                              app_name=f"runner:{project.config.name}",
                              log_dir=str(project.root / "logs"))

        class Listener(StreamingQueryListener):
            def onQueryStarted(self, event: Any) -> None: ...
            def onQueryIdle(self, event: Any) -> None: ...
            def onQueryTerminated(self, event: Any) -> None: ...

            def onQueryProgress(self, event: Any) -> None:
                p = event.progress
                progress.append({"batch": p.batchId, "rows": p.numInputRows,
                                 "durations_ms": dict(p.durationMs)})

        spark.streams.addListener(Listener())

    batches: list[dict[str, Any]] = []
    t_compiled = time.perf_counter()
    def on_batch(event: Event) -> None:
        if isinstance(event, BatchDone) and isinstance(r := event.result, BatchResult):
            batches.append({"batch": r.batch_id, "rows": r.input_rows, "seconds": r.seconds,
                            "writes": {w.model: round(w.seconds, 3) for w in r.writes}})

    summary = run_stream(project, plan, mode="available_now", trigger="1 second",
                         report=on_batch)
    t_end = time.perf_counter()
    time.sleep(0.5)  # the listener's last progress event arrives asynchronously
    jvms = _jvm_pids(os.getpid())
    from pyspark.sql import SparkSession

    from runner.runtime.client.session import session_info

    active = SparkSession.getActiveSession()
    print(PREFIX + json.dumps({
        "input_rows": summary.input_rows,
        "batches": batches,
        "stream_seconds": summary.seconds,
        "in_process_seconds": t_end - t_start,
        "compile_seconds": t_compiled - t_start,
        "session_seconds": session_info(active).start_seconds if active else None,
        "py_vmhwm_mb": status_kb(os.getpid(), "VmHWM") / 1024,
        "jvm_vmhwm_mb": [status_kb(p, "VmHWM") / 1024 for p in jvms],
        "timers": {k: {"n": len(v), "sum": sum(v), "max": max(v)} for k, v in timers.items()},
        "progress": progress,
    }), flush=True)


def main(argv: list[str] | None = None) -> int:
    """``CONFIG``: the JSON file ``bench.scale_bench`` wrote for this run."""
    path = (argv if argv is not None else sys.argv[1:])[0]
    with open(path, encoding="utf-8") as f:
        worker(json.load(f))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
