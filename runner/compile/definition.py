"""What a model's table is computed by: its definition, and what changed between two.

A model's rows depend on more than its file: the vars its SQL read (``--vars`` overrides
project.yml's), the macros it called, the config it set. A table written by two definitions
(batches 0-4 with ``vat_rate`` 0.1, batch 5 with 0.2) is wrong without an error, so the stream
records each model's definition with the batches it wrote (:mod:`runner.checkpoint.definitions`)
and compares at every start (:mod:`runner.runtime.start.definitions`).

The **fingerprint** decides: the SHA-256 of the compiled SQL's tokens without comments or
layout (an edited comment or indentation is no new definition) and of the config
keys that decide rows (:data:`ROW_KEYS`: not ``tags``, ``enabled``, catalog names...). The
parts say *what* changed, for the message: the model file's text, each var read (its value as
JSON), each macro file the model calls (directly or through another macro).

>>> a = Definition("f1", "s", (("vat_rate", "0.1"),), ())
>>> b = Definition("f2", "s", (("vat_rate", "0.2"),), ())
>>> changes(a.to_dict(), b.to_dict(), path="models/m.sql")
['var vat_rate: 0.1 -> 0.2']
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import jinja2
from jinja2 import meta

__all__ = ["ROW_KEYS", "Definition", "changes", "definition_of"]

#: The config keys that decide a table's rows (the others name, tag, schedule or lay it out).
ROW_KEYS = ("materialized", "unique_key", "merge_update", "merge_condition", "expectations",
            "sequence_by", "apply_as_deletes", "stored_as_scd_type", "track_history_column_list")


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Definition:
    """One model's definition as it runs (see the module's docstring)."""

    fingerprint: str
    sql: str  # SHA-256 of the model file's text
    vars: tuple[tuple[str, str], ...]  # (name, value as JSON), each var the render read
    macros: tuple[tuple[str, str], ...]  # (macro file, SHA-256 of its text) it calls

    def to_dict(self) -> dict[str, Any]:
        return {"fingerprint": self.fingerprint, "sql": self.sql, "vars": dict(self.vars),
                "macros": dict(self.macros)}


def definition_of(*, compiled: str, config: Mapping[str, Any], text: str,
                  vars_read: Mapping[str, Any], macro_files: Mapping[str, str],
                  macro_index: Mapping[str, tuple[str, int, str]]) -> Definition:
    """The definition of one rendered model.

    Args:
        compiled: its SQL after Jinja.
        config: its config as JSON (``ModelConfig.model_dump(mode="json")``).
        text: its file's text.
        vars_read: var name -> value, every ``var()`` its render read.
        macro_files: macro file -> its text (every macro file of the project).
        macro_index: macro name -> (file, line, body), as the renderer indexes them.
    """
    rows = {k: config.get(k) for k in ROW_KEYS}
    body = json.dumps({"sql": _canonical(compiled), "config": rows}, sort_keys=True, default=str)
    called = _macros_called(text, macro_index)
    return Definition(
        fingerprint=_sha(body), sql=_sha(text),
        vars=tuple(sorted((k, json.dumps(v, sort_keys=True, default=str))
                          for k, v in vars_read.items())),
        macros=tuple(sorted((f, _sha(macro_files.get(f, ""))) for f in called)))


def _canonical(sql: str) -> str:
    """``sql``'s tokens (sqlglot's Spark tokenizer) with their kinds, one space apart:
    comments and layout are gone, the rest as written (``'x'`` and ``x`` stay apart). A
    tokenizer pass, not a parse: compile's budget is spent on the lint's parse already. As
    written when it does not tokenize."""
    from sqlglot.dialects.spark import Spark
    from sqlglot.errors import SqlglotError

    try:
        return " ".join(f"{t.token_type.name}:{t.text}" for t in Spark().tokenize(sql))
    except SqlglotError:
        return sql


def _names(text: str) -> set[str]:
    try:
        return set(meta.find_undeclared_variables(jinja2.Environment().parse(text)))
    except jinja2.TemplateError:  # a template that renders is one that parses; a body
        return set()              # cut from its file may not be: take it as calling none


def _macros_called(text: str, index: Mapping[str, tuple[str, int, str]]) -> set[str]:
    """The files of the macros ``text`` calls, and of those they call, transitively."""
    files: set[str] = set()
    seen: set[str] = set()
    todo = [n for n in _names(text) if n in index]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        file, _, body = index[name]
        files.add(file)
        todo.extend(n for n in _names(body) if n in index and n not in seen)
    return files


def changes(old: Mapping[str, Any], new: Mapping[str, Any], *, path: str) -> list[str]:
    """What differs between two definitions (:meth:`Definition.to_dict`, as recorded), in
    words; empty when their fingerprints agree."""
    if old.get("fingerprint") == new.get("fingerprint"):
        return []
    found: list[str] = []
    before, after = dict(old.get("vars") or {}), dict(new.get("vars") or {})
    for name in sorted(before.keys() | after.keys()):
        if before.get(name) != after.get(name):
            found.append(f"var {name}: {before.get(name, '(not read)')} -> "
                         f"{after.get(name, '(not read)')}")
    was, now = dict(old.get("macros") or {}), dict(new.get("macros") or {})
    found += [f"macro file {f}" for f in _changed(was, now)]
    if old.get("sql") != new.get("sql"):
        found.append(f"its SQL ({path})")
    return found or ["its compiled SQL (an environment value, a ref's or a lookup's name)"]


def _changed(before: Mapping[str, str], after: Mapping[str, str]) -> Iterable[str]:
    return sorted(f for f in before.keys() | after.keys() if before.get(f) != after.get(f))
