"""Geospatial values checked as Spark's analyser checks them (runner/lint/spark_types/spatial.py, casts.py,
call_values.py): casts of GEOGRAPHY and GEOMETRY values (``Cast.canAnsiCast``'s spatial cases)
and SRID arguments no spatial type takes (Spark's registry, ``srids.json``): the rule, the
model file's line and column, Spark's error class, and the valid neighbours left alone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from runner.lint.spark_types.spatial import srid_supported
from tests.support.spark_sql_corpus import REPO
from tests.unit.test_lint import lint_errors, misreported

P = "FROM parsed_events"
WKB = "X'0101000000000000000000f03f0000000000000040'"
NONE = "DATATYPE_MISMATCH.CAST_WITHOUT_SUGGESTION"

#: name -> (SQL, Spark's error class, (line, column) of the finding); all argument-type.
INVALID: dict[str, tuple[str, str, tuple[int, int]]] = {
    "geography_to_string": (f"SELECT CAST(ST_GEOGFROMWKB({WKB}) AS STRING) AS r {P}", NONE,
                            (1, 13)),
    "binary_to_geometry": (f"SELECT 1 AS a,\n  CAST({WKB} AS GEOMETRY(4326)) AS r {P}", NONE,
                           (2, 8)),
    "any_to_srid": (f"SELECT CAST(ST_GEOGFROMWKB({WKB})::GEOGRAPHY(ANY) AS GEOGRAPHY(4326)) "
                    f"AS r {P}", NONE, (1, 13)),
    "geography_to_any_geometry": (f"SELECT CAST(ST_GEOGFROMWKB({WKB}) AS GEOMETRY(ANY)) AS r {P}",
                                  NONE, (1, 13)),
    "srid_0_to_geography": (f"SELECT CAST(ST_GEOMFROMWKB({WKB}) AS GEOGRAPHY(4326)) AS r {P}",
                            NONE, (1, 13)),
    "geometry_srid_minus_one": (f"SELECT ST_GEOMFROMWKB({WKB}, -1) AS g {P}",
                                "ST_INVALID_SRID_VALUE", (1, 70)),
    "geometry_srid_9999": (f"SELECT ST_GEOMFROMWKB({WKB}, 9999) AS g {P}",
                           "ST_INVALID_SRID_VALUE", (1, 70)),
    "geography_set_3857": (f"SELECT ST_SETSRID(ST_GEOGFROMWKB({WKB}), 3857) AS g {P}",
                           "ST_INVALID_SRID_VALUE", (1, 82)),
}

VALID: dict[str, str] = {
    "geometry_srids": f"SELECT ST_GEOMFROMWKB({WKB}, 0) AS a, ST_GEOMFROMWKB({WKB}, 3857) AS b,\n"
                      f"  ST_SETSRID(ST_GEOMFROMWKB({WKB}), 3857) AS c,\n"
                      f"  ST_SETSRID(ST_GEOGFROMWKB({WKB}), 4326) AS d {P}",
    "non_literal_srid": f"SELECT ST_GEOMFROMWKB({WKB}, CAST(9999 AS INT)) AS a,\n"
                        f"  ST_GEOMFROMWKB({WKB}, 9999L) AS b {P}",
    "spatial_casts": f"SELECT CAST(ST_GEOGFROMWKB({WKB}) AS GEOMETRY(4326)) AS a,\n"
                     f"  CAST(ST_GEOGFROMWKB({WKB}) AS GEOGRAPHY(ANY)) AS b,\n"
                     f"  CAST(ST_GEOMFROMWKB({WKB}) AS GEOMETRY(ANY)) AS c,\n"
                     f"  CAST(ST_GEOMFROMWKB({WKB}, 4326) AS GEOGRAPHY(4326)) AS d,\n"
                     f"  CAST(NULL AS GEOMETRY(4326)) AS e, ST_ASBINARY(ST_GEOGFROMWKB({WKB})) AS f"
                     f" {P}",
}


def test_invalid_spatial_sql_is_flagged_where_it_is(tmp_path: Path) -> None:
    cases = {n: ("argument-type", sql, f"[{error}]", place)
             for n, (sql, error, place) in INVALID.items()}
    assert misreported(tmp_path, cases) == {}


def test_valid_spatial_neighbours_are_not_flagged(tmp_path: Path) -> None:
    assert lint_errors(tmp_path, VALID) == []


@pytest.mark.parametrize(("kind", "srid", "ok"), [
    ("geometry", 0, True), ("geometry", 4326, True), ("geometry", 3857, True),
    ("geometry", 2000, True), ("geometry", -1, False), ("geometry", 9999, False),
    ("geography", 4326, True), ("geography", 4269, True), ("geography", 0, False),
    ("geography", 3857, False),
])
def test_srids_are_sparks_registry(kind: str, srid: int, ok: bool) -> None:
    assert srid_supported(kind, srid) is ok


def test_srids_json_is_the_installed_pysparks_registry() -> None:
    """runner/lint/spark_types/srids.json is what scripts/spark_srids.py reads from pyspark's jar (no JVM):
    a pyspark upgrade that changes the registry fails here until the file is regenerated."""
    done = subprocess.run([sys.executable, "scripts/spark_srids.py", "--check"],
                          cwd=REPO, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
