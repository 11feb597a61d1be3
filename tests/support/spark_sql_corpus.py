"""The compile corpus from Spark's SQL tests: its models joined with Spark's recorded verdicts,
compile's verdicts, and how the two agree.

The models are built at set-up from Spark's SQL test jar (``scripts/spark_sql_corpus.py``:
``.jars/spark-tests/models.jsonl``, never committed); ``tests/corpus/spark_sql/verdicts.jsonl``
holds, per model, its name, origin, the SHA of its text and the verdict of this project's own
Spark session (:mod:`tests.support.spark_verdicts` records it). A SHA that differs means the jar
(or the corpus builder) changed: the verdicts must be recorded again.

Compile's verdict is the linter's (:func:`runner.lint.lint_models`, the library entry point
``runner compile`` uses), over the repository's own project (its event schema): a model is
refused when lint reports an error.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
MODELS = REPO / ".jars" / "spark-tests" / "models.jsonl"
CORPUS = REPO / "tests" / "corpus" / "spark_sql"
VERDICTS = CORPUS / "verdicts.jsonl"
BASELINE = CORPUS / "baseline.json"
RESULT = CORPUS / "result.json"
ACCEPTED = "accepted"
RECORD = "python -m tests.support.spark_verdicts --record"


class CorpusError(Exception):
    """The corpus cannot be read or does not match its recorded verdicts."""


@dataclass(frozen=True)
class CorpusModel:
    """One model of the corpus, with Spark's recorded verdict.

    Attributes:
        name: stable name (golden file and query index, or the edge case's).
        origin: ``{"file", "query"}`` it came from.
        sha: SHA-256 (16 hex digits) of ``sql``.
        sql: the model's text (reads ``parsed_events``).
        golden: the golden file's outcome (a hint: ``accepted`` or an error class).
        verdict: Spark's recorded verdict: ``accepted`` or the error class it refused with
            (None while not recorded).
    """

    name: str
    origin: Mapping[str, Any]
    sha: str
    sql: str
    golden: str
    verdict: str | None = None


def load_models(path: Path = MODELS) -> list[CorpusModel]:
    """The models set-up built (no verdicts).

    Raises:
        CorpusError: models.jsonl is missing.
    """
    if not path.is_file():
        raise CorpusError(f"{path.relative_to(REPO)} is missing: run scripts/setup.sh (it "
                          "fetches Spark's SQL test jar and builds the corpus from it)")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return [CorpusModel(r["name"], r["origin"], r["sha"], r["sql"], r["golden"]) for r in rows]


def load_verdicts(path: Path = VERDICTS) -> dict[str, dict[str, Any]]:
    """The recorded verdicts by model name."""
    if not path.is_file():
        return {}
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return {r["name"]: r for r in rows}


def load_corpus(models: Path = MODELS, verdicts: Path = VERDICTS) -> list[CorpusModel]:
    """The models joined with their recorded verdicts.

    Raises:
        CorpusError: models.jsonl is missing, or it and the verdicts differ (a model's text
            changed, a model has no verdict, a verdict has no model): record them again.
    """
    built = load_models(models)
    recorded = load_verdicts(verdicts)
    changed = [m.name for m in built if m.name in recorded and recorded[m.name]["sha"] != m.sha]
    missing = [m.name for m in built if m.name not in recorded]
    gone = sorted(set(recorded) - {m.name for m in built})
    if changed or missing or gone:
        parts = [f"{len(xs)} {what} (first: {xs[0]})" for xs, what in (
            (changed, "models whose text changed"), (missing, "models without a verdict"),
            (gone, "verdicts without a model")) if xs]
        raise CorpusError(f"the corpus built from Spark's SQL test jar ({models.name}) does not "
                          f"match {verdicts.relative_to(REPO)}: {'; '.join(parts)}. The jar or "
                          f"the corpus builder changed: record Spark's verdicts again with "
                          f"`{RECORD}` (needs Java) and commit them")
    return [CorpusModel(m.name, m.origin, m.sha, m.sql, m.golden,
                        recorded[m.name]["verdict"]) for m in built]


def compile_verdicts(models: Sequence[CorpusModel], *, workers: int | None = None
                     ) -> dict[str, tuple[str, ...]]:
    """Compile's verdict per model: the rules that reported an error (empty: accepted).

    The models are linted as ``runner compile`` lints a project's models (one lint pass over
    the repository's project, no process per model), split over ``workers`` processes
    (default: up to two, the machine's cores): the models are independent (no refs).
    """
    workers = workers or min(2, os.cpu_count() or 1)
    if workers == 1:
        return _lint(models)
    chunks = [list(models[i::workers]) for i in range(workers)]
    out: dict[str, tuple[str, ...]] = {}
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        for part in pool.map(_lint, chunks):
            out.update(part)
    return {m.name: out[m.name] for m in models}


def _lint(models: Sequence[CorpusModel]) -> dict[str, tuple[str, ...]]:
    from runner.compile.render import RenderedModel
    from runner.lint import lint_models
    from runner.project.config import ModelConfig
    from runner.project.loader import load_project

    project = load_project(REPO)
    rendered = [RenderedModel(m.name, f"models/{m.name}.sql", m.sql, ModelConfig(), ())
                for m in models]
    result = lint_models(project, rendered, deadline=time.monotonic() + 600)
    errors: dict[str, list[str]] = defaultdict(list)
    for v in result.violations:
        if v.severity == "error":
            errors[v.path].append(v.rule)
    return {m.name: tuple(sorted(set(errors.get(f"models/{m.name}.sql", ()))))
            for m in models}


def measure(models: Sequence[CorpusModel], compiled: Mapping[str, tuple[str, ...]]
            ) -> dict[str, Any]:
    """How compile's verdicts agree with Spark's: the result file's content.

    A false refusal: compile refuses a model Spark accepts (listed by compile's rule, each
    model named); a false pass: compile accepts a model Spark refuses (counted by Spark's
    error class).
    """
    refused = [m for m in models if m.verdict != ACCEPTED]
    false_refusals: dict[str, list[str]] = defaultdict(list)
    false_passes: Counter[str] = Counter()
    agree = 0
    for m in models:
        rules = compiled[m.name]
        if (m.verdict == ACCEPTED) == (not rules):
            agree += 1
        elif rules:
            for rule in rules:
                false_refusals[rule].append(m.name)
        else:
            false_passes[str(m.verdict)] += 1
    return {
        "corpus": {"models": len(models), "refused": len(refused),
                   "error_classes": len({m.verdict for m in refused})},
        "compile": {
            "agree": agree,
            "agreement_percent": round(100 * agree / len(models), 2) if models else 0.0,
            "false_refusals": {rule: sorted(names)
                               for rule, names in sorted(false_refusals.items())},
            "false_passes": dict(false_passes),  # by class (the file's keys are sorted)
        },
    }


def regressions(result: Mapping[str, Any], baseline: Mapping[str, Any]) -> list[str]:
    """What got worse than ``baseline``: agreement below it, or a false refusal it does not
    list (each named)."""
    problems = []
    floor = float(baseline["agreement_percent"])
    now = float(result["compile"]["agreement_percent"])
    if now < floor:
        problems.append(f"agreement {now}% is below the baseline's {floor}%")
    known = set(baseline.get("false_refusals", ()))
    for rule, names in result["compile"]["false_refusals"].items():
        problems += [f"new false refusal: compile's {rule} refuses {name}, which Spark accepts"
                     for name in names if name not in known]
    return problems


def baseline_of(result: Mapping[str, Any]) -> dict[str, Any]:
    """The baseline ``result`` sets: its agreement and its known false refusals."""
    names: Iterable[str] = (n for ns in result["compile"]["false_refusals"].values() for n in ns)
    return {"agreement_percent": result["compile"]["agreement_percent"],
            "false_refusals": sorted(set(names))}


def write_json(path: Path, doc: Any) -> None:
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
