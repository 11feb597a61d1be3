"""Spark on S3 (moto) through S3A, with the jars of ``.jars/cloud`` and the Hadoop settings
of :func:`runner.storage.settings.storage_settings`, in the suite's shared session.

What these tests establish for the storage layer:

- Plain ``s3://`` URIs work in Spark with ``fs.s3.impl`` = S3A (delta-spark tables, the files
  source, a streaming checkpoint), so Spark, delta-rs and obstore share one spelling.
- A live session takes a bucket's S3A settings at run time through ``spark.conf.set(key,
  value)`` with the bare Hadoop key, per bucket (``fs.s3a.bucket.<b>.endpoint``...): every
  Spark operation builds its Hadoop configuration from the session's conf. The
  ``spark.hadoop.``-prefixed key set at run time is not applied (that prefix is read only when
  the SparkContext starts).
- Hadoop caches one FileSystem per bucket: a bucket's settings are fixed at its first use in
  the JVM; changing them later has no effect (:func:`test_a_buckets_settings_are_fixed_at_first_use`).
- A streaming query keeps its checkpoint on S3 and replays nothing on restart, with the
  default checkpoint file manager and with spark-hadoop-cloud's
  ``AbortableStreamBasedCheckpointFileManager`` (which refuses a file system without
  abortable streams, so it is set per query, not for a session that also uses local disk).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.support.object_store import Bucket

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

ABORTABLE = "org.apache.spark.internal.io.cloud.AbortableStreamBasedCheckpointFileManager"
CHECKPOINT_MANAGER = "spark.sql.streaming.checkpointFileManagerClass"


@pytest.fixture
def s3_spark(spark: SparkSession, delta_spark: None, s3_bucket: Bucket) -> Iterator[Bucket]:
    """The shared session, given ``s3_bucket``'s settings at run time (per bucket)."""
    from runner.runtime.client.session import cloud_jars_dir

    if cloud_jars_dir() is None:
        pytest.skip("no .jars/cloud (run scripts/setup.sh)")
    for key, value in s3_bucket.settings(per_bucket=True).hadoop.items():
        spark.conf.set(key, value)
    yield s3_bucket


def _put_json(bucket: Bucket, key: str, rows: list[dict[str, object]]) -> None:
    import obstore

    obstore.put(bucket.store(), key, "\n".join(json.dumps(r) for r in rows).encode())


def _keys(bucket: Bucket, prefix: str) -> list[str]:
    import obstore

    return sorted(m["path"] for batch in obstore.list(bucket.store(), prefix=prefix)
                  for m in batch)


def test_delta_spark_table_on_s3(spark: SparkSession, s3_spark: Bucket) -> None:
    from deltalake import DeltaTable

    uri = f"{s3_spark.uri}/wh/t"
    spark.range(3).write.format("delta").save(uri)
    spark.range(3, 5).write.format("delta").mode("append").save(uri)
    assert sorted(r.id for r in spark.read.format("delta").load(uri).collect()) == [0, 1, 2, 3, 4]
    assert "wh/t/_delta_log/00000000000000000001.json" in _keys(s3_spark, "wh/t/_delta_log")
    # the same table through delta-rs, with the same settings' other half
    options = s3_spark.settings("wh/t").storage_options
    assert DeltaTable(uri, storage_options=options).version() == 1


def _stream_once(spark: SparkSession, bucket: Bucket) -> None:
    source = (spark.readStream.schema("id INT, name STRING").option("maxFilesPerTrigger", 1)
              .json(f"{bucket.uri}/in/"))
    query = (source.writeStream.format("delta").trigger(availableNow=True)
             .option("checkpointLocation", f"{bucket.uri}/cp")
             .start(f"{bucket.uri}/out"))
    query.awaitTermination(120)
    assert query.exception() is None


@pytest.mark.slow
@pytest.mark.parametrize("manager", ["default", "abortable"])
def test_stream_with_its_checkpoint_on_s3(spark: SparkSession, s3_spark: Bucket,
                                          manager: str) -> None:
    bucket = s3_spark
    _put_json(bucket, "in/a.json", [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}])
    _put_json(bucket, "in/b.json", [{"id": 3, "name": "c"}])
    before = spark.conf.get(CHECKPOINT_MANAGER, None)
    if manager == "abortable":
        spark.conf.set(CHECKPOINT_MANAGER, ABORTABLE)
    try:
        _stream_once(spark, bucket)
        _put_json(bucket, "in/c.json", [{"id": 4, "name": "d"}])
        _stream_once(spark, bucket)  # a restart: from the checkpoint in the bucket
    finally:
        if before is None:
            spark.conf.unset(CHECKPOINT_MANAGER)
        else:
            spark.conf.set(CHECKPOINT_MANAGER, before)
    ids = [r.id for r in spark.read.format("delta").load(f"{bucket.uri}/out").collect()]
    assert sorted(ids) == [1, 2, 3, 4]  # each file once, none replayed
    checkpoint = _keys(bucket, "cp")
    assert {"cp/offsets/0", "cp/commits/0", "cp/offsets/2", "cp/commits/2",
            "cp/metadata"} <= set(checkpoint)
    assert not [k for k in checkpoint if ".tmp" in k]  # no temp file left behind


