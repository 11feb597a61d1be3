"""Values ``from_json`` converts without failing into something the record does not say.

Every member of the class, in every nesting (a top-level field, a
struct field, an array element, a map value), is either stored exactly or dead with a reason
that names the field path: integer epoch seconds that wrap around (x 10^6 in a long) or land
outside years 0001-9999, TIMESTAMP/TIMESTAMP_NTZ/DATE strings outside years 0001-9999, TINYINT
128..255 (Jackson wraps them to negative bytes), FLOAT/DOUBLE overflow (Infinity), numbers
longer than Jackson's 1000 digits, escaped lone UTF-16 surrogates (stored as ``?``). Parsing is
engine-free (no Delta write here); the readback of the boundary years is checked on both
engines at the end.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import TYPE_CHECKING

import pytest

from runner.runtime.batches.parse import parse_batch

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark
UTC = dt.UTC

# kind -> (declared type, a valid JSON value, its stored value)
KINDS: dict[str, tuple[str, str, object]] = {
    "ts": ("TIMESTAMP", '"2024-01-01T00:00:00Z"', dt.datetime(2024, 1, 1, tzinfo=UTC)),
    "ntz": ("TIMESTAMP_NTZ", '"2024-01-01T00:00:00"', dt.datetime(2024, 1, 1)),
    "d": ("DATE", '"2024-01-01"', dt.date(2024, 1, 1)),
    "i": ("INT", "1", 1),
    "b": ("BIGINT", "1", 1),
    "s": ("SMALLINT", "1", 1),
    "t": ("TINYINT", "1", 1),
    "dec": ("DECIMAL(10,2)", "1.5", Decimal("1.50")),
    "f": ("FLOAT", "1.5", 1.5),
    "x": ("DOUBLE", "1.5", 1.5),
    "str": ("STRING", '"a"', "a"),
}
NESTINGS = ("top", "struct", "array", "map")
SCHEMA = ", ".join(
    ["id STRING NOT NULL"]
    + [f"{k} {t}" for k, (t, _, _) in KINDS.items()]
    + ["st STRUCT<" + ", ".join(f"{k}: {t}" for k, (t, _, _) in KINDS.items()) + ">"]
    + [f"a_{k} ARRAY<{t}>" for k, (t, _, _) in KINDS.items()]
    + [f"m_{k} MAP<STRING, {t}>" for k, (t, _, _) in KINDS.items()]
    + ["deep ARRAY<STRUCT<ev: MAP<STRING, ARRAY<TIMESTAMP>>>>"])

LONG = "1" * 2000
TS_RANGE = "timestamp out of range (years 0001-9999; a JSON number is epoch seconds), got "

# kind, JSON value, the reason after "field <path>: " ({v}: the value as the reason shows it)
DEAD: list[tuple[str, str, str]] = [
    # integer epoch seconds: wrapped around by Spark's x 10^6, or beyond 9999 / before 0001
    ("ts", "1704067200000000", TS_RANGE + "1704067200000000"),  # epoch micros: year 222737
    ("ts", "9999999999999999", TS_RANGE + "9999999999999999"),
    ("ts", "18446744073709", TS_RANGE + "18446744073709"),  # wraps to 1969-12-31T23:59:59.44
    ("ts", "288230376151711744", TS_RANGE + "288230376151711744"),  # wraps to exactly 1970-01-01
    ("ts", "9223372036854775807", TS_RANGE + "9223372036854775807"),  # wraps to 1969-12-31
    ("ts", "-9223372036854775808", TS_RANGE + "-9223372036854775808"),
    ("ts", "253402300800", TS_RANGE + "253402300800"),  # +10000-01-01, no wrap
    ("ts", "-62135596801", TS_RANGE + "-62135596801"),  # 0000-12-31T23:59:59
    # timestamp and date strings Spark accepts beyond what readers read
    ("ts", '"+275760-09-13T00:00:00Z"', TS_RANGE + '"+275760-09-13T00:00:00Z"'),
    ("ts", '"10000-01-01T00:00:00Z"', TS_RANGE + '"10000-01-01T00:00:00Z"'),
    ("ts", '"0000-12-31T00:00:00Z"', TS_RANGE + '"0000-12-31T00:00:00Z"'),
    ("ntz", '"10000-01-01T00:00:00"', 'timestamp out of range (years 0001-9999), got '
     '"10000-01-01T00:00:00"'),
    ("ntz", '"-0001-01-01T00:00:00"', "timestamp out of range (years 0001-9999)"),
    ("d", '"10000-01-01"', 'date out of range (years 0001-9999), got "10000-01-01"'),
    ("d", '"0000-01-01"', 'date out of range (years 0001-9999), got "0000-01-01"'),
    ("d", '"-0001-01-01"', "date out of range (years 0001-9999)"),
    # TINYINT: Jackson reads 128..255 as a byte (wrapped to -128..-1)
    ("t", "128", "expected TINYINT, got 128"),
    ("t", "255", "expected TINYINT, got 255"),
    ("t", "-129", "expected TINYINT, got -129"),
    # other integer overflows (already dead: kept so)
    ("s", "32768", "expected SMALLINT, got 32768"),
    ("i", "2147483648", "expected INT, got 2147483648"),
    ("b", "9223372036854775808", "expected BIGINT"),
    ("dec", "123456789.99", "expected DECIMAL(10,2)"),
    # FLOAT/DOUBLE beyond the maximum: Jackson makes them Infinity
    ("x", "1e400", "number out of range for DOUBLE"),
    ("x", "-1e309", "number out of range for DOUBLE"),
    ("f", "3.5e38", "number out of range for FLOAT"),
    ("f", "-1e39", "number out of range for FLOAT"),
    # numbers longer than Jackson's 1000 digits: out of range for any field
    ("i", LONG, "number longer than 1000 digits"),
    ("x", LONG, "number longer than 1000 digits"),
    ("str", LONG, "number longer than 1000 digits"),
    ("ts", "1." + "0" * 1000, "number longer than 1000 digits"),
]

# kind, JSON value, the value stored
EXACT: list[tuple[str, str, object]] = [
    ("ts", "1704067200", dt.datetime(2024, 1, 1, tzinfo=UTC)),
    ("ts", "253402300799", dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)),
    ("ts", "-62135596800", dt.datetime(1, 1, 1, tzinfo=UTC)),
    ("ts", "-1", dt.datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC)),
    ("ts", '"9999-12-31T23:59:59.999999Z"', dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)),
    ("ts", '"0001-01-01T00:00:00Z"', dt.datetime(1, 1, 1, tzinfo=UTC)),
    ("ntz", '"9999-12-31T23:59:59.999999"', dt.datetime(9999, 12, 31, 23, 59, 59, 999999)),
    ("d", '"9999-12-31"', dt.date(9999, 12, 31)),
    ("d", '"0001-01-01"', dt.date(1, 1, 1)),
    ("t", "127", 127),
    ("t", "-128", -128),
    ("s", "-32768", -32768),
    ("i", "2147483647", 2147483647),
    ("b", "9223372036854775807", 9223372036854775807),
    ("b", "-9223372036854775808", -9223372036854775808),
    ("x", "1.7976931348623157e308", 1.7976931348623157e308),
    ("x", "-1e308", -1e308),
    ("f", "3.4e38", pytest.approx(3.4e38, rel=1e-7)),
    ("str", "1" * 1000, "1" * 1000),  # Jackson's limit itself: kept as its text
    ("str", '"\\ud83d\\ude00"', "\U0001F600"),  # a valid surrogate pair
    ("str", '"\\\\ud800"', "\\ud800"),  # an escaped backslash, then text
]


def _record(case: str, kind: str, nesting: str, value: str) -> tuple[str, str]:
    """The record holding ``value`` in ``kind``'s field at ``nesting``, and the field path."""
    good = KINDS[kind][1]
    if nesting == "top":
        body, path = f'"{kind}":{value}', kind
    elif nesting == "struct":
        body, path = f'"st":{{"{kind}":{value}}}', f"st.{kind}"
    elif nesting == "array":
        body, path = f'"a_{kind}":[{good},{value}]', f"a_{kind}[1]"
    else:
        body, path = f'"m_{kind}":{{"a":{good},"b":{value}}}', f'm_{kind}["b"]'
    return '{"id":"' + case + '",' + body + "}", path


