"""Pins (runner/checkpoint/pins.py) and the start-up refusals of runner/runtime/batches/pinned_lookups.py that
need no JVM: a source's Delta table is written with delta-rs, independently of the runner."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from runner.checkpoint.pins import Pin, Pins, SeedContent
from runner.compile.plan import Column, Lookup, Step
from runner.errors import ConfigError
from runner.ops.status import _lookups as status_lookups
from runner.project.config import ModelConfig
from runner.runtime.batches.pinned_lookups import Lookups


def test_a_pin_is_written_once_and_a_later_lookup_is_added_without_changing_it(tmp_path):
    pins = Pins(tmp_path)
    assert pins.get(3) == {}
    first = pins.pin(3, {"crm.customers": Pin("source", 4, "t0", 1.0)})
    again = pins.pin(3, {"crm.customers": Pin("source", 9, "t1", 2.0),
                         "codes": Pin("seed", "abc", "t1")})
    assert first == {"crm.customers": Pin("source", 4, "t0", 1.0)}
    assert again == {"crm.customers": Pin("source", 4, "t0", 1.0),
                     "codes": Pin("seed", "abc", "t1")}
    assert Pins(tmp_path).get(3) == again  # read back from the file
    assert pins.latest() == (3, again)
    assert pins.prune(4) == 1 and pins.batch_ids() == []


def test_batch_files_fold_into_runs_that_answer_the_same(tmp_path):
    """Every batch keeps its pins when its file is folded into runs: the same version in a
    row is one run, a new version starts another, a batch without pins stays without, and a
    lookup pinned later for old batches (a backfill) joins the runs without a split."""
    pins = Pins(tmp_path)
    src = {b: Pin("source", 1 if b < 5 else 2, f"t{b}", 10.0 if b < 5 else 20.0)
           for b in range(10) if b != 7}  # batch 7 read no lookup
    for b, pin in src.items():
        pins.pin(b, {"crm.c": pin})
    assert pins.fold(before=9, every=20) == 0  # not enough files yet
    assert pins.fold(before=9, every=3) == 8  # batches 0..8 but 7; batch 9 stays a file
    assert pins.batch_ids() == [9]
    runs = json.loads((tmp_path / "pins" / "runs.json").read_text())["lookups"]["crm.c"]
    assert [r[:2] for r in runs] == [[0, 4], [5, 6], [8, 8]]
    assert runs[0][2]["pinned_at"] == "t0"  # the run's first batch's
    for b in range(12):  # the version each batch read, as pinned
        got = pins.get(b)
        if b in src:
            assert (got["crm.c"].version, got["crm.c"].committed_at) == (
                src[b].version, src[b].committed_at)
        else:
            assert got == {}
    # a backfill pins a new seed for batches 0..8 after the fold: runs of its own
    for b in range(9):
        pins.pin(b, {"codes": Pin("seed", "h", f"s{b}")})
    assert pins.get(3)["crm.c"].version == 1 and pins.get(3)["codes"].version == "h"
    assert pins.fold(before=9, every=1) == 9
    runs = json.loads((tmp_path / "pins" / "runs.json").read_text())["lookups"]
    assert [r[:2] for r in runs["codes"]] == [[0, 8]]
    assert [r[:2] for r in runs["crm.c"]] == [[0, 4], [5, 6], [8, 8]]  # unchanged
    assert pins.latest() is not None and pins.latest()[0] == 9
    # a pin never changes, folded or not
    assert pins.pin(8, {"crm.c": Pin("source", 9, "x", 1.0)})["crm.c"].version == 2
    # a crash between runs.json and the deletions leaves a folded file: folded again, no change
    before = (tmp_path / "pins" / "runs.json").read_text()
    left = {"batch_id": 8, "lookups": {k: v.to_dict() for k, v in pins.get(8).items()}}
    (tmp_path / "pins" / f"{8:020d}.json").write_text(json.dumps(left))
    assert pins.fold(before=9, every=1) == 1
    assert (tmp_path / "pins" / "runs.json").read_text() == before
    assert pins.prune(5) == 0 and pins.get(4) == {} and pins.get(5)["crm.c"].version == 2


def test_seed_content_is_kept_by_hash_and_never_replaced(tmp_path):
    pins = Pins(tmp_path)
    pins.keep_seed("h1", SeedContent("codes", (("code", "STRING"),), "code\nDE\n"))
    pins.keep_seed("h1", SeedContent("codes", (("code", "STRING"),), "code\nFR\n"))
    kept = pins.seed("h1")
    assert kept is not None and kept.csv == "code\nDE\n" and pins.seed("h2") is None


def _dim(tmp_path, columns):
    path = tmp_path / "dim"
    write_deltalake(str(path), pa.table({c: ["x"] for c in columns}), mode="overwrite",
                    schema_mode="overwrite")
    return path


def _reader(tmp_path, location, sql="SELECT d.segment FROM parsed_events e JOIN crm__c d "
                                     "ON e.id = d.id"):
    lk = Lookup("source", "crm.c", "crm__c", str(location), False,
                (Column("id", "STRING"), Column("segment", "STRING")))
    step = Step(name="enriched", path="models/enriched.sql", sql=sql, config=ModelConfig(),
                depends_on=(), columns=(), lookups=("crm__c",))
    return Lookups(tmp_path / "cp", (lk,), "rs", steps=(step,))


def test_a_missing_source_is_refused_naming_it(tmp_path):
    with pytest.raises(ConfigError, match=r"source crm\.c: no Delta table at .*nowhere"):
        _reader(tmp_path, tmp_path / "nowhere").check_start(None)  # type: ignore[arg-type]


def test_a_lost_column_a_model_uses_is_refused_naming_model_and_column(tmp_path):
    dim = _dim(tmp_path, ["id", "segment"])
    _reader(tmp_path, dim).check_start(None)  # type: ignore[arg-type]
    _dim(tmp_path, ["id"])  # the source lost `segment`
    with pytest.raises(ConfigError, match="lost column segment, which model enriched uses"):
        _reader(tmp_path, dim).check_start(None)  # type: ignore[arg-type]
    # a lost column no model names is no reason to stop
    _reader(tmp_path, dim, sql="SELECT d.id FROM parsed_events e JOIN crm__c d "
                                "ON e.id = d.id").check_start(None)  # type: ignore[arg-type]
    assert not (tmp_path / "cp").exists()  # checks only: nothing written


def test_status_shows_each_lookup_version_of_the_last_batch_and_its_age(tmp_path):
    Pins(tmp_path).pin(7, {"crm.c": Pin("source", 2, "t", committed_at=1.0),
                           "codes": Pin("seed", "f" * 64, "t")})
    found = status_lookups(tmp_path)
    assert found["crm.c"]["batch"] == 7 and found["crm.c"]["version"] == 2
    assert found["crm.c"]["age_seconds"] > 0 and found["codes"]["age_seconds"] is None
