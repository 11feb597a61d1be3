#!/usr/bin/env bash
# The test command: install (if needed), then run the suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The 25 slowest tests are listed at the end: the suite must stay under 25 minutes on the 2-core machine.
exec .venv/bin/python -m pytest -q --durations=25 "$@"
