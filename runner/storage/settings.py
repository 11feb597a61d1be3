"""One configuration of a storage location, for its three consumers.

A location is a local path or a URI: ``s3://`` (``s3a://`` is the same), ``az://`` /
``abfs[s]://`` (Azure), ``gs://`` (GCS). :func:`parse_location` splits it; :func:`storage_settings`
derives, from the standard environment variables each cloud's own tools read and an optional
map of explicit options (the profile's target's ``storage:``, which wins):

- ``storage_options``: the object_store keys delta-rs takes (``write_deltalake(...,
  storage_options=)``, ``DeltaTable(...)``) and obstore takes (:meth:`StorageSettings.obstore`
  splits them into ``config`` and ``client_options``);
- ``hadoop``: the Hadoop settings Spark needs for the same location (S3A, ABFS, the GCS
  connector), without the ``spark.hadoop.`` prefix (:meth:`StorageSettings.spark_conf` adds it).

S3 to an S3-compatible endpoint (``AWS_ENDPOINT_URL``: MinIO, Ceph, a test server) uses
path-style addressing on both sides, as delta-rs does by default; plain ``http://`` needs
``AWS_ALLOW_HTTP=true`` (delta-rs, obstore), and turns S3A's TLS off. Plain ``s3://`` URIs reach
S3A through ``fs.s3.impl``, so Spark, delta-rs and the runner's own files share one spelling.

>>> parse_location("s3a://bucket/warehouse/")
Location(scheme='s3', bucket='bucket', prefix='warehouse', account=None)
>>> s = storage_settings("s3://b/t", {"aws_region": "eu-west-1"}, environ={})
>>> s.storage_options, s.hadoop["fs.s3a.endpoint.region"]
({'aws_region': 'eu-west-1'}, 'eu-west-1')
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, NamedTuple, TypedDict
from urllib.parse import unquote, urlsplit

from runner.errors import ConfigError, did_you_mean

__all__ = ["Location", "Scheme", "StorageSettings", "SECRET_OPTIONS", "parse_location",
           "storage_settings"]

Scheme = Literal["s3", "az", "gs", "file"]

_SCHEMES: dict[str, Scheme] = {"s3": "s3", "s3a": "s3", "az": "az", "azure": "az",
                               "abfs": "az", "abfss": "az", "gs": "gs", "file": "file"}
_URI = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]+)://")
_ABFS_HOST = re.compile(r"^(?P<container>[^@]+)@(?P<account>[^.]+)\.dfs\.core\.windows\.net$")


class Location(NamedTuple):
    """A parsed location: ``(scheme, bucket, prefix)``, plus the Azure account when named.

    Attributes:
        scheme: ``s3``, ``az``, ``gs``, or ``file`` for a local path.
        bucket: the bucket (S3, GCS) or container (Azure); ``""`` for a local path.
        prefix: the key prefix, without slashes at either end; for a local path, the path.
        account: the Azure storage account an ``abfs[s]://container@account...`` URI names.
    """

    scheme: Scheme
    bucket: str
    prefix: str
    account: str | None = None

    @property
    def is_local(self) -> bool:
        return self.scheme == "file"

    def uri(self) -> str:
        """The location in the spelling delta-rs and obstore take (``s3://``, ``az://``,
        ``gs://``), or the local path."""
        if self.is_local:
            return self.prefix
        return f"{self.scheme}://{self.bucket}/{self.prefix}".rstrip("/")

    def hadoop_uri(self, account: str | None = None, *, secure: bool = True) -> str:
        """The location as Spark (Hadoop) names it: ``s3://`` (S3A through ``fs.s3.impl``),
        ``gs://``, ``abfss://container@account.dfs.core.windows.net/...`` (needs an account:
        the URI's or ``account``; ``abfs://`` when not ``secure``), or the local path."""
        if self.scheme != "az":
            return self.uri()
        name = self.account or account
        if not name:
            raise ConfigError(f"{self.uri()}: Spark reaches Azure through ABFS, which needs the "
                              "storage account", hint="write abfss://container@ACCOUNT.dfs.core."
                              "windows.net/path or set AZURE_STORAGE_ACCOUNT_NAME")
        scheme = "abfss" if secure else "abfs"
        return f"{scheme}://{self.bucket}@{name}.dfs.core.windows.net/{self.prefix}".rstrip("/")


def parse_location(uri: str) -> Location:
    """Split a location into scheme, bucket and key prefix.

    Raises:
        ConfigError: an unsupported scheme, or a URI without a bucket.

    >>> parse_location("abfss://data@acct.dfs.core.windows.net/cp")
    Location(scheme='az', bucket='data', prefix='cp', account='acct')
    >>> parse_location("/var/lib/runner").scheme
    'file'
    """
    match = _URI.match(uri)
    if match is None:
        return Location("file", "", uri)
    name = match["scheme"].lower()
    scheme = _SCHEMES.get(name)
    if scheme is None:
        raise ConfigError(f"{uri!r}: unsupported storage scheme {name}://"
                          f"{did_you_mean(name, _SCHEMES)}",
                          hint="use s3://, az:// or abfss://, gs://, or a local path")
    parts = urlsplit(uri)
    if scheme == "file":
        return Location("file", "", unquote(parts.path))
    bucket, account = parts.netloc, None
    host = _ABFS_HOST.match(bucket)
    if host:
        bucket, account = host["container"], host["account"]
    if not bucket or "@" in bucket:
        raise ConfigError(f"{uri!r} names no {'container' if scheme == 'az' else 'bucket'}",
                          hint=f"write {name}://BUCKET/prefix")
    return Location(scheme, bucket, unquote(parts.path).strip("/"), account)


class _Option(NamedTuple):
    key: str                    # object_store's key (delta-rs storage_options, obstore)
    env: tuple[str, ...]        # environment variables, first set wins
    aliases: tuple[str, ...] = ()


_S3_OPTIONS = (
    _Option("aws_access_key_id", ("AWS_ACCESS_KEY_ID",), ("access_key_id",)),
    _Option("aws_secret_access_key", ("AWS_SECRET_ACCESS_KEY",), ("secret_access_key",)),
    _Option("aws_session_token", ("AWS_SESSION_TOKEN",), ("session_token", "aws_token")),
    _Option("aws_region", ("AWS_REGION", "AWS_DEFAULT_REGION"), ("region",)),
    _Option("aws_endpoint", ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
            ("endpoint", "endpoint_url", "aws_endpoint_url", "aws_endpoint_url_s3")),
    _Option("allow_http", ("AWS_ALLOW_HTTP",), ("aws_allow_http",)),
    _Option("aws_profile", ("AWS_PROFILE",), ("profile",)),
    _Option("aws_virtual_hosted_style_request", ("AWS_VIRTUAL_HOSTED_STYLE_REQUEST",),
            ("virtual_hosted_style_request",)),
)
_AZURE_OPTIONS = (
    _Option("azure_storage_account_name", ("AZURE_STORAGE_ACCOUNT_NAME",),
            ("account_name", "azure_storage_account")),
    _Option("azure_storage_account_key", ("AZURE_STORAGE_ACCOUNT_KEY",),
            ("account_key", "azure_storage_key")),
    _Option("azure_storage_client_id", ("AZURE_STORAGE_CLIENT_ID", "AZURE_CLIENT_ID"),
            ("client_id", "azure_client_id")),
    _Option("azure_storage_client_secret", ("AZURE_STORAGE_CLIENT_SECRET",
                                            "AZURE_CLIENT_SECRET"),
            ("client_secret", "azure_client_secret")),
    _Option("azure_storage_tenant_id", ("AZURE_STORAGE_TENANT_ID", "AZURE_TENANT_ID"),
            ("tenant_id", "azure_tenant_id")),
    _Option("azure_storage_sas_key", ("AZURE_STORAGE_SAS_KEY", "AZURE_STORAGE_SAS_TOKEN"),
            ("sas_key", "sas_token", "azure_storage_sas_token")),
    _Option("azure_storage_use_emulator", ("AZURE_STORAGE_USE_EMULATOR",),
            ("use_emulator",)),
    _Option("azure_storage_endpoint", ("AZURE_STORAGE_ENDPOINT",),
            ("azure_endpoint",)),
    _Option("allow_http", ("AZURE_ALLOW_HTTP",), ("azure_allow_http",)),
)
_GCS_OPTIONS = (
    _Option("google_application_credentials", ("GOOGLE_APPLICATION_CREDENTIALS",),
            ("application_credentials",)),
    _Option("google_service_account", ("GOOGLE_SERVICE_ACCOUNT",),
            ("service_account", "google_service_account_path")),
    _Option("google_service_account_key", ("GOOGLE_SERVICE_ACCOUNT_KEY",),
            ("service_account_key",)),
)
_OPTIONS: dict[Scheme, tuple[_Option, ...]] = {"s3": _S3_OPTIONS, "az": _AZURE_OPTIONS,
                                               "gs": _GCS_OPTIONS, "file": ()}
_FAMILY = {"s3": "aws_", "az": "azure_", "gs": "google_"}
#: object_store's HTTP client options (obstore takes them as ``client_options``).
_CLIENT_OPTIONS = frozenset({
    "allow_http", "allow_invalid_certificates", "connect_timeout", "default_content_type",
    "http1_only", "http2_only", "http2_keep_alive_interval", "http2_keep_alive_timeout",
    "http2_keep_alive_while_idle", "pool_idle_timeout", "pool_max_idle_per_host",
    "proxy_url", "proxy_ca_certificate", "proxy_excludes", "randomize_addresses", "timeout",
    "user_agent"})
#: Options whose values are secrets (mask them wherever settings are shown).
SECRET_OPTIONS = frozenset({
    "aws_secret_access_key", "aws_session_token", "azure_storage_account_key",
    "azure_storage_client_secret", "azure_storage_sas_key", "google_service_account_key",
    "fs.s3a.secret.key", "fs.s3a.session.token"})
_TRUE = {"1", "true", "yes", "on"}
_EMULATOR_ACCOUNT = "devstoreaccount1"
#: The Azure Storage emulator's well-known account key (public, in Azure's documentation).
_EMULATOR_KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/"
                 "KBHBeksoGMGw==")

