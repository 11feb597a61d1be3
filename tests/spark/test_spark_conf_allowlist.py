"""project.yml's Spark allowlist (runner/project/spark_conf.py) held against Spark's own
configuration: every listed key is one Spark (or Delta, or Hadoop) knows, and none of them,
nor any key Spark knows that the list lets through, names a class, a plugin, a listener, a
script or a path to run.

Spark's registry is ``ConfigEntry.knownConfigs`` (every core, SQL and Delta entry registered
in the JVM, with its documentation and default) plus ``SET -v`` (the public SQL settings);
Hadoop's is ``core-default.xml`` in pyspark's Hadoop client jar. Engine-free: no table is
written.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest

from runner.project.spark_conf import ALLOWED, allowed, guarded_reason

pytestmark = pytest.mark.spark

#: Words in a setting's documentation that say its value is code or a program to run.
CODE_DOC = re.compile(r"\b(class(es|name)?|plugins?|listeners?|scripts?|executables?|"
                      r"commands?|jars?|fully[- ]qualified)\b", re.IGNORECASE)
#: Words in a setting's name that say the same (or a path the setting reads or writes).
CODE_NAME = {"class", "classes", "classname", "plugin", "plugins", "listener", "listeners",
             "script", "jar", "jars", "provider", "factory", "impl", "dir", "path", "command",
             "module", "extension", "extensions", "serializer", "committer", "python",
             "executable", "packages", "repositories", "ivy", "archives", "filters",
             "location", "home", "keyfile"}
#: A default value that is a class name (``org.apache.Foo``) or a local path.
CODE_DEFAULT = re.compile(r"^([a-z]\w*(\.[a-z_]\w*)+\.[A-Z]\w*|/.*|~.*|file:.*)$")
#: A default that is a flag, a number, a size or a duration: the value names nothing (a name
#: word such as ``path`` in ``fs.s3a.path.style.access`` is then not a path).
SCALAR_DEFAULT = re.compile(r"^(true|false|-?\d+(\.\d+)?[a-z]*)$", re.IGNORECASE)
#: Documented core keys that Spark's registry does not list (families with a name of the
#: user's own inside: ``spark.<driver|executor>.resource.<name>.<field>``): all code-bearing.
DOCUMENTED_FAMILIES = ("spark.driver.resource.gpu.discoveryScript",
                       "spark.executor.resource.gpu.discoveryScript",
                       "spark.driver.resource.gpu.amount",
                       "spark.executor.resource.gpu.vendor",
                       "spark.worker.resource.gpu.discoveryScript",
                       "spark.executorEnv.LD_PRELOAD",
                       "spark.sql.catalog.evil",
                       "spark.sql.catalog.evil.impl")


def _words(key: str) -> set[str]:
    return {w.lower() for w in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", key)}


@pytest.fixture(scope="module")
def spark_keys(spark) -> dict[str, tuple[str, str]]:
    """Every key the JVM knows -> (documentation, default)."""
    keys = {r["key"]: (r["meaning"] or "", r["value"] or "")
            for r in spark.sql("SET -v").collect()}  # also registers Delta's SQL settings
    config = spark._jvm.org.apache.spark.internal.config
    registry = getattr(getattr(config, "ConfigEntry$"), "MODULE$").knownConfigs()
    for key in list(registry.keySet()):
        entry = registry.get(key)
        keys.setdefault(str(key), (str(entry.doc() or ""), str(entry.defaultValueString())))
    assert len(keys) > 1000  # the whole registry, not a stub
    return keys


@pytest.fixture(scope="module")
def hadoop_keys() -> dict[str, tuple[str, str]]:
    """Hadoop's documented settings (core-default.xml) -> (description, default)."""
    import pyspark

    jar = next((Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar"))
    with zipfile.ZipFile(jar) as z:
        root = ET.fromstring(z.read("core-default.xml"))
    return {p.findtext("name", "").strip(): (p.findtext("description", "") or "",
                                             (p.findtext("value", "") or "").strip())
            for p in root.iter("property")}


def _listed() -> list[str]:
    return [key for keys in ALLOWED.values() for key in keys]


def test_every_listed_key_is_known_and_loads_no_code(spark_keys, hadoop_keys) -> None:
    unknown = []
    for pattern in _listed():
        key = pattern.replace("*", "acct.dfs.core.windows.net")
        if key.startswith("spark.hadoop."):  # a file system's or metastore's option
            doc, default = hadoop_keys.get(key.removeprefix("spark.hadoop."), ("", ""))
        elif key in spark_keys:
            doc, default = spark_keys[key]
        else:
            unknown.append(key)
            continue
        assert SCALAR_DEFAULT.match(default) or not _words(key) & CODE_NAME, key
        assert not CODE_DOC.search(doc), (key, doc)
        assert not CODE_DEFAULT.match(default), (key, default)
    assert not unknown, f"not Spark's settings (a typo, or gone in this Spark): {unknown}"


def test_no_key_spark_knows_is_let_through_if_it_names_code(spark_keys) -> None:
    """The other way round: scan all of Spark's keys; those whose name, documentation or
    default says code, a plugin, a listener, a script or a path are all refused."""
    code_bearing = [k for k, (doc, default) in spark_keys.items()
                    if _words(k) & CODE_NAME or CODE_DOC.search(doc)
                    or CODE_DEFAULT.match(default)]
    assert len(code_bearing) > 50  # the scan found the known ones, not nothing
    assert [k for k in code_bearing if allowed(k)] == []
    assert all(guarded_reason(k) for k in code_bearing)
    for key in DOCUMENTED_FAMILIES:
        assert guarded_reason(key), key


#: Words in a setting's name or documentation that say its value is a host that receives
#: requests (and with them the deployment's credentials) or a credential itself.
HOST_DOC = re.compile(r"\b(host(name)?s?|urls?|uris?|endpoints?|address(es)?|proxy|servers?|"
                      r"credentials?|secret|password|token|access key)\b", re.IGNORECASE)


def test_the_project_reaches_no_hadoop_setting(hadoop_keys) -> None:
    """Nothing of project.yml reaches Hadoop's configuration: every key of core-default.xml
    (credential providers, endpoints, the S3A/ABFS options a finding used to run a command or
    send a token elsewhere) is refused in project.yml's spark.conf, and none is listed."""
    assert len(hadoop_keys) > 300  # the whole of core-default.xml, not a stub
    assert not [k for k in _listed() if k.startswith("spark.hadoop.")]
    let_through = [k for k in hadoop_keys if allowed(f"spark.hadoop.{k}")
                   or guarded_reason(f"spark.hadoop.{k}") is None]
    assert let_through == []
    for key in ("fs.s3a.bucket.b.aws.credentials.provider", "fs.s3a.endpoint",
                "fs.azure.account.oauth2.client.endpoint.acct.dfs.core.windows.net",
                "hive.metastore.uris"):
        assert guarded_reason(f"spark.hadoop.{key}"), key


def test_no_listed_key_names_a_host_or_a_credential(spark_keys) -> None:
    """A listed key neither names nor documents a host, an address or a credential: those are
    the deployment's (the profile's target sets them)."""
    named = []
    for key in _listed():
        doc = spark_keys.get(key, ("", ""))[0]
        if HOST_DOC.search(key.replace(".", " ")) or HOST_DOC.search(doc):
            named.append((key, doc[:120]))
    assert named == []
