"""runner.storage.settings: locations parsed, and one configuration derived for delta-rs,
obstore and Spark from the environment and explicit options. No server, no JVM."""

from __future__ import annotations

import pytest

from runner.errors import ConfigError
from runner.storage.settings import Location, parse_location, storage_settings

MOTO = {"AWS_ENDPOINT_URL": "http://127.0.0.1:5000", "AWS_ACCESS_KEY_ID": "AK",
        "AWS_SECRET_ACCESS_KEY": "SK", "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"}


@pytest.mark.parametrize("uri, expected", [
    ("s3://bucket/a/b/", Location("s3", "bucket", "a/b")),
    ("s3a://bucket", Location("s3", "bucket", "")),
    ("S3://bucket/x", Location("s3", "bucket", "x")),
    ("gs://bkt/p", Location("gs", "bkt", "p")),
    ("az://cont/p/q", Location("az", "cont", "p/q")),
    ("abfss://cont@acct.dfs.core.windows.net/p", Location("az", "cont", "p", "acct")),
    ("abfs://cont@acct.dfs.core.windows.net", Location("az", "cont", "", "acct")),
    ("/var/lib/x", Location("file", "", "/var/lib/x")),
    ("rel/dir", Location("file", "", "rel/dir")),
    ("file:///tmp/a%20b", Location("file", "", "/tmp/a b")),
])
def test_parse_location(uri: str, expected: Location) -> None:
    assert parse_location(uri) == expected
    scheme, bucket, prefix, _ = parse_location(uri)  # a tuple too
    assert (scheme, bucket, prefix) == expected[:3]


@pytest.mark.parametrize("uri, message", [
    ("hdfs://nn/x", "unsupported storage scheme hdfs://"),
    ("s3:///key", "names no bucket"),
    ("abfss://@acct.dfs.core.windows.net/p", "names no container"),
    ("gcs://b/x", "(did you mean 'gs'?)"),
])
def test_bad_locations(uri: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("?", r"\?")
                       .replace(")", r"\)")):
        parse_location(uri)


def test_uris_for_each_consumer() -> None:
    assert parse_location("s3a://b/t/").uri() == "s3://b/t"
    assert parse_location("s3://b").hadoop_uri() == "s3://b"
    az = parse_location("az://cont/t")
    assert az.uri() == "az://cont/t"
    assert az.hadoop_uri("acct") == "abfss://cont@acct.dfs.core.windows.net/t"
    with pytest.raises(ConfigError, match="needs the storage account"):
        az.hadoop_uri()
    assert parse_location("/x/y").uri() == "/x/y"


