"""The storage layer: every file the runner reads or writes itself under its locations
(checkpoint, warehouse) goes through here, on local disk and object storage alike.

- :mod:`runner.storage.objects`: :class:`ObjectPath`, a bucket key that reads like a path.
- :mod:`runner.storage.ops`: the writes (atomic replace, create-if-absent, compare-and-swap),
  listing, prefix deletion and ranged reads, for both kinds of location.
- :mod:`runner.storage.settings`: one configuration (environment + the target's ``storage:``)
  for its three consumers: the runner's own files, delta-rs and Spark.
"""
