"""Shared test helpers: fixture projects (:mod:`.projects`), the independent reference
(:mod:`.reference`). Brokers live in ``scripts/brokers.py`` (the demos use them too)."""
