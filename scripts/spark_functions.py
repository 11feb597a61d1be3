"""Regenerate ``runner/lint/functions.json``: the Spark SQL built-ins a model may call.

Lists Spark's own function registries (scalar, aggregate, window and generator functions from
``FunctionRegistry``; table-valued functions from ``TableFunctionRegistry``) with their class
names and groups, and gives each one a category. A model may call the ``allowed`` ones only
(``runner/lint/guard.py``); every other category is refused by ``compile``:

- ``jvm``: calls Java methods by name (``reflect``, ``java_method``, ``try_reflect``).
- ``files``: reads files or paths on the driver or the executors (``read_files``, a descriptor
  file of ``from_protobuf``/``to_protobuf``, the Python workers' log files).
- ``generator``: ``range``, allowed only with literal bounds (see guard.py's RANGE_MAX_ROWS).
- ``session``: reads or changes session state beyond the current values (none in Spark 4.2;
  ``SET``/``RESET``/``USE`` are statements, refused as not a query).

Names absent from the registry are refused too (catalog and temporary functions are code).

Run it again for a new Spark version (it starts a local SparkSession, about 10 s):
``python scripts/spark_functions.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "runner" / "lint" / "functions.json"
sys.path.insert(0, str(ROOT))

#: Denied by name: (category, why). Names not in this Spark's registry are kept (a runtime with
#: more built-ins, e.g. Databricks' ``read_files``, gets the specific message).
DENIED: dict[str, tuple[str, str]] = {
    "reflect": ("jvm", "calls Java methods"),
    "java_method": ("jvm", "calls Java methods"),
    "try_reflect": ("jvm", "calls Java methods"),
    "read_files": ("files", "reads files by path"),
    "from_protobuf": ("files", "may read a descriptor file by path"),
    "to_protobuf": ("files", "may read a descriptor file by path"),
    "python_worker_logs": ("files", "reads the Python workers' log files"),
    "range": ("generator", "generates rows without bound unless its bounds are literal"),
}
#: Classes whose instances call into the JVM by name, whatever the function is called.
DENIED_CLASSES = ("CallMethodViaReflection", "TryReflect")


def category(name: str, class_name: str) -> str:
    if name in DENIED:
        return DENIED[name][0]
    if class_name.rsplit(".", 1)[-1] in DENIED_CLASSES:
        return "jvm"
    return "allowed"


def _dumps(document: dict[str, object]) -> str:
    """The document as JSON with one function a line (reviewable diffs for a new Spark)."""
    functions = document["functions"]
    assert isinstance(functions, dict)
    head = json.dumps({k: v for k, v in document.items() if k != "functions"}, indent=1)
    rows = ",\n".join(f"  {json.dumps(n)}: {json.dumps(f)}" for n, f in functions.items())
    return head[:-2] + ',\n "functions": {\n' + rows + "\n }\n}\n"


def main() -> int:
    from runner.runtime.client.session import build_session, stop_session

    spark = build_session(master="local[1]", app_name="spark-functions")
    try:
        jvm = spark._jvm  # noqa: SLF001 - Spark's registry through py4j
        assert jvm is not None
        analysis = jvm.org.apache.spark.sql.catalyst.analysis
        groups: dict[str, str] = {}
        registry = analysis.FunctionRegistry.expressions()
        keys = registry.keySet().iterator()
        while keys.hasNext():
            key = keys.next()
            groups[str(key)] = str(registry.get(key).get()._1().getGroup() or "")  # noqa: SLF001 - a Scala tuple through py4j
        tvfs = analysis.TableFunctionRegistry.builtin().listFunction()
        for i in range(tvfs.size()):
            groups.setdefault(str(tvfs.apply(i).funcName()), "table_funcs")
        functions = {}
        for f in spark.catalog.listFunctions():
            name = f.name.lower()
            functions[name] = {"class": f.className or "", "group": groups.get(name, ""),
                               "category": category(name, f.className or "")}
        for name, group in groups.items():  # table-valued functions listFunctions omits
            functions.setdefault(name.lower(), {"class": "", "group": group,
                                                "category": category(name.lower(), "")})
        for name, (cat, _) in DENIED.items():
            functions.setdefault(name, {"class": "", "group": "", "category": cat})
        document = {
            "spark_version": spark.version,
            "generated_by": "python scripts/spark_functions.py",
            "reasons": {name: why for name, (_, why) in DENIED.items()},
            "functions": dict(sorted(functions.items())),
        }
    finally:
        stop_session(spark)
    OUT.write_text(_dumps(document), encoding="utf-8")
    denied = sorted(n for n, f in functions.items() if f["category"] != "allowed")
    version = document["spark_version"]
    print(f"{OUT.relative_to(ROOT)}: {len(functions)} functions of Spark {version}; "
          f"denied: {', '.join(denied)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
