"""After a soak: the aged pipeline against a fresh one, side by side, under the same load.

    .venv/bin/python -m bench.soak_paired --dir DIR [--batches 200] [--json OUT]

``bench.soak`` compares its first 200 batches with its last 200, hours apart; on a machine
shared with other work the load differs between the two windows, and so do the timings. This
runs the comparison at one time instead: ``--batches`` more input files for the soaked pipeline
in ``DIR`` (its tables, logs and checkpoint after thousands of batches), and the same number
for a fresh copy of the project (same settings, empty tables), and both ``runner stream
--available-now`` processes run at once, so both see the same machine. Reported: per-batch
seconds of each (median, mean), their ratio (aged / fresh), and both pipelines' tables checked
exact against the reference computed from their input. Results:
``bench/results/soak_paired-<date>-<sha>.json`` (or ``--json``).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import yaml

from bench.common import bench_parser, write_result
from bench.soak import batch_lines, run_stream, soak_project, window_stats, write_files
from tests.support.reference import actual_tables, compare, expected_tables


def main(argv: list[str] | None = None) -> int:
    parser = bench_parser(__doc__, json=True)
    parser.add_argument("--dir", type=Path, required=True, help="a finished bench.soak run")
    parser.add_argument("--batches", type=int, default=200)
    args = parser.parse_args(argv)

    aged = args.dir / "project"
    config = yaml.safe_load((aged / "project.yml").read_text())
    events = len(next(iter(sorted((args.dir / "reference").glob("*.json"))))
                 .read_text().splitlines())
    done = len(list((args.dir / "reference").glob("*.json")))
    write_files(args.dir / "reference", batch_lines(args.batches, events, first=done),
                first=done)
    fresh_dir = args.dir / f"fresh-{done}"
    fresh_ref = fresh_dir / "reference"
    write_files(fresh_ref, batch_lines(args.batches, events, first=done), first=done)
    fresh = soak_project(fresh_dir / "project",
                         source={**config["source"], "path": str(fresh_ref)},
                         every=config["maintenance"]["every_batches"],
                         keep=config["maintenance"]["keep_batches"])
    print(f"paired: {args.batches} batches on the aged pipeline ({done} batches so far) and on "
          f"a fresh one, at once", flush=True)
    results: dict[str, Any] = {}

    def run(name: str, root: Path) -> None:
        results[name] = run_stream(root, args.batches)

    threads = [threading.Thread(target=run, args=(n, r)) for n, r in
               (("aged", aged), ("fresh", fresh))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out: dict[str, Any] = {"batches": args.batches, "aged_batches_before": done}
    for name, (batches, _events, sampler, code) in results.items():
        at = [b["at"] for b in batches]
        intervals = [b - a for a, b in zip(at, at[1:])]
        out[name] = {"exit_code": code, "batches": len(batches),
                     "batch_seconds": window_stats(intervals),
                     "run_batch_seconds": window_stats([float(b["seconds"]) for b in batches]),
                     "jvm_mb_last": sampler.series[-1]["jvm_mb"] if sampler.series else None,
                     "driver_mb_last": (sampler.series[-1]["driver_mb"]
                                        if sampler.series else None)}
    out["ratio_median"] = round(out["aged"]["batch_seconds"]["median"]
                                / out["fresh"]["batch_seconds"]["median"], 3)
    out["ratio_mean"] = round(out["aged"]["batch_seconds"]["mean"]
                              / out["fresh"]["batch_seconds"]["mean"], 3)
    exact = {}
    for name, root, ref in (("aged", aged, args.dir / "reference"),
                            ("fresh", fresh, fresh_ref)):
        diffs = compare(expected_tables(ref), actual_tables(root / config["warehouse"]))
        exact[name] = all(d["lost"] == 0 and d["duplicated_or_extra"] == 0
                          for d in diffs.values())
    out["exact"] = exact
    print(json.dumps(out, indent=1))
    write_result(__file__, out, args.json)
    ok = all(exact.values()) and out["ratio_median"] <= 1.2
    print(f"paired {'OK' if ok else 'FAILED'}: aged/fresh median ratio {out['ratio_median']}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
