"""Regenerate ``runner/lint/sql/spark_parser/spark_grammar.json``: Spark's SQL grammar, for Python.

Spark's parser is ANTLR's: ``SqlBaseLexer.g4`` and ``SqlBaseParser.g4`` compiled into two ATNs
(the state machines the ANTLR runtime runs), with a few Java predicates and actions. Spark's
spark-sql-api sources jar (the pom ``jvm/spark-grammar/pom.xml``, pinned to pyspark's version)
holds exactly what its build compiled: ``SqlBaseLexer.interp`` and ``SqlBaseParser.interp``
(the serialized ATNs, token and rule names) and the generated ``SqlBaseLexer.java`` and
``SqlBaseParser.java`` (the predicates and actions, numbered as the ATNs call them). The jar
holds no ``.g4`` file, so the ATN is taken as ANTLR compiled it for Spark, not recompiled: the
Python runtime (``antlr4-python3-runtime``) runs the same ATN as Spark's JVM.

What this writes (JSON): the two ATNs, the names, and each predicate's and action's Java text
by index. ``runner/lint/sql/spark_parser/recognizers.py`` maps each Java text to its Python at
Spark's defaults; a predicate or action it does not know fails the generation (a new Spark
version's new flag is then mapped by hand, not guessed).

Generation time only (Maven and a JVM for Maven): the output is committed, so neither set-up
nor CI needs either. No ANTLR tool runs: there is no ``.g4`` to give it, and the ATN it would
produce is the one in the jar.

Usage::

    python -m scripts.spark_grammar.generate          # rewrite the grammar file
    python -m scripts.spark_grammar.generate --check  # regenerate into a temp dir, exit 1 if
                                                      # the committed file differs
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
POM = ROOT / "jvm" / "spark-grammar" / "pom.xml"
TARGET = ROOT / "runner" / "lint" / "sql" / "spark_parser" / "spark_grammar.json"
_PARSER_DIR = "org/apache/spark/sql/catalyst/parser/"


class GenerateError(Exception):
    """The grammar could not be fetched or read; the message says why."""


def fetch_sources_jar(into: Path) -> Path:
    """Copy spark-sql-api's sources jar (the pom's one dependency) into ``into``."""
    cmd = ["mvn", "-B", "-q", "-f", str(POM), "dependency:copy-dependencies",
           f"-DoutputDirectory={into}"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    jars = sorted(into.glob("spark-sql-api_*-sources.jar"))
    if done.returncode != 0 or not jars:
        raise GenerateError("Maven could not copy spark-sql-api's sources jar:\n"
                            + (done.stdout + done.stderr)[-2000:])
    return jars[0]


def read_interp(text: str) -> dict[str, list[str]]:
    """The sections of an ANTLR ``.interp`` file (``token literal names``, ``rule names``,
    ``atn``...) as their lines."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.split("\n"):
        if line.endswith(":") and not line.startswith("'"):
            current = sections.setdefault(line[:-1], [])
        elif current is not None and line:
            current.append(line)
    return sections


def _names(lines: list[str]) -> list[str | None]:
    return [None if n == "null" else n for n in lines]


def switch_cases(java: str, method: str) -> dict[str, str]:
    """index -> Java text of each case of the per-rule switches that ``method`` (``sempred``
    or ``action``) dispatches to: ``case 3: return isValidDecimal();`` gives ``{3:
    'isValidDecimal()'}``."""
    found: dict[int, str] = {}
    pattern = (r"private (?:boolean|void) \w+_" + method +
               r"\(\w+ _localctx, int \w+\) \{(.*?)\n\t\}")
    for body in re.findall(pattern, java, flags=re.S):
        for index, text in re.findall(r"case (\d+):\s*(.*?);\s*(?:break;|\n)", body, flags=re.S):
            found[int(index)] = re.sub(r"^return ", "", text.strip())
    return {str(k): found[k] for k in sorted(found)}