S3A = "org.apache.hadoop.fs.s3a.S3AFileSystem"
_S3A_SCHEME = {"fs.s3.impl": S3A, "fs.AbstractFileSystem.s3.impl": "org.apache.hadoop.fs.s3a.S3A"}
_GCS_SCHEME = {"fs.gs.impl": "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem",
               "fs.AbstractFileSystem.gs.impl": "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFS"}


@dataclass(frozen=True)
class StorageSettings:
    """What each consumer of one location needs.

    Attributes:
        location: the parsed location.
        storage_options: object_store keys and values (delta-rs ``storage_options``).
        hadoop: Hadoop keys and values for Spark, without the ``spark.hadoop.`` prefix (for
            ``hadoopConfiguration().set`` or, prefixed, the session's conf).
    """

    location: Location
    storage_options: dict[str, str] = field(default_factory=dict)
    hadoop: dict[str, str] = field(default_factory=dict)

    def spark_uri(self) -> str:
        """The location as Spark reaches it with :attr:`hadoop` (:meth:`Location.hadoop_uri`
        with the account of the options; plain ``abfs://`` to a local emulator)."""
        if self.location.scheme != "az":
            return self.location.hadoop_uri()
        account = self.location.account or self.storage_options.get(
            "azure_storage_account_name")
        emulator = self.hadoop.get("fs.azure.always.use.https") == "false"
        if emulator and not account:
            account = _EMULATOR_ACCOUNT
        return self.location.hadoop_uri(account, secure=not emulator)

    def spark_conf(self) -> dict[str, str]:
        """:attr:`hadoop` as Spark settings (``spark.hadoop.<key>``)."""
        return {f"spark.hadoop.{k}": v for k, v in self.hadoop.items()}

    def obstore(self) -> ObstoreOptions:
        """``config`` and ``client_options`` for ``obstore.store.from_url(uri, **...)``, and
        the AWS profile whose credentials it needs as a ``credential_provider`` (None: none, or
        keys given explicitly, which win as they do for delta-rs). obstore takes object_store's
        HTTP options apart (``aws_allow_http`` in its S3 config is a Rust panic, not an error)
        and no ``aws_profile``."""
        config: dict[str, str] = {}
        client: dict[str, str] = {}
        for key, value in self.storage_options.items():
            short = key.split("_", 1)[1] if key.startswith(("aws_", "azure_")) else key
            if key in _CLIENT_OPTIONS or short in _CLIENT_OPTIONS:
                client[short] = value
            elif key != "aws_profile":
                config[key] = value
        profile = self.storage_options.get("aws_profile")
        if "aws_access_key_id" in config:
            profile = None
        return {"config": config, "client_options": client, "profile": profile}


    def resolved_options(self) -> dict[str, str]:
        """:attr:`storage_options` with an AWS named profile resolved into its keys, for the
        consumers that do not read profiles themselves (delta-rs goes to the instance metadata
        service instead; pyarrow's S3 file system takes keys). Explicit keys win; the keys of
        temporary credentials are fresh at each call (boto3 refreshes them)."""
        options = dict(self.storage_options)
        profile = options.pop("aws_profile", None)
        if profile is None or "aws_access_key_id" in options:
            return self.storage_options
        from runner.storage.aws_profile import profile_credentials, profile_session

        keys = profile_credentials(profile).get_frozen_credentials()
        options.update(aws_access_key_id=keys.access_key, aws_secret_access_key=keys.secret_key)
        if keys.token:
            options["aws_session_token"] = keys.token
        region = profile_session(profile).region_name
        if region and "aws_region" not in options:
            options["aws_region"] = region
        return options


