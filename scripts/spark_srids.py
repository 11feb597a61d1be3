"""Regenerate ``runner/lint/spark_types/srids.json``: the SRIDs Spark's geospatial types take.

Spark reads its spatial reference system registry from ``org/apache/spark/sql/srs_registry.csv``
in the spark-sql-api jar (``SpatialReferenceSystemCache``: ``srid,string_id,is_geographic``
rows, generated from PROJ) and adds ``SRID:0`` (no reference system, not geographic). A
GEOMETRY takes any SRID there (``CartesianSpatialReferenceSystemMapper``); a GEOGRAPHY only the
geographic ones (``GeographicSpatialReferenceSystemMapper``); any other SRID is
``ST_INVALID_SRID_VALUE``. The file keeps each set as inclusive ``[first, last]`` ranges.

Reads the jar of the installed pyspark; no JVM. Usage: ``python scripts/spark_srids.py``;
``--check`` writes nothing and exits 1 when the file differs from the jar's registry.
"""

from __future__ import annotations

import argparse
import json
import sys
import zipfile
from pathlib import Path

import pyspark

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "runner" / "lint" / "spark_types" / "srids.json"
REGISTRY = "org/apache/spark/sql/srs_registry.csv"


def ranges(values: list[int]) -> list[list[int]]:
    """Sorted inclusive ranges covering ``values``: [1, 2, 3, 7] is [[1, 3], [7, 7]]."""
    out: list[list[int]] = []
    for v in sorted(set(values)):
        if out and out[-1][1] == v - 1:
            out[-1][1] = v
        else:
            out.append([v, v])
    return out


def registry() -> dict[str, object]:
    """The file's content, read from the installed pyspark's spark-sql-api jar."""
    jars = Path(pyspark.__file__).parent / "jars"
    jar = next(jars.glob("spark-sql-api_*.jar"))
    with zipfile.ZipFile(jar) as z:
        text = z.read(REGISTRY).decode("utf-8")
    cartesian, geographic = [0], []
    for line in text.splitlines():
        parts = line.split(",", 2)
        if line.startswith(("#", "srid,")) or len(parts) != 3:
            continue
        srid = int(parts[0].strip())
        cartesian.append(srid)
        if parts[2].strip().lower() == "true":
            geographic.append(srid)
    return {"source": f"{jar.name}:{REGISTRY}", "geometry": ranges(cartesian),
            "geography": ranges(geographic)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the file differs from the jar's registry")
    args = parser.parse_args()
    text = json.dumps(registry(), separators=(",", ":")) + "\n"
    if args.check:
        if OUT.read_text(encoding="utf-8") != text:
            sys.exit(f"{OUT.relative_to(ROOT)} differs from pyspark's SRID registry: run "
                     "python scripts/spark_srids.py")
        return
    OUT.write_text(text, encoding="utf-8")
    data = json.loads(text)
    print(f"{OUT}: {sum(b - a + 1 for a, b in data['geometry'])} GEOMETRY SRIDs, "
          f"{sum(b - a + 1 for a, b in data['geography'])} GEOGRAPHY SRIDs")


if __name__ == "__main__":
    main()
