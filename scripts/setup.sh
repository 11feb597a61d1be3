#!/usr/bin/env bash
# Create .venv (if needed), install the runner with its test dependencies, fetch the JVM
# jars (delta-spark, Spark's Kafka source, an Apache Kafka broker for tests, the object-storage
# connectors, Spark's SQL test jar) with Maven into .jars/, build the compile corpus from that
# jar, and install Azurite (the Azure Blob server of the tests)
# with npm into .tools/azurite/. Idempotent: a second run installs and downloads nothing.
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
# The compile corpus from Spark's SQL test jar (.jars/spark-tests/models.jsonl); stamped.
.venv/bin/python scripts/spark_sql_corpus.py
# Azurite from npm, for the Azure tests (tests/support/object_store.py). 3.36 and later need
# Node 21+; 3.35.0 runs on the Node 20 of Debian and NodeSource. Stamped per version.
AZURITE_VERSION=3.35.0
if command -v npm >/dev/null 2>&1; then
  if [ ! -f ".tools/azurite/.installed-$AZURITE_VERSION" ]; then
    rm -rf .tools/azurite && mkdir -p .tools/azurite
    npm install --prefix .tools/azurite --no-audit --no-fund --omit=dev --loglevel=error \
      "azurite@$AZURITE_VERSION" >/dev/null
    touch ".tools/azurite/.installed-$AZURITE_VERSION"
  fi
else
  echo "warning: npm not found: Azurite is not installed and the Azure tests will be skipped" \
       "(Debian: apt-get install npm)" >&2
fi
