"""Hostile input through the whole pipeline (source -> parse -> models -> Delta), in one file.

Every non-blank line is either a row in the model tables or a dead letter with a reason; the
pipeline carries on and the good records land. The reasons follow the semantics decided (and
documented) in :mod:`runner.runtime.batches.parse`; tests/spark/test_parse.py has the finer catalogue at the
parse level. Duplicate event ids are not an input error: append models keep every copy, a
merge model keyed on eventId keeps one row per id (docs/RELIABILITY.md).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from runner.build import compile_project
from runner.project.loader import load_project
from runner.runtime.start.stream import run_stream
from runner.sinks.tables import read_table
from tests.support.events import results_into
from tests.support.projects import BASE_YML, EXAMPLE_FILES, write_project

pytestmark = pytest.mark.spark

MODELS = dict(EXAMPLE_FILES)  # models, macros and the seed
# A merge model keyed on eventId: one row per id, across batches; `copies` counts deliveries.
MODELS["models/events_by_id.sql"] = """
{{ config(materialized='merge', unique_key='eventId',
          merge_update={'copies': 'target.copies + source.copies', 'last_ts': 'source.last_ts'}) }}
SELECT eventId, count(*) AS copies, max(`timestamp`) AS last_ts
FROM parsed_events
GROUP BY eventId
"""
YML = BASE_YML.replace("vars:\n  slow_ms: 1000\n", "vars:\n  slow_request_ms: 1000\n")

TS = '"timestamp":"2026-03-12T10:00:00Z"'
BIG = "x" * (10 * 1024 * 1024)


def good(event_id: str, **fields: object) -> bytes:
    record = {"eventId": event_id, "timestamp": "2026-03-12T10:00:00Z",
              "user": {"userId": "u1", "country": "IE"},
              "request": {"endpoint": "/a", "method": "GET", "latency_ms": 7, "status_code": 200},
              "errors": [], **fields}
    return json.dumps(record).encode()


VALID = "valid"
# case -> (line bytes, VALID or a substring of the dead-letter reason)
CASES: dict[str, tuple[bytes, str]] = {
    "good_1": (good("g1"), VALID),
    "not_json": (b"this is not json", "invalid JSON"),
    "array": (b'[{"eventId":"a1",' + TS.encode() + b"}]", "not a JSON object (array)"),
    "scalar_number": (b"42", "not a JSON object (number)"),
    "scalar_string": (b'"hello"', "not a JSON object (string)"),
    "scalar_null": (b"null", "not a JSON object (null)"),
    "truncated": (b'{"eventId":"t1",' + TS.encode() + b',"user":{', "invalid JSON"),
    "wrong_type_int": (good("w1", request={"endpoint": "/a", "latency_ms": "abc"}),
                       'field request.latency_ms: expected INT, got "abc"'),
    "wrong_type_float_int": (good("w2", request={"status_code": 12.5}),
                             "field request.status_code: expected INT, got 12.5"),
    "wrong_type_struct": (good("w3", user="bob"), "field user: expected STRUCT"),
    "wrong_type_timestamp": (good("w4", timestamp="yesterday"),
                             'field timestamp: expected TIMESTAMP, got "yesterday"'),
    # STRING accepts any JSON value as its JSON text (documented coercion in parse.py).
    "number_into_string": (good("g2", user={"userId": 12345}), VALID),
    "missing_not_null": (b"{" + TS.encode() + b',"user":{"userId":"u"}}',
                         "missing NOT NULL field eventId"),
    "null_not_null": (b'{"eventId":null,' + TS.encode() + b"}", "NOT NULL field eventId is null"),
    "missing_timestamp": (b'{"eventId":"m3"}', "missing NOT NULL field timestamp"),
    "big_valid": (good("big1", note=BIG), VALID),  # 10 MB, in an undeclared field
    "big_dead": (b'{"eventId":"big2","user":{"userId":"' + BIG.encode() + b'"}}',
                 "missing NOT NULL field timestamp"),
    "too_deep": (b'{"eventId":"d1",' + TS.encode() + b',"x":' + b"[" * 5000 + b"]" * 5000
                 + b"}", "nested deeper than 1000 levels"),
    "deep_ok": (good("g3", x=json.loads("[" * 500 + "]" * 500)), VALID),
    "duplicate_1": (good("dup"), VALID),
    "duplicate_2": (good("dup"), VALID),
    "good_2": (good("g4"), VALID),
}
BLANK = [b"", b"   ", b"\t", b"\r"]

# Invalid UTF-8 (a lone 0xFF byte, a truncated 2-byte sequence), inside a string value and
# outside any value. See test_invalid_utf8_is_dead_lettered_readably for what goes wrong today.
UTF8_CASES: dict[str, tuple[bytes, str]] = {
    "bad_utf8_in_string": (good("u1").replace(b'"userId": "u1"', b'"userId": "u\xff\xc3"'),
                           "invalid UTF-8"),
    "bad_utf8_outside": (b'\xff\xfe{"eventId":"u2",' + TS.encode() + b"}", "invalid UTF-8"),
    "good_utf8": (good("u3", user={"userId": "Zoë 東京 \U0001F600"}), VALID),
}


def _write(directory: Path, name: str, lines: list[bytes]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f".{name}.tmp"
    tmp.write_bytes(b"\n".join(lines) + b"\n")
    tmp.replace(directory / name)


def _run_cases(tmp_path: Path, cases: dict[str, tuple[bytes, str]], engine: str):
    """Write the cases (blank lines between them) as one file, run one batch, read back."""
    project = load_project(write_project(tmp_path / "p", MODELS, project_yml=YML, engine=engine))
    lines = []
    for i, (line, _) in enumerate(cases.values()):
        lines.append(line)
        lines.append(BLANK[i % len(BLANK)])  # blank lines between records: not records
    _write(project.root / "incoming", "hostile.json", lines)
    plan = compile_project(project).plan
    batches = []
    run_stream(project, plan, mode="available_now", trigger="1 second",
               report=results_into(batches))
    assert len(batches) == 1
    dead = read_table(str(project.table_path("_dead_letter"))).to_pylist()
    logs = read_table(str(project.table_path("request_logs"))).to_pylist()
    # Conservation: every non-blank line is a row in parsed_events or a dead letter, once.
    assert batches[0].input_rows == len(cases)
    assert len(logs) + len(dead) == len(cases)
    _check_reasons(cases, dead)
    return project, dead, logs


def _check_reasons(cases: dict[str, tuple[bytes, str]], dead: list[dict]) -> None:
    by_raw = {d["raw"]: d for d in dead}
    wrong = []
    for case, (line, expected) in cases.items():
        text = line.decode("utf-8", errors="replace")
        if expected == VALID:
            continue
        row = by_raw.get(text)
        if row is None:
            wrong.append(f"{case}: not dead-lettered (raw as stored: not found)")
        elif expected not in row["reason"]:
            wrong.append(f"{case}: reason {row['reason']!r} lacks {expected!r}")
    assert not wrong, "\n".join(wrong)


def test_every_hostile_kind_in_one_file(tmp_path, delta_engine) -> None:
    project, dead, logs = _run_cases(tmp_path, CASES, delta_engine)
    assert all(d["_source_file"].endswith("hostile.json") and d["_batch_id"] == 0 for d in dead)

    expected_ids = Counter(json.loads(line)["eventId"] for line, kind in CASES.values()
                           if kind == VALID)
    assert Counter(str(r["eventId"]) for r in logs) == expected_ids
    assert expected_ids["dup"] == 2  # append models keep both copies of a duplicate id
    number = next(r for r in logs if r["eventId"] == "g2")
    assert number["userId"] == "12345"
    merged = {r["eventId"]: r["copies"] for r in
              read_table(str(project.table_path("events_by_id"))).to_pylist()}
    assert merged == dict(expected_ids)  # one row per id; dup delivered twice: copies 2

    # The same id again in a later batch: append models keep a third row, the merge model
    # still has one row for it (its merge_update accumulates the deliveries).
    _write(project.root / "incoming", "again.json", [good("dup")])
    run_stream(project, compile_project(project).plan, mode="available_now", trigger="1 second")
    logs = read_table(str(project.table_path("request_logs"))).to_pylist()
    assert sum(r["eventId"] == "dup" for r in logs) == 3
    merged = {r["eventId"]: r["copies"] for r in
              read_table(str(project.table_path("events_by_id"))).to_pylist()}
    assert merged["dup"] == 3 and len(merged) == len(expected_ids)


def test_invalid_utf8_is_dead_lettered_readably(tmp_path, delta_engine) -> None:
    project, dead, logs = _run_cases(tmp_path, UTF8_CASES, delta_engine)
    assert [r["userId"] for r in logs] == ["Zoë 東京 \U0001F600"]
    assert all("\ufffd" in d["raw"] for d in dead)