def _stored(row: object, kind: str, nesting: str) -> object:
    if nesting == "top":
        return row[kind]  # type: ignore[index]
    if nesting == "struct":
        return row["st"][kind]  # type: ignore[index]
    if nesting == "array":
        return row[f"a_{kind}"][1]  # type: ignore[index]
    return row[f"m_{kind}"]["b"]  # type: ignore[index]


def _parse(spark: SparkSession, lines: dict[str, str], *,
           as_json: bool = False) -> tuple[dict, dict]:
    """Valid rows through Arrow (as a Delta reader sees them: PySpark's ``collect`` cannot
    convert 0001-01-01T00:00:00, CPython's ``datetime.fromtimestamp`` fails on it), maps as
    dicts, or as JSON text (``as_json``: years beyond 9999 convert to no Python value); dead
    rows through ``collect``."""
    from pyspark.sql import functions as F

    raw = spark.createDataFrame([(line, case) for case, line in lines.items()],
                                "value STRING, _case STRING")
    parsed = parse_batch(raw, schema_ddl=SCHEMA, batch_id=0, metadata_columns=["_case"])
    parsed.persist()
    try:
        if as_json:
            valid: dict = {r["_case"]: r["row"] for r in parsed.valid.select(
                "_case", F.to_json(F.struct("*")).alias("row")).collect()}
        else:
            valid = {r["_case"]: {k: dict(v) if k.startswith("m_") and v is not None else v
                                  for k, v in r.items()}
                     for r in parsed.valid.toArrow().to_pylist()}
        dead = {r["_case"]: r for r in parsed.dead.collect()}
    finally:
        parsed.frame.unpersist()
    assert len(valid) + len(dead) == len(lines) and not set(valid) & set(dead)
    return valid, dead


