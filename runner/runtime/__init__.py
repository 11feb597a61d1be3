"""The stream at run time: the Spark session, start-up and the one query
(:mod:`.stream`), checkpoint and lock, the per-batch function (:mod:`.batch`: parse once,
models in DAG order, every sink), expectations, schema-change checks and Spark error
classification. Reads through :mod:`runner.sources`, writes through :mod:`runner.sinks`.
"""