class ObstoreOptions(TypedDict):
    """:meth:`StorageSettings.obstore`'s answer."""

    config: dict[str, str]
    client_options: dict[str, str]
    profile: str | None


def _normalise(scheme: Scheme, options: Mapping[str, str]) -> tuple[dict[str, str],
                                                                    dict[str, str]]:
    """Explicit options as (object_store keys, Hadoop keys); other clouds' keys are left out.

    Raises:
        ConfigError: a key that is no cloud's option nor a Hadoop ``fs.`` key.
    """
    known = {alias: option.key for s, opts in _OPTIONS.items() for option in opts
             for alias in (option.key, *option.aliases, *(e.lower() for e in option.env))
             if s == scheme}
    others = {alias for s, opts in _OPTIONS.items() if s != scheme for option in opts
              for alias in (option.key, *option.aliases, *(e.lower() for e in option.env))}
    ours = _FAMILY.get(scheme)
    store: dict[str, str] = {}
    hadoop: dict[str, str] = {}
    for raw, value in options.items():
        key = raw.strip()
        if key.startswith(("fs.", "spark.hadoop.fs.")):
            hadoop[key.removeprefix("spark.hadoop.")] = str(value)
            continue
        low = key.lower()
        if low in known:
            store[known[low]] = str(value)
        elif low in _CLIENT_OPTIONS or (ours is not None and low.startswith(ours)):
            store[low] = str(value)
        elif low in others or low.startswith(tuple(_FAMILY.values())):
            continue
        else:
            every = sorted({*known, *others, *_CLIENT_OPTIONS})
            raise ConfigError(f"storage: unknown option {raw!r}{did_you_mean(low, every)}",
                              path="profiles.yml",
                              hint="give object_store's keys (aws_*, azure_*, google_*, or an "
                                   "HTTP client option) or a Hadoop key starting with fs.")
    return store, hadoop