def test_values_out_of_range_are_dead_letters_naming_the_field(spark: SparkSession) -> None:
    lines: dict[str, str] = {}
    expected: dict[str, str] = {}
    for n, (kind, value, reason) in enumerate(DEAD):
        for nesting in NESTINGS:
            case = f"{n}:{kind}:{nesting}"
            lines[case], path = _record(case, kind, nesting, value)
            expected[case] = f"field {path}: {reason}"
    valid, dead = _parse(spark, lines, as_json=True)
    wrong = [f"{case}: stored: {valid[case]}" for case in expected if case in valid]
    wrong += [f"{case}: reason {dead[case]['reason']!r} lacks {expected[case]!r}"
              for case in expected if case in dead and expected[case] not in dead[case]["reason"]]
    assert not wrong, "\n".join(wrong)


def test_values_in_range_are_exact(spark: SparkSession) -> None:
    lines: dict[str, str] = {}
    expected: dict[str, object] = {}
    for n, (kind, value, stored) in enumerate(EXACT):
        for nesting in NESTINGS:
            case = f"{n}:{kind}:{nesting}"
            lines[case], _ = _record(case, kind, nesting, value)
            expected[case] = stored
    valid, dead = _parse(spark, lines)
    wrong = [f"{case}: dead with {dead[case]['reason']!r}" for case in expected if case in dead]
    for case in (c for c in expected if c in valid):
        kind, nesting = case.split(":")[1:]
        row = valid[case]
        if _stored(row, kind, nesting) != expected[case]:
            wrong.append(f"{case}: stored {_stored(row, kind, nesting)!r}, "
                         f"expected {expected[case]!r}")
        if nesting in ("array", "map"):  # the good neighbour is untouched
            neighbour = row[f"a_{kind}"][0] if nesting == "array" else row[f"m_{kind}"]["a"]
            if neighbour != KINDS[kind][2]:
                wrong.append(f"{case}: neighbour {neighbour!r}")
    assert not wrong, "\n".join(wrong)


