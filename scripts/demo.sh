#!/usr/bin/env bash
# The demo: install (if needed), generate app events with a few poison lines, compile the
# example project, stream everything available into Delta tables, then show what landed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/runner demo --events "${DEMO_EVENTS:-20000}" --files 4
.venv/bin/runner compile
.venv/bin/runner stream --available-now
.venv/bin/runner show
