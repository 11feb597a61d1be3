"""dbt's top-level ``unit_tests:`` (dbt 1.8+), in any ``models/**/*.yml``, read as the
project's own unit tests (:class:`~runner.model_tests.spec.UnitTest`), which run through the
real batch path (:mod:`.unit`)::

    unit_tests:
      - name: revenue_adds_vat
        model: product_revenue
        given:
          - input: parsed_events          # the batch's events (the stream's JSON objects)
            rows: [{eventId: e1, ...}]
          - input: ref('vat_rates')       # a seed, a source('crm', 'customers') table, or an
            rows: [{country: IE, rate: 0.23}]   # upstream model: its rows in the batch
          - input: this                   # the model's table before the batch (merge models)
            format: csv
            rows: |
              product_id,revenue
              p1,10
        expect:
          rows: [{product_id: p1, revenue: 22.3}]

``format:`` is ``dict`` (default) or ``csv``; dbt's ``sql`` format and ``overrides:`` are
refused with what to write instead (a test's rows are data, never SQL). An entry belongs to the
model its ``model:`` names; its messages name this file and the entry's line.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from runner.errors import did_you_mean
from runner.model_tests.unit_spec import SpecError, UnitTest
from runner.model_tests.yml_explain import explain
from runner.model_tests.yml_lines import locate

__all__ = ["dbt_unit_tests", "is_dbt_format"]

_REF = re.compile(r"""^\s*ref\(\s*['"](\w+)['"]\s*\)\s*$""")
_SOURCE = re.compile(r"""^\s*source\(\s*['"](\w+)['"]\s*,\s*['"](\w+)['"]\s*\)\s*$""")
_ENTRY = frozenset({"name", "model", "description", "given", "expect", "config", "overrides",
                    "versions"})


def is_dbt_format(raw: Any) -> bool:
    """Whether a top-level ``unit_tests:`` list is dbt's (its entries name their ``model:``)."""
    return isinstance(raw, list) and any(isinstance(e, Mapping) and "model" in e for e in raw)


def _rows(given: Mapping[str, Any], where: str) -> list[Any]:
    fmt = given.get("format", "dict")
    rows = given.get("rows", [])
    if fmt == "csv":
        if not isinstance(rows, str):
            raise ValueError(f"{where}: format: csv takes rows: as one CSV text (a header line "
                             "first)")
        reader = csv.DictReader(io.StringIO(rows.strip()))
        return [{k.strip(): (None if v is None or v.strip() == "" else v.strip())
                 for k, v in r.items()} for r in reader]
    if fmt == "sql":
        raise ValueError(f"{where}: format: sql is dbt's; a test's rows are data here, never "
                         "SQL: write them as dict rows or csv")
    if fmt != "dict":
        raise ValueError(f"{where}: format is dict or csv (got {fmt!r})")
    if rows is None:
        return []
    if not isinstance(rows, list):
        raise ValueError(f"{where}: rows: is a list of rows (mappings)")
    return rows


def _convert(entry: Mapping[str, Any], *, models: Mapping[str, str], seeds: Mapping[str, str],
             sources: Mapping[str, str]) -> tuple[str, dict[str, Any]]:
    """(model name, the project's unit test mapping) of one dbt entry."""
    unknown = [k for k in entry if k not in _ENTRY]
    if unknown:
        raise ValueError(f"unknown key '{unknown[0]}'" + did_you_mean(str(unknown[0]), _ENTRY))
    for key in ("overrides", "versions"):
        if key in entry:
            raise ValueError(f"{key}: is dbt's and not supported: give vars in project.yml "
                             "(or --vars) and test each model version as its own model")
    name = entry.get("model")
    if not isinstance(name, str) or name.lower() not in models:
        raise ValueError(f"model: no model '{name}'" + did_you_mean(str(name), models.values()))
    model = models[name.lower()]
    given: dict[str, Any] = {"events": [], "prior_rows": [], "sources": {}, "seeds": {},
                             "models": {}}
    for i, item in enumerate(entry.get("given") or []):
        where = f"given[{i}]"
        if not isinstance(item, Mapping) or "input" not in item:
            raise ValueError(f"{where}: an input is a mapping with input: and rows:")
        extra = [k for k in item if k not in ("input", "rows", "format")]
        if extra:
            raise ValueError(f"{where}: unknown key '{extra[0]}' (input, rows, format)")
        text, rows = str(item["input"]).strip(), _rows(item, where)
        ref, src = _REF.match(text), _SOURCE.match(text)
        if text in ("parsed_events", "ref('parsed_events')", 'ref("parsed_events")'):
            given["events"] += rows
        elif text == "this":
            given["prior_rows"] += rows
        elif src:
            key = f"{src.group(1)}.{src.group(2)}"
            if key.lower() not in sources:
                raise ValueError(f"{where}: unknown source table {key}"
                                 + did_you_mean(key, sources.values()))
            given["sources"][sources[key.lower()]] = rows
        elif ref and ref.group(1).lower() in seeds:
            given["seeds"][seeds[ref.group(1).lower()]] = rows
        elif ref and ref.group(1).lower() in models:
            given["models"][models[ref.group(1).lower()]] = rows
        else:
            raise ValueError(f"{where}: input is parsed_events, this, ref('<model or seed>') "
                             f"or source('<source>', '<table>') (got {text!r})")
    expect = entry.get("expect")
    if not isinstance(expect, Mapping):
        raise ValueError("expect: a mapping with rows:")
    extra = [k for k in expect if k not in ("rows", "format")]
    if extra:
        raise ValueError(f"expect: unknown key '{extra[0]}' (rows, format)")
    case = {"name": entry.get("name"), "description": entry.get("description"),
            "given": given, "expect": {"rows": _rows(expect, "expect")}}
    return model, case


def dbt_unit_tests(raw: Sequence[Any], *, text: str, path: str, models: Mapping[str, str],
                   seeds: Mapping[str, str], sources: Mapping[str, str]
                   ) -> tuple[list[tuple[str, UnitTest]], list[SpecError]]:
    """(model, unit test) of each entry of dbt's top-level ``unit_tests:``, and the problems.

    Args:
        models, seeds, sources: lower-cased name -> name (sources: ``<source>.<table>``).
    """
    found: list[tuple[str, UnitTest]] = []
    problems: list[SpecError] = []
    for i, entry in enumerate(raw):
        loc = ("unit_tests", i)
        line = locate(text, loc)[1]
        if not isinstance(entry, Mapping):
            problems.append(SpecError(f"unit_tests[{i}]: a unit test is a mapping (name, "
                                      "model, given, expect)", path=path, line=line))
            continue
        config = entry.get("config") or {}
        if isinstance(config, Mapping) and config.get("enabled") is False:
            continue
        try:
            model, case = _convert(entry, models=models, seeds=seeds, sources=sources)
        except ValueError as e:
            problems.append(SpecError(f"unit_tests[{i}]: {e}", path=path, line=line))
            continue
        try:
            test = UnitTest.model_validate(case)
        except ValidationError as e:
            for err in e.errors():
                at, message = explain(err, text=text, prefix=loc, root=(), top=UnitTest)
                problems.append(SpecError(message, path=path, line=at or line))
            continue
        found.append((model, test.declared_at(f"{path}:{line}" if line else path)))
    return found, problems
