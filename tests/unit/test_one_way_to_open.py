"""Every Delta table the runner opens with delta-rs goes through runner/sinks/delta.py, which
applies the location's storage options (endpoint, region, credentials): a bare
``deltalake.DeltaTable(path)`` elsewhere goes to the cloud's default endpoint with the
environment's keys (the SCD 2 change log did: "Generic S3 error" on every batch). And the
deltalake calls that create a table at a path pass ``storage_options=``.

The scan is of the syntax tree (``ast``): it follows ``from deltalake import DeltaTable as X``
and ``import deltalake``, so an alias does not hide a call, and delta-spark's ``DeltaTable``
(``from delta.tables import DeltaTable``, called as ``DeltaTable.forPath``) is not deltalake's.
"""

from __future__ import annotations

import ast
from pathlib import Path

RUNNER = Path(__file__).resolve().parents[2] / "runner"
OWNER = RUNNER / "sinks" / "delta.py"
#: deltalake functions that write a table at a path: they must carry ``storage_options=``.
CREATORS = {"write_deltalake", "create_table_with_add_actions", "convert_to_deltalake"}


def _deltalake_names(tree: ast.AST) -> tuple[set[str], set[str], set[str]]:
    """(names bound to deltalake's DeltaTable, to a creator function, to the module itself)."""
    tables, creators, modules = set(), set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("deltalake"):
            for alias in node.names:
                bound = alias.asname or alias.name
                if alias.name == "DeltaTable":
                    tables.add(bound)
                elif alias.name in CREATORS:
                    creators.add(bound)
        elif isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names if a.name == "deltalake"}
    return tables, creators, modules


def _problems(source: str, where: str, *, owner: bool = False) -> list[str]:
    """The calls in ``source`` (the file ``where``) that break the rule; ``owner``: the file
    is runner/sinks/delta.py, which may open tables."""
    tree = ast.parse(source, where)
    tables, creators, modules = _deltalake_names(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        opens = (isinstance(func, ast.Name) and func.id in tables) or (
            isinstance(func, ast.Attribute) and (
                (func.attr == "DeltaTable" and isinstance(func.value, ast.Name)
                 and func.value.id in modules)
                or (func.attr in ("is_deltatable", "create") and isinstance(func.value, ast.Name)
                    and func.value.id in tables)))
        if opens and not owner:
            found.append(f"{where}:{node.lineno}: opens a Delta table: use "
                         "runner.sinks.delta.open_delta / open_if_table / is_delta_table")
        name = func.id if isinstance(func, ast.Name) else (
            func.attr if isinstance(func, ast.Attribute) else "")
        if ((name in creators or (isinstance(func, ast.Attribute) and name in CREATORS))
                and not any(k.arg == "storage_options" for k in node.keywords)):
            found.append(f"{where}:{node.lineno}: {name}(...) without storage_options=")
    return found


def test_only_the_owner_opens_delta_tables() -> None:
    found = [p for path in sorted(RUNNER.rglob("*.py"))
             for p in _problems(path.read_text(), str(path.relative_to(RUNNER.parent)),
                                owner=path == OWNER)]
    assert found == [], "\n".join(found)


def test_the_scan_sees_an_aliased_open_and_a_creator_without_options() -> None:
    """The rule catches what it is for (else a passing scan would prove nothing)."""
    source = ("from deltalake import DeltaTable as RsTable, write_deltalake\n"
              "import deltalake\n"
              "from delta.tables import DeltaTable\n"
              "RsTable('s3://b/t')\n"
              "deltalake.DeltaTable('s3://b/t')\n"
              "RsTable.is_deltatable('s3://b/t')\n"
              "write_deltalake('s3://b/t', data)\n"
              "write_deltalake('s3://b/t', data, storage_options=opts)\n"
              "DeltaTable.forPath(spark, 's3://b/t')\n")
    found = _problems(source, "runner/x.py")
    assert [p.split(": ", 1)[0] for p in found] == [
        "runner/x.py:4", "runner/x.py:5", "runner/x.py:6", "runner/x.py:7"], found
    assert _problems(source, "runner/sinks/delta.py", owner=True) == [
        found[-1].replace("runner/x.py", "runner/sinks/delta.py")]