def test_s3_from_the_environment() -> None:
    s = storage_settings("s3://bkt/wh", environ=MOTO)
    assert s.storage_options == {
        "aws_endpoint": "http://127.0.0.1:5000", "aws_access_key_id": "AK",
        "aws_secret_access_key": "SK", "aws_region": "us-east-1", "allow_http": "true"}
    assert s.hadoop == {
        "fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "fs.AbstractFileSystem.s3.impl": "org.apache.hadoop.fs.s3a.S3A",
        "fs.s3a.access.key": "AK", "fs.s3a.secret.key": "SK",
        "fs.s3a.endpoint.region": "us-east-1", "fs.s3a.endpoint": "http://127.0.0.1:5000",
        "fs.s3a.aws.credentials.provider":
            "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        "fs.s3a.path.style.access": "true", "fs.s3a.connection.ssl.enabled": "false"}
    assert s.spark_conf()["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:5000"
    assert s.obstore() == {
        "config": {"aws_endpoint": "http://127.0.0.1:5000", "aws_access_key_id": "AK",
                   "aws_secret_access_key": "SK", "aws_region": "us-east-1"},
        "client_options": {"allow_http": "true"}, "profile": None}


def test_explicit_options_win_in_any_spelling() -> None:
    s = storage_settings("s3://bkt", {"AWS_REGION": "eu-west-1", "endpoint": "https://minio:9000",
                                      "aws_session_token": "TOK", "fs.s3a.fast.upload": "true",
                                      "spark.hadoop.fs.s3a.connection.maximum": "64",
                                      "timeout": "30s", "aws_unsigned_payload": "true"},
                         environ=MOTO)
    o = s.storage_options
    assert o["aws_region"] == "eu-west-1" and o["aws_endpoint"] == "https://minio:9000"
    assert o["aws_session_token"] == "TOK" and o["timeout"] == "30s"
    assert o["aws_unsigned_payload"] == "true"  # another object_store key: passed on
    h = s.hadoop
    assert h["fs.s3a.endpoint.region"] == "eu-west-1"
    assert "fs.s3a.connection.ssl.enabled" not in h  # https
    assert h["fs.s3a.session.token"] == "TOK"
    assert h["fs.s3a.aws.credentials.provider"].endswith("TemporaryAWSCredentialsProvider")
    assert h["fs.s3a.fast.upload"] == "true" and h["fs.s3a.connection.maximum"] == "64"
    assert "fs.s3a.fast.upload" not in o
    assert s.obstore()["client_options"] == {"allow_http": "true", "timeout": "30s"}


def test_per_bucket_s3a_keys() -> None:
    h = storage_settings("s3://bkt/x", environ=MOTO, per_bucket=True).hadoop
    assert h["fs.s3a.bucket.bkt.endpoint"] == "http://127.0.0.1:5000"
    assert h["fs.s3a.bucket.bkt.path.style.access"] == "true"
    assert h["fs.s3.impl"].endswith("S3AFileSystem")  # the scheme is global
    assert not any(k.startswith("fs.s3a.") and ".bucket." not in k for k in h)


def test_nothing_set_means_the_default_chains() -> None:
    s = storage_settings("s3://bkt", environ={})
    assert s.storage_options == {}
    assert set(s.hadoop) == {"fs.s3.impl", "fs.AbstractFileSystem.s3.impl"}
    assert storage_settings("s3://b", environ={"AWS_DEFAULT_REGION": "ap-south-1"}
                            ).storage_options == {"aws_region": "ap-south-1"}
    profile = storage_settings("s3://b", environ={"AWS_PROFILE": "dev"})
    assert profile.hadoop["fs.s3a.aws.credentials.provider"].endswith(
        "ProfileAWSCredentialsProvider")
    assert profile.obstore()["config"] == {}  # obstore has no profiles: a credential provider
    assert profile.obstore()["profile"] == "dev"
    assert profile.hadoop["fs.s3a.auth.profile.name"] == "dev"
    assert "fs.s3a.auth.profile.file" not in profile.hadoop  # S3A's default file
    # a profile from project.yml reaches S3A by name, never through the JVM's own AWS_PROFILE
    named = storage_settings("s3://b", {"aws_profile": "prod"}, per_bucket=True, environ={
        "AWS_PROFILE": "dev", "AWS_SHARED_CREDENTIALS_FILE": "/etc/aws/credentials"})
    assert named.hadoop["fs.s3a.bucket.b.auth.profile.name"] == "prod"
    assert named.hadoop["fs.s3a.bucket.b.auth.profile.file"] == "/etc/aws/credentials"
    keys = storage_settings("s3://b", environ={"AWS_PROFILE": "dev", "AWS_ACCESS_KEY_ID": "AK",
                                               "AWS_SECRET_ACCESS_KEY": "SK"})
    assert keys.obstore()["profile"] is None  # explicit keys win, as for delta-rs


def test_a_service_endpoint_beats_the_global_one() -> None:
    env = {"AWS_ENDPOINT_URL": "http://a:1", "AWS_ENDPOINT_URL_S3": "http://s3:2"}
    assert storage_settings("s3://b", environ=env).storage_options["aws_endpoint"] == "http://s3:2"


def test_virtual_hosted_style_turns_path_style_off() -> None:
    h = storage_settings("s3://b", {"aws_virtual_hosted_style_request": "true"},
                         environ=MOTO).hadoop
    assert h["fs.s3a.path.style.access"] == "false"


def test_azure_shared_key_sas_and_service_principal() -> None:
    env = {"AZURE_STORAGE_ACCOUNT_NAME": "acct", "AZURE_STORAGE_ACCOUNT_KEY": "KEY"}
    s = storage_settings("az://cont/p", environ=env)
    assert s.storage_options == {"azure_storage_account_name": "acct",
                                 "azure_storage_account_key": "KEY"}
    assert s.hadoop == {"fs.azure.account.auth.type.acct.dfs.core.windows.net": "SharedKey",
                        "fs.azure.account.key.acct.dfs.core.windows.net": "KEY"}
    sas = storage_settings("abfss://c@other.dfs.core.windows.net/p",
                           {"sas_token": "sv=1&sig=x"}, environ={}).hadoop
    assert sas["fs.azure.account.auth.type.other.dfs.core.windows.net"] == "SAS"
    assert sas["fs.azure.sas.fixed.token.other.dfs.core.windows.net"] == "sv=1&sig=x"
    sp = storage_settings("az://c", environ={
        "AZURE_STORAGE_ACCOUNT_NAME": "acct", "AZURE_CLIENT_ID": "id",
        "AZURE_CLIENT_SECRET": "secret", "AZURE_TENANT_ID": "ten"})
    assert sp.storage_options["azure_storage_client_secret"] == "secret"
    assert sp.hadoop["fs.azure.account.oauth2.client.endpoint.acct.dfs.core.windows.net"] == (
        "https://login.microsoftonline.com/ten/oauth2/token")


def test_azure_emulator_options() -> None:
    env = {"AZURE_STORAGE_USE_EMULATOR": "true", "AZURE_ALLOW_HTTP": "true",
           "AZURE_STORAGE_ENDPOINT": "http://127.0.0.1:10000/devstoreaccount1"}
    s = storage_settings("az://cont", environ=env)
    assert s.storage_options == {"azure_storage_use_emulator": "true", "allow_http": "true",
                                 "azure_storage_endpoint":
                                     "http://127.0.0.1:10000/devstoreaccount1"}
    assert s.obstore()["client_options"] == {"allow_http": "true"}
    host = "devstoreaccount1.dfs.core.windows.net"
    assert s.hadoop["fs.azure.abfs.endpoint"] == "127.0.0.1:10000"
    assert s.hadoop["fs.azure.always.use.https"] == "false"
    assert s.hadoop["fs.azure.fns.account.service.type"] == "BLOB"
    assert s.hadoop[f"fs.azure.account.key.{host}"].startswith("Eby8")  # the emulator's key
    assert s.spark_uri() == f"abfs://cont@{host}"  # Azurite speaks http only


def test_azure_spark_uri_and_real_endpoints() -> None:
    env = {"AZURE_STORAGE_ACCOUNT_NAME": "acct", "AZURE_STORAGE_ACCOUNT_KEY": "K",
           "AZURE_STORAGE_ENDPOINT": "https://acct.blob.core.usgovcloudapi.net"}
    s = storage_settings("az://cont/p", environ=env)
    assert s.spark_uri() == "abfss://cont@acct.dfs.core.windows.net/p"
    assert not any("abfs.endpoint" in k for k in s.hadoop)  # not an emulator
    assert storage_settings("s3://b/k", environ={}).spark_uri() == "s3://b/k"


def test_gcs_key_file() -> None:
    s = storage_settings("gs://b/p", environ={"GOOGLE_APPLICATION_CREDENTIALS": "/k.json"})
    assert s.storage_options == {"google_application_credentials": "/k.json"}
    assert s.hadoop["fs.gs.auth.service.account.json.keyfile"] == "/k.json"
    assert s.hadoop["fs.gs.impl"].endswith("GoogleHadoopFileSystem")


def test_only_the_locations_cloud_is_read() -> None:
    env = {**MOTO, "AZURE_STORAGE_ACCOUNT_NAME": "acct"}
    assert "azure_storage_account_name" not in storage_settings("s3://b", environ=env
                                                                ).storage_options
    # one storage: map may hold several clouds' keys; each location takes its own
    s = storage_settings("az://c", {"aws_region": "x", "account_name": "acct"}, environ={})
    assert s.storage_options == {"azure_storage_account_name": "acct"}


def test_local_paths_have_no_settings() -> None:
    s = storage_settings("/tmp/wh", {"aws_region": "x"}, environ=MOTO)
    assert s.storage_options == {} and s.hadoop == {}


def test_unknown_option_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"unknown option 'acess_key_id' \(did you mean "
                                          r"'access_key_id'\?\)"):
        storage_settings("s3://b", {"acess_key_id": "x"}, environ={})