def pipe_start_tokens(java: str) -> list[str]:
    """The token names ``isOperatorPipeStart()`` accepts after ``|`` (its ``la == NAME``)."""
    body = re.search(r"public boolean isOperatorPipeStart\(\) \{(.*?)\n\t  \}", java, re.S)
    if body is None:
        raise GenerateError("SqlBaseParser.java has no isOperatorPipeStart()")
    return re.findall(r"la == (\w+)", body.group(1))


def _ints(atn: list[str]) -> str:
    """An ATN's numbers as one string, space-separated."""
    return " ".join(x.strip() for x in atn[0].strip("[]").split(","))


def render(jar: Path) -> str:
    """The grammar file's text (JSON), from the sources jar."""
    with zipfile.ZipFile(jar) as z:
        def read(name: str) -> str:
            try:
                return z.read(_PARSER_DIR + name).decode("utf-8")
            except KeyError as e:
                raise GenerateError(f"{jar.name} has no {_PARSER_DIR}{name}") from e
        lexer, parser = read("SqlBaseLexer.interp"), read("SqlBaseParser.interp")
        lexer_java, parser_java = read("SqlBaseLexer.java"), read("SqlBaseParser.java")
    tool = re.search(r"by ANTLR ([\d.]+)", parser_java)
    lex, par = read_interp(lexer), read_interp(parser)
    if _names(lex["token symbolic names"]) != _names(par["token symbolic names"]):
        raise GenerateError("the lexer's and the parser's token vocabularies differ")
    grammar = {
        "generated_by": "python -m scripts.spark_grammar.generate: do not edit",
        "source": jar.name,
        "antlr_version": tool.group(1) if tool else "unknown",
        "lexer_rule_names": lex["rule names"],
        "channel_names": lex["channel names"],
        "mode_names": lex["mode names"],
        "parser_rule_names": par["rule names"],
        "literal_names": _names(par["token literal names"]),
        "symbolic_names": _names(par["token symbolic names"]),
        "lexer_predicates": switch_cases(lexer_java, "sempred"),
        "lexer_actions": switch_cases(lexer_java, "action"),
        "parser_predicates": switch_cases(parser_java, "sempred"),
        "pipe_start_tokens": pipe_start_tokens(parser_java),
        "lexer_atn": _ints(lex["atn"]),
        "parser_atn": _ints(par["atn"]),
    }
    return json.dumps(grammar, indent=1) + "\n"


def _verify(path: Path) -> None:
    """Check the written grammar file with the recognizers: every predicate and action is
    mapped, and both ATNs deserialize with the installed runtime."""
    check = ("import json, pathlib\n"
             "from runner.lint.sql.spark_parser import recognizers\n"
             f"recognizers.check_grammar(json.loads(pathlib.Path({str(path)!r}).read_text()))\n")
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True,
                          cwd=ROOT, check=False)
    if done.returncode != 0:
        raise GenerateError("the generated grammar does not load:\n" + done.stderr[-2000:])


def generate(out: Path) -> None:
    """Fetch the jar, write the grammar file to ``out`` and check it."""
    with tempfile.TemporaryDirectory() as tmp:
        jar = fetch_sources_jar(Path(tmp))
        out.write_text(render(jar), encoding="utf-8")
    _verify(out)


def main(argv: list[str] | None = None) -> int:
    args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args.add_argument("--check", action="store_true",
                      help="regenerate into a temp dir; fail if the committed file differs")
    opts = args.parse_args(argv)
    started = time.monotonic()
    try:
        if opts.check:
            with tempfile.TemporaryDirectory() as tmp:
                fresh = Path(tmp) / "spark_grammar.json"
                generate(fresh)
                if fresh.read_bytes() != TARGET.read_bytes():
                    print(f"{TARGET.relative_to(ROOT)} differs from what the grammar of "
                          f"{POM.relative_to(ROOT)} generates: run python -m "
                          "scripts.spark_grammar.generate", file=sys.stderr)
                    return 1
        else:
            generate(TARGET)
    except GenerateError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    size = TARGET.stat().st_size
    print(f"{'checked' if opts.check else 'wrote'} {TARGET.relative_to(ROOT)} ({size:,} bytes) "
          f"in {time.monotonic() - started:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
