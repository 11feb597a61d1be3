"""The package's shape, checked: no import cycles, no module over 450 lines, no function over
80 lines, and the compile half never imports the runtime half (``runner compile`` needs no JVM
and stays fast)."""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "runner"
MAX_LINES = 450
#: A function's lines: ``def`` to its last line (decorators not counted), methods and nested
#: functions included.
MAX_FUNCTION_LINES = 80
#: Functions allowed over MAX_FUNCTION_LINES (none: split a long one into named steps). The test
#: fails once one listed here is 80 lines or fewer, so that the list cannot go stale.
LONG_FUNCTIONS: frozenset[str] = frozenset()
#: Packages that run at compile time, and those they must not import.
COMPILE_SIDE = ("runner.project", "runner.compile", "runner.lint", "runner.errors")
RUNTIME_SIDE = ("runner.runtime", "runner.sources", "runner.sinks", "runner.model_tests")
#: Pure modules of the runtime side that compile may use to validate a source's settings
#: (no pyspark, no client library at import).
PURE = ("runner.sources.kafka.offset_plan", "runner.sources.kafka.options")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """Modules of the package that ``path`` imports, at any depth of the file (lazy imports
    inside functions count: they run too). ``from a import b`` counts ``a.b`` when ``b`` is
    a module, else ``a``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules
                     else node.module for a in node.names]
        else:
            continue
        found.update(n for n in names if n in modules)
    return found


def test_no_import_cycles() -> None:
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        # A package's __init__ importing its own submodules is not a cycle of modules.
        graph[name] = {m for m in _imports(path, modules) if not name or not m.startswith(name + ".")}
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as e:
        pytest.fail(f"import cycle in runner/: {' -> '.join(e.args[1])}")


def test_no_module_over_the_line_budget() -> None:
    long = {str(p.relative_to(PACKAGE.parent)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}, f"modules over {MAX_LINES} lines: {long}"


def function_lengths(path: Path) -> dict[str, int]:
    """``Class.method`` / ``outer.inner`` / ``name`` -> lines (``def`` to its last line) of
    every function in ``path``."""
    lengths: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    lengths[name] = (child.end_lineno or child.lineno) - child.lineno + 1
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(path.read_text()), "")
    return lengths


def test_no_function_over_the_line_budget() -> None:
    lengths = {f"{p.relative_to(PACKAGE.parent).as_posix()}::{name}": n
               for p in PACKAGE.rglob("*.py") for name, n in function_lengths(p).items()}
    long = {name: n for name, n in lengths.items() if n > MAX_FUNCTION_LINES}
    new = {k: v for k, v in long.items() if k not in LONG_FUNCTIONS}
    assert new == {}, f"functions over {MAX_FUNCTION_LINES} lines (split them into steps): {new}"
    stale = sorted(LONG_FUNCTIONS - set(long))
    assert stale == [], (f"{stale} no longer exist or are {MAX_FUNCTION_LINES} lines or fewer: "
                         "take them off LONG_FUNCTIONS")


def test_function_lengths_are_measured_from_def_to_last_line(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("@decorator\ndef f():\n    def g():\n        pass\n    return g\n\n\n"
                      "class C:\n    async def m(self):\n        pass\n")
    assert function_lengths(module) == {"f": 4, "f.g": 2, "C.m": 2}


def test_compile_side_never_imports_the_runtime_side() -> None:
    modules = _modules()
    bad = {name: sorted(m for m in _imports(path, modules)
                        if m.startswith(RUNTIME_SIDE) and m not in PURE)
           for name, path in modules.items() if name.startswith(COMPILE_SIDE)}
    assert {k: v for k, v in bad.items() if v} == {}


def _folder(module: str) -> str:
    """The top-level room of a module: ``runner.<folder>`` or the top-level module itself."""
    return ".".join(module.split(".")[:2])


def test_no_two_folders_import_each_other() -> None:
    """Folders import one way (e.g. build -> lint -> compile; ops and runtime -> checkpoint and
    sinks): a pair importing each other means a concept without one owner."""
    modules = _modules()
    edges: set[tuple[str, str]] = set()
    for name, path in modules.items():
        for m in _imports(path, modules):
            if _folder(m) != _folder(name):
                edges.add((_folder(name), _folder(m)))
    both = sorted({tuple(sorted(e)) for e in edges if (e[1], e[0]) in edges})
    assert both == [], f"folders importing each other: {both}"


#: runner/lint's rooms, from the bottom up: each imports only rooms below it (``linter``, ``guard``
#: and the package's ``__init__`` sit above them all). Reading SQL as Spark does, Spark's types,
#: name resolution, what a rule reads of a model, the rules.
LINT_ROOMS = ("sql", "spark_types", "resolution", "reading", "checks")


def test_lint_rooms_import_downward() -> None:
    """runner/lint's rooms import one way (LINT_ROOMS), so each can be read without the ones
    above it: the rules read a model only through ``reading``, and nothing below the rules knows
    one."""
    modules = _modules()
    rank = {room: i for i, room in enumerate(LINT_ROOMS)}

    def room(module: str) -> str | None:
        parts = module.split(".")
        return parts[2] if len(parts) > 2 and parts[:2] == ["runner", "lint"] else None

    placed = {m for m in modules if m.startswith("runner.lint.")
              and room(m) not in rank and m not in ("runner.lint.linter", "runner.lint.guard")}
    assert placed == set(), f"runner/lint modules outside its rooms: {sorted(placed)}"
    upward = sorted(f"{name} -> {m}" for name, path in modules.items() if room(name) in rank
                    for m in _imports(path, modules) if m.startswith("runner.lint")
                    and (room(m) not in rank or rank[room(m)] > rank[room(name)]))  # type: ignore[index]
    assert upward == [], f"runner/lint rooms importing upward: {upward}"


def imported_roots(path: Path) -> set[str]:
    """Top-level packages ``path`` imports, at any depth of the file (lazy imports count)."""
    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_only_sinks_know_delta() -> None:
    """delta-rs is imported, and a table's ``_delta_log`` named, only under runner/sinks/:
    everything else asks the sinks (``runner.sinks.tables``, ``runner.sinks.inspect``)."""
    sinks = PACKAGE / "sinks"
    outside = [p for p in PACKAGE.rglob("*.py") if sinks not in p.parents]
    importers = sorted(str(p.relative_to(PACKAGE)) for p in outside
                       if "deltalake" in imported_roots(p))
    probers = sorted(str(p.relative_to(PACKAGE)) for p in outside
                     if "_delta_log" in p.read_text())
    assert (importers, probers) == ([], [])


def test_only_the_checkpoint_package_reads_sparks_logs() -> None:
    """Spark's ``commits/``, ``offsets/`` and ``sources/`` logs are parsed in one module."""
    owner = PACKAGE / "checkpoint" / "spark_logs.py"
    readers = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                     if p != owner and any(f'"{log}"' in p.read_text()
                                           for log in ("commits", "offsets")))
    assert readers == []


def test_only_the_storage_layer_writes_the_runners_files() -> None:
    """Atomic replace, create-if-absent and object-store calls live in runner/storage/ (the
    checkpoint's flock aside), so every location works on local disk and object storage."""
    storage = PACKAGE / "storage"
    lock = PACKAGE / "checkpoint" / "lock.py"
    outside = [p for p in PACKAGE.rglob("*.py") if storage not in p.parents and p != lock]
    writers = sorted(str(p.relative_to(PACKAGE)) for p in outside
                     if any(call in p.read_text() for call in ("os.replace(", "os.link(",
                                                                "os.rename(", "fcntl.")))
    importers = sorted(str(p.relative_to(PACKAGE)) for p in outside
                       if "obstore" in imported_roots(p))
    assert (writers, importers) == ([], [])
