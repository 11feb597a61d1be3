"""Object-storage servers for tests, on loopback ports: S3 (moto) and Azure Blob (Azurite).

**moto** (PyPI ``moto[server]``): ``python -m moto.server -H 127.0.0.1 -p PORT``, in memory.
It honours conditional writes (``If-None-Match: *`` and ``If-Match`` -> 412), which delta-rs's
commits and obstore's ``put(mode=...)`` rely on. Credentials are not checked (any key works).

**Azurite** (npm ``azurite``; ``scripts/setup.sh`` installs it into ``.tools/azurite/``):
``azurite-blob --blobHost 127.0.0.1 --blobPort PORT --location DIR --skipApiVersionCheck
--loose --disableTelemetry`` (without the last flag it sends telemetry off the machine). It
serves the Blob API only, path-style (``http://127.0.0.1:PORT/devstoreaccount1/<container>``),
with the emulator's well-known account and key; object_store can create no container, so
:func:`create_container` signs that one request itself (Shared Key).

Tests get them through the fixtures of ``tests/conftest.py``: ``moto_server`` / ``azurite``
(one per test run), ``s3_bucket`` / ``azure_container`` (a new, empty one per test: a
:class:`Bucket` whose ``env`` holds the variables that reach it). Each server's log stays in
the run's temp folder (pytest keeps the last runs') and its tail is in every start-up error.

moto's log has a line per HTTP request: :class:`RequestLog` counts them by kind (benches
report the requests a run or a batch makes).

``python -m tests.support.object_store`` starts both and prints their settings, for trying
the runner by hand (Ctrl-C stops them).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from dataclasses import dataclass, field
from email.utils import formatdate
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from tests.support.brokers import _die_with_parent, _free_port, _terminate

if TYPE_CHECKING:
    from runner.storage.settings import StorageSettings

__all__ = ["AZURITE_ACCOUNT", "AZURITE_KEY", "KINDS", "AzuriteServer", "Bucket", "MotoServer",
           "RequestLog", "azurite_binary", "count_requests", "create_container", "start_server",
           "unique_name"]

REPO = Path(__file__).resolve().parents[2]
AZURITE_ENV = "RUNNER_AZURITE_BIN"
"""Environment variable naming the ``azurite-blob`` executable (default: set-up's)."""

#: The Azure Storage emulator's well-known account and key (public, in Microsoft's docs).
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/"
               "KBHBeksoGMGw==")


#: A werkzeug access-log line: the method, the target, the status.
REQUEST_LINE = re.compile(r'"(?P<method>[A-Z]+) (?P<target>\S+) HTTP/[\d.]+" (?P<status>\d{3})')
#: werkzeug colours some lines (4xx, 206, DELETE's 204) with terminal escapes: removed first.
ANSI = re.compile(r"\x1b\[[0-9;]*m")
KINDS = ("GET", "LIST", "HEAD", "PUT", "POST", "DELETE")


def request_kind(method: str, target: str) -> str:
    """``GET`` of an object, ``LIST`` (a GET of a bucket, i.e. a listing), else the method."""
    path = urlsplit(target).path.strip("/")
    if method == "GET" and "/" not in path:
        return "LIST"
    return method


def count_requests(lines: list[str]) -> dict[str, int]:
    """Requests by kind (:data:`KINDS`), ``total``, and ``status_412`` / ``status_404``; the
    moto-api probes of the server's own start-up are not counted."""
    counts: Counter[str] = Counter()
    for line in lines:
        m = REQUEST_LINE.search(ANSI.sub("", line))
        if m is None or m["target"].startswith("/moto-api"):
            continue
        counts[request_kind(m["method"], m["target"])] += 1
        counts["total"] += 1
        if m["status"] in ("404", "412"):
            counts[f"status_{m['status']}"] += 1
    return {k: counts.get(k, 0) for k in (*KINDS, "total", "status_412", "status_404")}


@dataclass
class RequestLog:
    """The request log of one moto server; :meth:`mark` then :meth:`since` counts a run."""

    path: Path

    def mark(self) -> int:
        """The log's current size: where the next run's requests start."""
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    def since(self, offset: int) -> dict[str, int]:
        """Requests logged after ``offset`` (see :func:`count_requests`)."""
        return self.between(offset, None)

    def between(self, start: int, end: int | None) -> dict[str, int]:
        """Requests logged from byte ``start`` up to byte ``end`` (None: the end); a line
        cut at either end is counted where it starts."""
        with open(self.path, "rb") as f:
            f.seek(start)
            data = f.read() if end is None else f.read(max(0, end - start))
        return count_requests(data.decode("utf-8", errors="replace").splitlines())



