"""The stream at run time, in rooms by what each part talks to:

- :mod:`.client`: Spark itself (building the session, its JVM options);
- :mod:`.start`: one run of ``runner stream`` up to a started query (checkpoint, lock,
  registry, definitions, schema evolution, backfill, history checks, restatements);
- :mod:`.batches`: the per-batch function (parse once, models in DAG order, every sink,
  expectations, dead letters, parking, pinned lookups, the SQL guard);
- :mod:`.catalog`, :mod:`.after_batch`, :mod:`.prometheus`: the metastore, what follows a
  committed batch, and metrics.

Reads through :mod:`runner.sources`, writes through :mod:`runner.sinks`.
"""