def storage_settings(location: str | Location, options: Mapping[str, str] | None = None, *,
                     environ: Mapping[str, str] | None = None,
                     per_bucket: bool = False) -> StorageSettings:
    """The settings of ``location``: the cloud's environment variables, then ``options``.

    Args:
        location: a URI or local path, or a parsed :class:`Location`.
        options: explicit options (the target's ``storage:``): object_store keys or their
            environment-variable names (any case), or Hadoop ``fs.*`` keys (Spark only).
            They override the environment.
        environ: the environment to read (default ``os.environ``).
        per_bucket: write S3A's settings as ``fs.s3a.bucket.<bucket>.*``, so one Spark
            session can reach buckets with different endpoints or credentials.

    Returns:
        The settings; a local path has none.

    Raises:
        ConfigError: an unsupported scheme or an unknown option.
    """
    loc = location if isinstance(location, Location) else parse_location(location)
    env = os.environ if environ is None else environ
    if loc.is_local:
        return StorageSettings(loc)
    store: dict[str, str] = {}
    for option in _OPTIONS[loc.scheme]:
        value = next((env[name] for name in option.env if env.get(name)), None)
        if value is not None:
            store[option.key] = value
    explicit, hadoop_explicit = _normalise(loc.scheme, options or {})
    store.update(explicit)
    if loc.scheme == "s3":
        hadoop = _s3a(store, loc.bucket if per_bucket else None, env)
    elif loc.scheme == "az":
        hadoop = _abfs(store, loc.account)
    else:
        hadoop = _gcs(store)
    hadoop.update(hadoop_explicit)
    return StorageSettings(loc, store, hadoop)