def unique_name(prefix: str = "t") -> str:
    """A fresh bucket or container name (lowercase, 3-63 characters)."""
    return f"{prefix}-{uuid.uuid4().hex[:16]}"


@dataclass(frozen=True)
class Bucket:
    """An empty bucket (or container) of a test server.

    Attributes:
        uri: ``s3://name`` or ``az://name``.
        name: the bucket's name.
        env: the environment variables that reach it (give them to a runner process, or pass
            them as ``environ`` to :func:`runner.storage.settings.storage_settings`).
    """

    uri: str
    name: str
    env: dict[str, str] = field(default_factory=dict)

    def settings(self, path: str = "", options: dict[str, str] | None = None,
                 **kwargs: Any) -> StorageSettings:
        """:func:`~runner.storage.settings.storage_settings` of ``uri/path`` from :attr:`env`."""
        from runner.storage.settings import storage_settings

        location = f"{self.uri}/{path.strip('/')}".rstrip("/")
        return storage_settings(location, options, environ=self.env, **kwargs)

    def store(self, path: str = "") -> Any:
        """An obstore store rooted at ``uri/path``."""
        from obstore.store import from_url

        parts = self.settings(path).obstore()
        return from_url(self.settings(path).location.uri(), config=parts["config"],
                        client_options=parts["client_options"])


