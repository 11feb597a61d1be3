"""The names a ``models/*.yml`` gives, checked against the models: the columns a model
outputs (lint's inferred columns), keys, the model and column of a ``relationships`` test.
``runner compile`` runs it on every file (:mod:`runner.build`), ``runner test`` again on its
plan: one implementation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from runner.errors import ConfigError, did_you_mean
from runner.model_tests.generic import TestMacro, builtin_macros, call_arguments
from runner.model_tests.spec import DataTest, ModelSpec, SpecError, Unique

__all__ = ["check_specs"]


def check_specs(specs: Mapping[str, ModelSpec], *, outputs: Mapping[str, Sequence[str]],
                unique_keys: Mapping[str, Sequence[str]],
                macros: Mapping[str, TestMacro] | None = None) -> list[SpecError]:
    """The names the files give against the models: columns a model outputs, keys, the
    model and column of a ``relationships`` test.

    Args:
        specs: by model name (:func:`read_specs`).
        outputs: every enabled model's output column names (empty: not known, then nothing
            is checked against them); a spec whose model is not here is not checked.
        unique_keys: the merge models' ``unique_key``.
        macros: the project's test macros (tests/generic/): the arguments of a SQL test are
            checked against its macro's parameters.
    """
    problems: list[SpecError] = []
    for name, spec in specs.items():
        if name in outputs:
            problems += _check_spec(spec, name, outputs, unique_keys.get(name, ()))
        problems += _check_calls(spec, unique_keys.get(name, ()), macros or {})
    return problems


def _check_calls(spec: ModelSpec, key: Sequence[str], macros: Mapping[str, TestMacro]
                 ) -> list[SpecError]:
    """Each SQL test's arguments against its macro's parameters (a generic test's, or the
    built-in's: ``where:`` makes any built-in SQL)."""
    builtins = builtin_macros()
    problems = []
    located: list[tuple[DataTest, tuple[str | int, ...]]] = [
        (t, ("data_tests", j)) for j, t in enumerate(spec.data_tests)]
    located += [(DataTest(t.kind, t.args, c.name), ("columns", i, "data_tests", j))
                for i, c in enumerate(spec.columns) for j, t in enumerate(c.data_tests)]
    for test, loc in located:
        if not test.sql or (test.kind == "unique" and test.column is None):
            continue
        macro = macros.get(test.kind) if test.generic else builtins.get(test.kind)
        if macro is None:
            continue
        try:
            call_arguments(test, macro, key)
        except ConfigError as e:
            problems.append(SpecError(f"{spec.key_of(*loc)}: {e.message}", path=spec.path,
                                      line=spec.line_of(*loc),
                                      hint=f"the test macro is {macro.path}:{macro.line}"
                                      if test.generic else None))
    return problems


def _check_spec(spec: ModelSpec, model: str, outputs: Mapping[str, Sequence[str]],
                unique_key: Sequence[str]) -> list[SpecError]:
    columns = list(outputs[model])
    problems = []

    def known(name: str, names: Sequence[str]) -> bool:
        return not names or name.lower() in {c.lower() for c in names}

    def fail(message: str, *loc: str | int) -> None:
        problems.append(SpecError(f"{spec.key_of(*loc)}: {message}", path=spec.path,
                                  line=spec.line_of(*loc)))

    for i, col in enumerate(spec.columns):
        if not known(col.name, columns):
            fail(f"model {model} has no output column '{col.name}'"
                 + did_you_mean(col.name, columns) + f"; it outputs: {', '.join(columns)}",
                 "columns", i)
        for j, test in enumerate(col.data_tests):
            at = ("columns", i, "data_tests", j)
            if test.kind == "unique" and isinstance(test.args, Unique) and test.args.columns:
                fail("a column's unique test takes no columns (declare a unique key under "
                     "the model's data_tests)", *at)
            if test.kind == "relationships":
                to, field = test.args.to, test.args.field
                parent = next((m for m in outputs if m.lower() == to.lower()), None)
                if parent is None:
                    fail(f"relationships to unknown model '{to}'" + did_you_mean(to, outputs),
                         *at)
                elif not known(field, outputs[parent]):
                    fail(f"model {parent} has no column '{field}'"
                         + did_you_mean(field, outputs[parent]), *at)
    for j, test in enumerate(spec.data_tests):
        if test.kind != "unique":
            for name in getattr(test.args, "combination_of_columns", ()):
                if not known(name, columns):
                    fail(f"model {model} has no output column '{name}'"
                         + did_you_mean(name, columns), "data_tests", j)
            continue
        keys = test.args.columns if isinstance(test.args, Unique) else ()
        if not keys and not unique_key:
            fail(f"a model-level unique test needs columns: {model} is not a merge model "
                 "with a unique_key", "data_tests", j)
        for name in keys:
            if not known(name, columns):
                fail(f"model {model} has no output column '{name}'"
                     + did_you_mean(name, columns), "data_tests", j)
    names = [t.name for t in spec.unit_tests]
    for i, case in enumerate(spec.unit_tests):
        if names.count(case.name) > 1:
            fail(f"two unit tests are named '{case.name}'", "unit_tests", i, "name")
        for r, row in enumerate(case.expect.rows):
            for key in row:
                if not known(key, columns):
                    message = (f"model {model} has no output column '{key}'"
                               + did_you_mean(key, columns)
                               + f"; it outputs: {', '.join(columns)}")
                    if case.origin:  # dbt's top-level unit_tests: the entry's own line
                        path, _, line = case.origin.partition(":")
                        problems.append(SpecError(f"unit test {case.name}: expect.rows[{r}]: "
                                                  + message, path=path,
                                                  line=int(line) if line else None))
                    else:
                        fail(message, "unit_tests", i, "expect", "rows", r)
    return problems