def _s3a(store: Mapping[str, str], bucket: str | None, env: Mapping[str, str]
         ) -> dict[str, str]:
    """S3A's settings for object_store's S3 options (per bucket when ``bucket`` is given). A
    profile goes by name, with ``AWS_SHARED_CREDENTIALS_FILE``'s file: S3A would otherwise
    read the JVM's environment, which a profile from ``storage:`` never reaches."""
    prefix = f"fs.s3a.bucket.{bucket}." if bucket else "fs.s3a."
    out: dict[str, str] = {}
    for key, name in (("aws_access_key_id", "access.key"), ("aws_secret_access_key",
                      "secret.key"), ("aws_session_token", "session.token"),
                      ("aws_region", "endpoint.region"), ("aws_endpoint", "endpoint")):
        if key in store:
            out[prefix + name] = store[key]
    provider = None
    if "aws_session_token" in store:
        provider = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
    elif "aws_access_key_id" in store:
        provider = "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
    elif "aws_profile" in store:
        provider = "org.apache.hadoop.fs.s3a.auth.ProfileAWSCredentialsProvider"
        out[prefix + "auth.profile.name"] = store["aws_profile"]
        if env.get("AWS_SHARED_CREDENTIALS_FILE"):
            out[prefix + "auth.profile.file"] = env["AWS_SHARED_CREDENTIALS_FILE"]
    if provider:
        out[prefix + "aws.credentials.provider"] = provider
    endpoint = store.get("aws_endpoint")
    if endpoint:
        hosted = store.get("aws_virtual_hosted_style_request", "").lower() in _TRUE
        out[prefix + "path.style.access"] = "false" if hosted else "true"
        if endpoint.lower().startswith("http://"):
            out[prefix + "connection.ssl.enabled"] = "false"
    return {**_S3A_SCHEME, **out}


