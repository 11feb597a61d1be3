"""Everything under the pipeline's checkpoint directory, owned here (no Spark, no Delta).

::

    <checkpoint>/
      metadata              the query id (Spark's file, written first by the runner): query.py
      commits/ offsets/     Spark's logs of batches; sources/0/ the file source's log
                            (read only, and only by spark_logs.py)
      runner.lock           one stream per checkpoint; maintain.lock one maintenance: lock.py
      last_run.json         how the last `runner stream` ended: runs.py
      runner.models.json    which models the checkpoint writes, since which batch: registry.py
      ledger/<N>.json       the Delta version of every table holding batches <= N: ledger.py
      pins/<N>.json         the version of every source and seed batch N read: pins.py
      runner.pipeline.json  the pipeline name and source the checkpoint is valid for;
      runner.kafka_start.json  where batch 0 started on Kafka, as first resolved: identity.py
      kafka_offsets/<N>.json   Kafka offsets of every batch, kept past Spark's retention:
                            kafka_offsets.py

Every file the runner writes here goes through :mod:`runner.checkpoint.batch_files` (write to a
hidden temporary name, then rename or link). ``runtime/``, ``ops/`` and ``sources/`` read and
write the checkpoint through this package only.
"""
