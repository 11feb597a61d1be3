"""Spark's parser's verdicts kept on disk (runner/lint/sql/spark_parser/verdict_cache.py): a second
process reuses them without loading the grammar; a damaged entry or an unwritable folder only
costs a parse; an empty RUNNER_CACHE_DIR keeps nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner.lint.sql import spark_parser
from runner.lint.sql.spark_parser import verdict_cache

REPO = Path(__file__).resolve().parents[2]
BAD = "SELECT a, , b FROM t"
GOOD = "SELECT a, b FROM t"

_PROBE = """
import sys
from runner.lint.sql.spark_parser import spark_syntax_error
bad = spark_syntax_error(sys.argv[1])
good = spark_syntax_error(sys.argv[2])
print(bad.message if bad else None, bad.line if bad else None, bad.column if bad else None)
print(good)
print("runner.lint.sql.spark_parser.recognizers" in sys.modules)
"""


def _probe(cache: str, **more: str) -> list[str]:
    env = {**os.environ, "RUNNER_CACHE_DIR": cache, "PYTHONPATH": str(REPO), **more}
    done = subprocess.run([sys.executable, "-c", _PROBE, BAD, GOOD], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=True)
    return done.stdout.splitlines()


def test_a_second_process_reuses_the_verdicts_without_the_grammar(tmp_path: Path) -> None:
    first = _probe(str(tmp_path))
    second = _probe(str(tmp_path))
    assert first[:2] == second[:2]
    assert first[0] == "[PARSE_SYNTAX_ERROR] Syntax error at or near ',' 1 11"
    assert first[1] == "None"
    assert (first[2], second[2]) == ("True", "False")  # the grammar loaded once
    assert len(list(tmp_path.rglob("*.json"))) == 2


def test_an_empty_cache_dir_setting_keeps_nothing(tmp_path: Path) -> None:
    lines = _probe("", XDG_CACHE_HOME=str(tmp_path), HOME=str(tmp_path))
    assert lines[2] == "True"
    assert list(tmp_path.iterdir()) == []  # not under $XDG_CACHE_HOME/runner either
    assert _probe("", XDG_CACHE_HOME=str(tmp_path))[2] == "True"  # parsed again: none kept


@pytest.fixture
def cache_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("RUNNER_CACHE_DIR", str(tmp_path))
    verdict_cache._folder.cache_clear()
    spark_parser._VERDICTS.clear()
    yield tmp_path
    verdict_cache._folder.cache_clear()
    spark_parser._VERDICTS.clear()


def test_a_damaged_entry_is_parsed_again(cache_in: Path) -> None:
    spark_parser.spark_syntax_error(BAD)
    (entry,) = cache_in.rglob("*.json")
    entry.write_text('["cut short')
    spark_parser._VERDICTS.clear()
    again = spark_parser.spark_syntax_error(BAD)
    assert again is not None and again.message.startswith("[PARSE_SYNTAX_ERROR]")
    assert entry.read_text().startswith('["[PARSE_SYNTAX_ERROR]')  # written again, whole


def test_a_folder_that_cannot_be_written_is_no_cache(cache_in: Path) -> None:
    blocker = cache_in / "spark-parser"
    blocker.write_text("a file where the folder would be")
    assert spark_parser.spark_syntax_error(GOOD) is None
    assert spark_parser.spark_syntax_error(BAD) is not None
    assert verdict_cache.load(b"\x00" * 16) == (False, None)


def test_a_changed_check_does_not_read_an_older_checks_verdicts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The folder is named by the grammar and the package's code: a post-parse check added to
    recognizers.py must not be hidden by verdicts cached before it existed."""
    import shutil
    from importlib import resources

    copy = tmp_path / "spark_parser"
    shutil.copytree(Path(str(resources.files(spark_parser))), copy,
                    ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(resources, "files", lambda _package: copy)
    before = verdict_cache._code_digest()
    assert verdict_cache._code_digest() == before  # the same code: the same folder
    recognizers = copy / "recognizers.py"
    recognizers.write_text(recognizers.read_text(encoding="utf-8") + "\n# a new check\n",
                           encoding="utf-8")
    assert verdict_cache._code_digest() != before