def test_record_level_values(spark: SparkSession) -> None:
    """Lone surrogates anywhere in the record; long numbers outside the declared fields; the
    deepest nesting; an epoch number next to a 13-digit number elsewhere."""
    lines = {
        "lone_high": '{"id":"a","str":"x\\ud800y"}',
        "lone_low": '{"id":"b","st":{"str":"\\udc00"}}',
        "high_then_other": '{"id":"c","a_str":["ok","\\ud800\\u0041"]}',
        "upper_case": '{"id":"d","m_str":{"k":"\\uD800"}}',
        "in_a_key": '{"id":"e","\\udfff":1}',
        "in_undeclared": '{"id":"f","other":{"deep":["\\ud800"]}}',
        "after_escaped_backslash": '{"id":"g","str":"\\\\\\ud800"}',
        "pair_then_lone": '{"id":"h","str":"\\ud83d\\ude00\\udc00"}',
        "long_undeclared": '{"id":"i","other":' + LONG + "}",
        "deep_epoch": '{"id":"j","deep":[{"ev":{"k":["2024-01-01T00:00:00Z",'
                      '1704067200000000]}}]}',
        "epoch_ms_elsewhere": '{"id":"k","b":1704067200000,"ts":1704067200}',
        "pair_ok": '{"id":"l","str":"\\ud83d\\ude00\\\\udc00"}',
    }
    valid, dead = _parse(spark, lines, as_json=True)
    reasons = {case: row["reason"] for case, row in dead.items()}
    unicode = ("invalid Unicode escape: a lone UTF-16 surrogate (\\ud800-\\udfff without its "
               "pair) cannot be stored as text")
    assert reasons == {
        "lone_high": unicode, "lone_low": unicode, "high_then_other": unicode,
        "upper_case": unicode, "in_a_key": unicode, "in_undeclared": unicode,
        "after_escaped_backslash": unicode, "pair_then_lone": unicode,
        "long_undeclared": "invalid JSON: number longer than 1000 digits (the JSON reader's "
                           "limit), outside the declared fields",
        "deep_epoch": 'field deep[0].ev["k"][1]: ' + TS_RANGE + "1704067200000000",
    }
    assert dead["lone_high"]["raw"] == lines["lone_high"]  # raw keeps the escape as sent
    assert '"ts":"2024-01-01T00:00:00.000Z"' in valid["epoch_ms_elsewhere"]
    assert '"b":1704067200000' in valid["epoch_ms_elsewhere"]
    assert json.loads(valid["pair_ok"])["str"] == "\U0001F600\\udc00"


def test_tinyint_keeps_its_type(spark: SparkSession) -> None:
    raw = spark.createDataFrame([('{"id":"a","t":5,"st":{"t":-5},"a_t":[1],"m_t":{"k":2}}',
                                  "c")], "value STRING, _case STRING")
    parsed = parse_batch(raw, schema_ddl=SCHEMA, batch_id=0, metadata_columns=["_case"])
    types = dict(parsed.valid.dtypes)
    assert (types["t"], types["a_t"], types["m_t"]) == ("tinyint", "array<tinyint>",
                                                         "map<string,tinyint>")
    assert "t:tinyint" in types["st"]
    (row,) = parsed.valid.collect()
    assert (row["t"], row["st"]["t"], row["a_t"], row["m_t"]) == (5, -5, [1], {"k": 2})


def test_boundary_years_read_back_from_delta(tmp_path, delta_engine) -> None:
    """The whole pipeline on both engines (the Delta write is what a reader sees): the first
    and last instants of the range read back exactly through deltalake's ``to_pylist`` (which
    fails on year 275760); beyond them, dead letters naming the field."""
    from runner.build import compile_project
    from runner.project.loader import load_project
    from runner.runtime.start.stream import run_stream
    from runner.sinks.tables import read_table
    from tests.support.projects import BASE_YML, EXAMPLE_FILES, write_project

    yml = BASE_YML.replace("vars:\n  slow_ms: 1000\n", "vars:\n  slow_request_ms: 1000\n")
    project = load_project(write_project(tmp_path / "p", dict(EXAMPLE_FILES), project_yml=yml,
                                         engine=delta_engine))
    records = {"last": '"9999-12-31T23:59:59.999999Z"', "first": '"0001-01-01T00:00:00Z"',
               "epoch": "253402300799", "y275760": '"+275760-09-13T00:00:00Z"',
               "micros": "1704067200000000"}
    incoming = project.root / "incoming"
    incoming.mkdir(parents=True, exist_ok=True)
    (incoming / ".b.tmp").write_text("".join(
        f'{{"eventId":"{k}","timestamp":{v},"user":{{"userId":"u"}}}}\n'
        for k, v in records.items()))
    (incoming / ".b.tmp").replace(incoming / "b.json")
    run_stream(project, compile_project(project).plan, mode="available_now",
               trigger="1 second")
    logs = {r["eventId"]: r["timestamp"]
            for r in read_table(str(project.table_path("request_logs"))).to_pylist()}
    assert logs == {"last": dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
                    "first": dt.datetime(1, 1, 1, tzinfo=UTC),
                    "epoch": dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)}
    dead = {r["raw"].split('"')[3]: r["reason"]
            for r in read_table(str(project.table_path("_dead_letter"))).to_pylist()}
    assert dead == {"y275760": "field timestamp: " + TS_RANGE + '"+275760-09-13T00:00:00Z"',
                    "micros": "field timestamp: " + TS_RANGE + "1704067200000000"}
