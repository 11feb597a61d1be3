"""``runner stream --metrics-port``: Prometheus metrics scraped over HTTP while a real stream
runs (the CLI in its own process, a 1 s processing-time trigger, the files source), compared
with what the tables hold, read back with delta-rs after the stream stopped.

One engine (rs): the figures come from the batch loop (each batch's result, Spark's query
progress), not from the writer; both engines fill the same WriteResult per table, so the
engine changes the values of the commit histogram, not which series exist or how they add up.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from runner.demo import write_demo_files
from runner.sinks.tables import read_table
from tests.support.projects import BASE_YML, EXAMPLE_FILES, write_project

pytestmark = pytest.mark.spark

TABLES = ("request_logs", "error_events", "performance_metrics")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _scrape(port: int) -> dict[tuple[str, frozenset], float] | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return None
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


# Nightly (20 s on the CI machine; the suite's 25-minute budget): the metrics' values are
# checked without a stream in tests/unit/test_prometheus.py.
@pytest.mark.slow
def test_metrics_scraped_during_a_real_stream_match_the_tables(tmp_path: Path) -> None:
    port = _free_port()
    yml = (BASE_YML.replace("slow_ms: 1000", "slow_request_ms: 1000")
           .replace("  path: incoming\n", "  path: incoming\n  max_files_per_trigger: 1\n")
           + "metrics:\n  host: 127.0.0.1\n")
    root = write_project(tmp_path / "proj", EXAMPLE_FILES, project_yml=yml)
    demo = write_demo_files(root / "incoming", events=600, files=2, poison_every=50)
    files = sorted((root / "incoming").glob("*.json"))
    lines_per_file = [len(f.read_text().splitlines()) for f in files]  # what Spark reads
    records = sum(1 for f in files for line in f.read_text().splitlines() if line.strip())
    proc = subprocess.Popen(
        [sys.executable, "-m", "runner", "stream", "--project-dir", str(root),
         "--trigger", "1 second", "--metrics-port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "NO_COLOR": "1"})
    pipeline = frozenset({("pipeline", "test_pipeline"), ("source", "files")})
    try:
        deadline = time.monotonic() + 180
        seen: dict[tuple[str, frozenset], float] | None = None
        while time.monotonic() < deadline and proc.poll() is None:
            seen = _scrape(port)  # over HTTP, while the stream runs
            if seen and seen.get(("runner_source_batches_total", pipeline)) == 2:
                break
            time.sleep(0.5)
        assert proc.poll() is None, proc.communicate()[0]
        assert seen and seen.get(("runner_source_batches_total", pipeline)) == 2, seen
        time.sleep(1.5)  # the progress of the second batch (polled twice a second)
        seen = _scrape(port)
        assert seen is not None
    finally:
        proc.send_signal(signal.SIGTERM)
        out = proc.communicate(timeout=120)[0]
    assert proc.returncode == 0, out

    def value(name: str, **labels: str) -> float | None:
        key = frozenset({("pipeline", "test_pipeline"), *labels.items()})
        return seen.get((name, key))

    for table in TABLES:
        rows = read_table(str(root / "wh" / table)).num_rows
        assert value("runner_table_rows_written_total", table=table) == rows > 0, table
        assert value("runner_table_batches_total", table=table) == 2
        assert value("runner_table_commit_seconds_count", table=table) == 2
        assert value("runner_table_commit_seconds_sum", table=table) > 0
        assert value("runner_table_commit_seconds_bucket", table=table, le="+Inf") == 2
        assert value("runner_table_skipped_replays_total", table=table) == 0
    dead = read_table(str(root / "wh" / "_dead_letter")).num_rows
    assert value("runner_source_dead_letters_total", source="files") == dead == demo.poison
    assert value("runner_source_records_total", source="files") == records  # blanks skipped
    assert 0 <= value("runner_source_last_batch_age_seconds", source="files") < 60
    assert value("runner_source_last_batch_timestamp_seconds", source="files") > 1.7e9
    assert value("runner_source_lag_records", source="files") is None  # files: not known
    assert value("runner_parked_models") == 0
    # Spark's progress of the last batch: one file's lines.
    assert value("runner_query_batch_id") == 1
    assert value("runner_query_input_rows") in lines_per_file
    assert value("runner_query_processed_rows_per_second") > 0
    assert value("runner_query_duration_seconds", phase="addBatch") > 0