def test_a_buckets_settings_are_fixed_at_first_use(spark: SparkSession,
                                                   s3_spark: Bucket) -> None:
    uri = f"{s3_spark.uri}/t"
    spark.range(2).write.format("delta").save(uri)
    key = f"fs.s3a.bucket.{s3_spark.name}.endpoint"
    good = spark.conf.get(key)
    spark.conf.set(key, "http://127.0.0.1:9")  # nothing listens there
    try:
        # the cached FileSystem of this bucket still talks to moto
        assert spark.read.format("delta").load(uri).count() == 2
    finally:
        spark.conf.set(key, good)


def test_the_abortable_checkpoint_manager_is_for_s3a_only(spark: SparkSession,
                                                          s3_spark: Bucket, tmp_path) -> None:
    """spark-hadoop-cloud 4.1.1's manager loads in Spark 4.2 (same package for
    CheckpointFileManager) and takes S3A; a local folder it refuses, so the setting belongs to
    a query whose checkpoint is on S3, not to a session."""
    from py4j.protocol import Py4JJavaError

    jvm = spark._jvm
    manager = jvm.org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager
    conf = spark._jsparkSession.sessionState().newHadoopConf()
    conf.set(CHECKPOINT_MANAGER, ABORTABLE)
    on_s3 = manager.create(jvm.org.apache.hadoop.fs.Path(f"{s3_spark.uri}/cp"), conf)
    assert on_s3.getClass().getName() == ABORTABLE
    with pytest.raises(Py4JJavaError, match="UnsupportedFileSystemException"):
        manager.create(jvm.org.apache.hadoop.fs.Path(tmp_path.as_uri()), conf)


def test_a_named_profile_reaches_s3a_by_name(spark: SparkSession, delta_spark: None,
                                            moto_server, tmp_path) -> None:
    """A profile named only in project.yml's ``storage:`` (no keys, and no ``AWS_PROFILE`` in
    the JVM's environment) reaches S3A: the settings name the profile and its credentials
    file, and delta-spark writes the table with them; a bucket whose settings name a profile
    the file lacks cannot be written (so the first write used the profile, not another
    source of keys)."""
    from deltalake import DeltaTable

    from runner.runtime.client.session import cloud_jars_dir
    from runner.storage.settings import storage_settings

    if cloud_jars_dir() is None:
        pytest.skip("no .jars/cloud (run scripts/setup.sh)")
    credentials = tmp_path / "credentials"
    credentials.write_text("[from-yml]\naws_access_key_id = testing\n"
                           "aws_secret_access_key = testing\n")
    good, bad = moto_server.bucket(), moto_server.bucket()  # S3A caches a file system per bucket
    for bucket, profile in ((good, "from-yml"), (bad, "not-in-the-file")):
        env = {k: v for k, v in bucket.env.items() if not k.startswith("AWS_SECRET")
               and k != "AWS_ACCESS_KEY_ID"}
        env["AWS_SHARED_CREDENTIALS_FILE"] = str(credentials)
        hadoop = storage_settings(bucket.uri, {"aws_profile": profile}, per_bucket=True,
                                  environ=env).hadoop
        assert hadoop[f"fs.s3a.bucket.{bucket.name}.aws.credentials.provider"].endswith(
            "ProfileAWSCredentialsProvider")
        assert not any(k.endswith(("access.key", "secret.key")) for k in hadoop)
        for key, value in hadoop.items():
            spark.conf.set(key, value)
    spark.range(4).write.format("delta").save(f"{good.uri}/t")
    table = DeltaTable(f"{good.uri}/t", storage_options=good.settings("t").storage_options)
    assert table.to_pyarrow_table().num_rows == 4
    with pytest.raises(Exception, match="not-in-the-file"):
        spark.range(1).write.format("delta").save(f"{bad.uri}/t")
