"""Produce the example project's app events (with a few poison lines) to a Kafka topic.

    python -m scripts.kafka_produce --bootstrap 127.0.0.1:9092 --topic app_events \\
        --events 20000 [--poison-every 2000] [--start-id 0] [--rate 1000]

Events come from :func:`runner.demo.event_lines` (the example project's shape; every
``--poison-every``-th line is a poison line that must end in the dead-letter table). Each
record is keyed by its ``user.userId`` (poison lines have no key), so the producer's
partitioner spreads users over the partitions. One record per record batch: Tansu's high
watermark counts batches, not records. Waits up to ``--wait`` seconds for the topic to exist
(a broker still starting).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from runner.demo import POISON, event_lines
from tests.support.brokers import RecordProducer


def _key(line: str) -> str | None:
    try:
        event = json.loads(line)
        return str(event["user"]["userId"])
    except (ValueError, KeyError, TypeError):
        return None


def wait_for_topic(bootstrap: str, topic: str, timeout: float) -> None:
    """Return once ``topic`` is listed by the broker; raise after ``timeout`` seconds."""
    import logging

    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap,
                         "logger": logging.getLogger("kafka_produce")})
    deadline = time.monotonic() + timeout
    while True:
        try:
            if topic in admin.list_topics(timeout=2).topics:
                return
        except KafkaException:
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"topic {topic!r} not found at {bootstrap} within {timeout:g} s")
        time.sleep(0.2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", default="127.0.0.1:9092", help="host:port")
    parser.add_argument("--topic", default="app_events")
    parser.add_argument("--events", type=int, default=20_000, help="records to produce")
    parser.add_argument("--poison-every", type=int, default=2000,
                        help="every N-th record is a poison line (0: none)")
    parser.add_argument("--start-id", type=int, default=0, help="first event number")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--rate", type=float, default=0, help="records per second (0: max)")
    parser.add_argument("--wait", type=float, default=30, help="seconds to wait for the topic")
    args = parser.parse_args(argv)

    wait_for_topic(args.bootstrap, args.topic, args.wait)
    started = time.monotonic()
    poison = 0
    with RecordProducer(args.bootstrap) as producer:
        for i, line in enumerate(event_lines(args.events, seed=args.seed,
                                             start_id=args.start_id,
                                             poison_every=args.poison_every)):
            if args.rate:
                delay = started + i / args.rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            poison += line in POISON
            producer.send(args.topic, line, key=_key(line))
    seconds = time.monotonic() - started
    print(f"produced {args.events:,} records ({poison} poison) to {args.topic} at "
          f"{args.bootstrap} in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
