"""Fetch the project's JVM jars with Maven into ``.jars/<group>/`` (called by scripts/setup.sh).

Groups, one pom each under ``jvm/``:

- ``spark``: delta-spark and Spark's Kafka source, for the runner's Spark session
  (``runner/runtime/client/session.py`` puts them on ``spark.jars``).
- ``kafka-broker``: an Apache Kafka broker for tests (``tests/support/brokers.py``).
- ``cloud``: object storage for the Spark session: hadoop-aws (S3A) with the AWS SDK v2 modules
  it uses, hadoop-azure (ABFS), spark-hadoop-cloud (``runner/runtime/client/session.py`` adds them
  to ``spark.jars`` when ``.jars/cloud/`` is there).
- ``spark-tests``: Spark's SQL test jar (no dependencies), never on a classpath: its golden
  files become the compile corpus (``scripts/spark_sql_corpus.py``).

Each group is copied with its transitive runtime dependencies by
``mvn -B -q dependency:copy-dependencies``. A group is fetched again only when its pom changes:
``.jars/<group>/.stamp-<hash of the pom>`` marks a complete copy, so a second run starts no
Maven at all. A failure names the coordinates the pom asks for and Maven's own error lines.

Usage: ``python scripts/jars.py [GROUP ...]`` (default: every group).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JARS = ROOT / ".jars"
POMS = {"spark": ROOT / "jvm" / "spark" / "pom.xml",
        "kafka-broker": ROOT / "jvm" / "kafka-broker" / "pom.xml",
        "cloud": ROOT / "jvm" / "cloud" / "pom.xml",
        "spark-tests": ROOT / "jvm" / "spark-tests" / "pom.xml"}
_NS = {"m": "http://maven.apache.org/POM/4.0.0"}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# Maven's closing advice ([ERROR] lines that say nothing about this failure).
_BOILERPLATE = re.compile(
    r"^\[ERROR\]\s*$|-e switch|-X switch|following articles|^\[ERROR\] \[Help")


class FetchError(Exception):
    """A group could not be fetched; the message says which coordinates and why."""


def pom_properties(pom: Path) -> dict[str, str]:
    """The ``<properties>`` of ``pom``."""
    props = ET.parse(pom).getroot().find("m:properties", _NS)
    if props is None:
        return {}
    return {child.tag.split("}", 1)[1]: (child.text or "").strip() for child in props}


def coordinates(pom: Path) -> list[str]:
    """``group:artifact:version`` of each direct dependency of ``pom``, properties expanded."""
    props = pom_properties(pom)

    def expand(text: str | None) -> str:
        return re.sub(r"\$\{([^}]+)\}", lambda m: props.get(m.group(1), m.group(0)),
                      (text or "").strip())

    deps = ET.parse(pom).getroot().findall("m:dependencies/m:dependency", _NS)
    return [":".join(expand(d.findtext(f"m:{tag}", namespaces=_NS))
                     for tag in ("groupId", "artifactId", "version")) for d in deps]


def check_python_versions(pom: Path) -> None:
    """The spark pom's delta-spark and Spark versions must be the installed Python packages'
    (delta-spark's Python API drives the jar of its own version; the Kafka source is built
    for one Spark version)."""
    props = pom_properties(pom)
    wanted = {"delta_spark": props.get("delta.version"), "pyspark": props.get("spark.version")}
    for package, version in wanted.items():
        try:
            installed = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            continue  # set-up installs the Python packages first; nothing to compare here
        if version and installed != version:
            raise FetchError(
                f"{pom.relative_to(ROOT)} asks for {package} {version} but {installed} is "
                f"installed: keep the pom's version and pyproject.toml's pin the same")


def _stamp(pom: Path) -> str:
    return ".stamp-" + hashlib.sha1(pom.read_bytes()).hexdigest()[:12]


def fetch(group: str) -> bool:
    """Copy ``group``'s jars into ``.jars/<group>/`` unless its stamp says they are there.

    Returns:
        True when Maven ran, False when the folder was already complete.

    Raises:
        FetchError: mvn is missing or failed (the message names the coordinates).
    """
    pom = POMS[group]
    dest = JARS / group
    stamp = _stamp(pom)
    if group == "spark":
        check_python_versions(pom)
    if (dest / stamp).is_file():
        return False
    mvn = shutil.which("mvn")
    wanted = ", ".join(coordinates(pom))
    if mvn is None:
        raise FetchError(f"Maven (mvn) is not on PATH; it fetches the {group} jars ({wanted}). "
                         "Install it (Debian: apt-get install maven) and run set-up again.")
    staging = JARS / f".{group}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    command = [mvn, "-B", "-q", "-Dstyle.color=never", "-f", str(pom),
               "dependency:copy-dependencies", "-DincludeScope=runtime",
               f"-DoutputDirectory={staging}"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        lines = [line.removesuffix(" -> [Help 1]")
                 for line in _ANSI.sub("", done.stdout + done.stderr).splitlines()
                 if line.startswith("[ERROR]") and not _BOILERPLATE.search(line)]
        said = "\n  ".join(lines[:8]) or (done.stdout + done.stderr).strip()[-2000:]
        raise FetchError(f"Maven could not fetch the {group} jars ({wanted}).\n"
                         f"command: {' '.join(command)}\nmvn said:\n  {said}")
    (staging / stamp).touch()
    shutil.rmtree(dest, ignore_errors=True)
    staging.rename(dest)
    return True


def main(argv: list[str]) -> int:
    groups = argv or list(POMS)
    unknown = [g for g in groups if g not in POMS]
    if unknown:
        print(f"error: unknown jar group {unknown[0]!r} (known: {', '.join(POMS)})",
              file=sys.stderr)
        return 2
    for group in groups:
        started = time.perf_counter()
        try:
            ran = fetch(group)
        except FetchError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        dest = JARS / group
        jars = list(dest.glob("*.jar"))
        size = sum(p.stat().st_size for p in jars) / 1e6
        state = "fetched" if ran else "up to date"
        print(f"jars {group}: {state}, {len(jars)} jars, {size:.0f} MB in "
              f"{dest.relative_to(ROOT)} ({time.perf_counter() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
