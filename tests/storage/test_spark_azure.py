"""Spark on Azure Blob (Azurite) through hadoop-azure's ABFS driver, in the suite's shared
session: Hadoop 3.5's ABFS reaches a Blob-only endpoint (``fs.azure.fns.account.service.type
=BLOB``) at ``{IP}:{PORT}`` over http (``abfs://``, not ``abfss://``), every key qualified by
the account's host, set at run time like S3A's (:mod:`tests.storage.test_spark_s3`).
Measured: without ``fs.azure.networking.library=JDK_HTTP_URL_CONNECTION`` the driver fails
with "SSL socket factory may not be null" on plain http; with the DFS service type, listing a
folder on Azurite returns every entry twice."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.support.object_store import Bucket

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def test_delta_spark_table_on_azurite(spark: SparkSession, delta_spark: None,
                                      azure_container: Bucket) -> None:
    from deltalake import DeltaTable

    from runner.runtime.client.session import cloud_jars_dir

    if cloud_jars_dir() is None:
        pytest.skip("no .jars/cloud (run scripts/setup.sh)")
    settings = azure_container.settings("wh/t")
    for key, value in settings.hadoop.items():
        spark.conf.set(key, value)
    uri = settings.spark_uri()
    assert uri.startswith(f"abfs://{azure_container.name}@devstoreaccount1.dfs.core.windows.net")
    spark.range(3).write.format("delta").save(uri)
    spark.range(3, 5).write.format("delta").mode("append").save(uri)
    assert sorted(r.id for r in spark.read.format("delta").load(uri).collect()) == [0, 1, 2, 3, 4]
    # the table Spark wrote, through delta-rs at az://
    table = DeltaTable(settings.location.uri(), storage_options=settings.storage_options)
    assert table.version() == 1
    assert table.to_pyarrow_dataset().to_table(use_threads=False).num_rows == 5
