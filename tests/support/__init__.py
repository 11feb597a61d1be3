"""Shared test helpers: fixture projects (:mod:`.projects`), the independent reference
(:mod:`.reference`), real Kafka brokers (:mod:`.brokers`; the benches and the Kafka demo use
them too). Tests import nothing from ``bench/`` or ``scripts/``; those may import from here."""
