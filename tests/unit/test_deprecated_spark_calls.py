"""The runner's own Spark calls use no deprecated signature: Spark logs a warning for each
into the project's logs/spark.log (two-argument TRIM/LTRIM/RTRIM: "Two-parameter TRIM/LTRIM/
RTRIM function signatures are deprecated"). tests/spark/test_stop.py checks a real run's log."""

from __future__ import annotations

import ast
from pathlib import Path

RUNNER = Path(__file__).resolve().parents[2] / "runner"


def test_no_two_argument_trim_in_the_runner() -> None:
    found = []
    for path in sorted(RUNNER.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("trim", "ltrim", "rtrim") and len(node.args) > 1):
                found.append(f"{path.relative_to(RUNNER.parent)}:{node.lineno}")
    assert found == [], "use F.btrim(col, chars) (or SQL TRIM(... FROM ...)): " + ", ".join(found)