class _Server:
    """A server process on 127.0.0.1:``port`` whose output goes to ``log_file``."""

    name = "server"

    def __init__(self, *, log_dir: Path | None = None, startup_timeout: float = 30.0) -> None:
        self.port = _free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.startup_timeout = startup_timeout
        self.start_seconds: float | None = None
        self._own_dir = log_dir is None  # a temp folder of its own goes away on stop()
        self.dir = Path(log_dir) if log_dir else Path(tempfile.mkdtemp(prefix=f"{self.name}-"))
        self.dir.mkdir(parents=True, exist_ok=True)
        self.log_file = self.dir / f"{self.name}-{self.port}.log"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def command(self) -> list[str]:
        raise NotImplementedError

    def ready(self) -> bool:
        """The server answers HTTP (any status: 403 without credentials is an answer)."""
        try:
            with urllib.request.urlopen(self.endpoint + self._probe_path, timeout=1):
                return True
        except urllib.error.HTTPError:
            return True
        except (OSError, urllib.error.URLError):
            return False

    _probe_path = "/"

    def start(self) -> _Server:
        """Start the process and wait until it answers.

        Raises:
            RuntimeError: it exited or did not answer in time (the message has the log's tail).
        """
        started = time.monotonic()
        with open(self.log_file, "ab") as log:
            self._proc = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, cwd=self.dir,
                                          preexec_fn=_die_with_parent)
        deadline = started + self.startup_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self._proc.returncode}: "
                                   f"{self.log()}")
            if self.ready():
                self.start_seconds = time.monotonic() - started
                return self
            time.sleep(0.05)
        tail = self.log()
        self.stop()
        raise RuntimeError(f"{self.name} did not answer on {self.endpoint} within "
                           f"{self.startup_timeout} s: {tail}")

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs (a bench reads its CPU seconds)."""
        return self._proc.pid if self._proc is not None else None

    def log(self) -> str:
        """The last 3000 characters of the server's output."""
        try:
            return self.log_file.read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    def stop(self) -> None:
        """Stop the process (SIGTERM, then SIGKILL after 10 s). The log (and Azurite's data)
        stays in a ``log_dir`` given; a temp folder made here is deleted."""
        _terminate(self._proc, grace=10)
        self._proc = None
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> _Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class MotoServer(_Server):
    """moto's S3 server, in memory. ``bucket()`` makes a new empty bucket."""

    name = "moto"
    _probe_path = "/moto-api/"
    ACCESS_KEY = "testing"
    SECRET_KEY = "testing"
    REGION = "us-east-1"

    @property
    def command(self) -> list[str]:
        return [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)]

    def env(self) -> dict[str, str]:
        """The standard variables that reach this server (plain http, path-style)."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": self.ACCESS_KEY,
                "AWS_SECRET_ACCESS_KEY": self.SECRET_KEY, "AWS_REGION": self.REGION,
                "AWS_ALLOW_HTTP": "true"}

    def bucket(self, name: str | None = None) -> Bucket:
        """Create a bucket (default: a new unique name)."""
        import boto3

        name = name or unique_name()
        client = boto3.client("s3", endpoint_url=self.endpoint, region_name=self.REGION,
                              aws_access_key_id=self.ACCESS_KEY,
                              aws_secret_access_key=self.SECRET_KEY)
        client.create_bucket(Bucket=name)
        return Bucket(f"s3://{name}", name, self.env())


def azurite_binary() -> str | None:
    """The ``azurite-blob`` executable (``$RUNNER_AZURITE_BIN``, else set-up's copy in
    ``.tools/azurite``), or None when it is not installed."""
    override = os.environ.get(AZURITE_ENV)
    path = Path(override) if override else (
        REPO / ".tools" / "azurite" / "node_modules" / ".bin" / "azurite-blob")
    return str(path) if path.is_file() else None


class AzuriteServer(_Server):
    """Azurite's Blob service, its data in a folder of the log dir. ``bucket()`` makes a new
    container (a :class:`Bucket` with ``az://`` URI)."""

    name = "azurite"

    def __init__(self, binary: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.binary = binary
        self.account_url = f"{self.endpoint}/{AZURITE_ACCOUNT}"

    @property
    def command(self) -> list[str]:
        data = self.dir / f"data-{self.port}"
        return [self.binary, "--blobHost", "127.0.0.1", "--blobPort", str(self.port),
                "--location", str(data), "--skipApiVersionCheck", "--loose",
                "--disableTelemetry", "--silent"]

    def env(self) -> dict[str, str]:
        """The variables that reach this server: the emulator's account and key, its URL."""
        return {"AZURE_STORAGE_ACCOUNT_NAME": AZURITE_ACCOUNT,
                "AZURE_STORAGE_ACCOUNT_KEY": AZURITE_KEY,
                "AZURE_STORAGE_ENDPOINT": self.account_url, "AZURE_ALLOW_HTTP": "true"}

    def bucket(self, name: str | None = None) -> Bucket:
        """Create a container (default: a new unique name)."""
        name = name or unique_name()
        create_container(self.account_url, name)
        return Bucket(f"az://{name}", name, self.env())


def create_container(account_url: str, name: str, *, account: str = AZURITE_ACCOUNT,
                     key: str = AZURITE_KEY) -> None:
    """Create a Blob container with one Shared Key-signed request (path-style URL)."""
    date, version = formatdate(usegmt=True), "2021-08-06"
    resource = f"/{account}/{account_url.rstrip('/').rsplit('/', 1)[-1]}/{name}"
    to_sign = "\n".join(["PUT", *[""] * 11, f"x-ms-date:{date}", f"x-ms-version:{version}",
                         f"{resource}\nrestype:container"])
    signature = base64.b64encode(hmac.new(base64.b64decode(key), to_sign.encode(),
                                          hashlib.sha256).digest()).decode()
    request = urllib.request.Request(
        f"{account_url}/{name}?restype=container", method="PUT",
        headers={"x-ms-date": date, "x-ms-version": version, "Content-Length": "0",
                 "Authorization": f"SharedKey {account}:{signature}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        if response.status != 201:
            raise RuntimeError(f"create container {name}: HTTP {response.status}")


def start_server(make: Any, attempts: int = 3) -> Any:
    """``make()`` a server and start it, again on a new port when it fails (a free port can be
    taken between probe and bind); the last failure is raised."""
    for attempt in range(attempts):
        server = make()
        try:
            return server.start()
        except RuntimeError:
            server.stop()
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def main() -> int:
    """Start moto and (when installed) Azurite; print their settings; serve until Ctrl-C."""
    servers: list[_Server] = [start_server(MotoServer)]
    binary = azurite_binary()
    if binary:
        servers.append(start_server(lambda: AzuriteServer(binary)))
    try:
        for server in servers:
            assert isinstance(server, MotoServer | AzuriteServer)
            bucket = server.bucket("runner")
            print(f"{server.name} on {server.endpoint} ({server.start_seconds:.1f} s); "
                  f"bucket {bucket.uri}; log {server.log_file}")
            for name, value in bucket.env.items():
                print(f"  export {name}={value}")
        print("Ctrl-C stops them", flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0
    finally:
        for server in servers:
            with contextlib.suppress(OSError):
                server.stop()


if __name__ == "__main__":
    raise SystemExit(main())