def _emulator_endpoint(store: Mapping[str, str]) -> str | None:
    """``host:port`` of a local Blob emulator (Azurite) the options point at, else None."""
    endpoint = store.get("azure_storage_endpoint")
    if not endpoint and store.get("azure_storage_use_emulator", "").lower() in _TRUE:
        endpoint = "http://127.0.0.1:10000"
    host = urlsplit(endpoint).netloc if endpoint else ""
    name = host.rsplit(":", 1)[0]
    local = name in ("localhost", "[::1]") or re.fullmatch(r"[\d.]+", name) is not None
    return host if local else None


def _abfs(store: Mapping[str, str], uri_account: str | None) -> dict[str, str]:
    """ABFS's account-qualified settings (shared key, SAS, or a service principal; a local
    emulator through ABFS's Blob-endpoint mode)."""
    emulator = _emulator_endpoint(store)
    account = uri_account or store.get("azure_storage_account_name") or (
        _EMULATOR_ACCOUNT if emulator else None)
    if not account:
        return {}
    host = f"{account}.dfs.core.windows.net"
    out: dict[str, str] = {}
    if emulator:
        # Azurite serves the Blob API only, over http, path-style: ABFS (Hadoop 3.5) reaches
        # it with an {IP}:{PORT} endpoint, the Blob service type and no namespace probe. Not
        # qualified by account: ABFS reads some of these only unqualified (an account-qualified
        # always.use.https=false was ignored: TLS to an http port, retried for minutes).
        out.update({key: value for key, value in (
            ("fs.azure.abfs.endpoint", emulator), ("fs.azure.always.use.https", "false"),
            ("fs.azure.account.hns.enabled", "false"),
            ("fs.azure.fns.account.service.type", "BLOB"),
            ("fs.azure.ingress.service.type", "BLOB"),
            ("fs.azure.networking.library", "JDK_HTTP_URL_CONNECTION"),
            ("fs.azure.io.retry.max.retries", "3"))})
        if "azure_storage_account_key" not in store:
            out[f"fs.azure.account.auth.type.{host}"] = "SharedKey"
            out[f"fs.azure.account.key.{host}"] = _EMULATOR_KEY
    if "azure_storage_account_key" in store:
        out[f"fs.azure.account.auth.type.{host}"] = "SharedKey"
        out[f"fs.azure.account.key.{host}"] = store["azure_storage_account_key"]
    elif "azure_storage_sas_key" in store:
        out[f"fs.azure.account.auth.type.{host}"] = "SAS"
        out[f"fs.azure.sas.token.provider.type.{host}"] = (
            "org.apache.hadoop.fs.azurebfs.sas.FixedSASTokenProvider")
        out[f"fs.azure.sas.fixed.token.{host}"] = store["azure_storage_sas_key"]
    elif "azure_storage_client_secret" in store:
        tenant = store.get("azure_storage_tenant_id", "")
        out.update({
            f"fs.azure.account.auth.type.{host}": "OAuth",
            f"fs.azure.account.oauth.provider.type.{host}":
                "org.apache.hadoop.fs.azurebfs.oauth2.ClientCredsTokenProvider",
            f"fs.azure.account.oauth2.client.id.{host}":
                store.get("azure_storage_client_id", ""),
            f"fs.azure.account.oauth2.client.secret.{host}": store["azure_storage_client_secret"],
            f"fs.azure.account.oauth2.client.endpoint.{host}":
                f"https://login.microsoftonline.com/{tenant}/oauth2/token"})
    return out


def _gcs(store: Mapping[str, str]) -> dict[str, str]:
    """The GCS connector's settings (a service-account key file, when one is named)."""
    keyfile = store.get("google_application_credentials") or store.get(
        "google_service_account")
    if not keyfile:
        return dict(_GCS_SCHEME)
    return {**_GCS_SCHEME, "fs.gs.auth.type": "SERVICE_ACCOUNT_JSON_KEYFILE",
            "fs.gs.auth.service.account.json.keyfile": keyfile}
