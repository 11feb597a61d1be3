#!/usr/bin/env bash
# Create .venv (if needed), install the runner with its test dependencies, and fetch the JVM
# jars (delta-spark, Spark's Kafka source, an Apache Kafka broker for tests) with Maven into
# .jars/. Idempotent: a second run installs and downloads nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.installed-$(sha1sum pyproject.toml | cut -c1-12)
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[test]"
  touch "$stamp"
fi
if ! command -v java >/dev/null 2>&1; then
  echo "error: Java (17 or newer) is needed by Spark and Maven and was not found on PATH" >&2
  exit 1
fi
# Stamped per pom (.jars/<group>/.stamp-<hash>): Maven runs only when a pom changed.
.venv/bin/python scripts/jars.py
