"""Declaring sources and seeds: strict validation with file and line, seeds' types and hash,
name clashes, and locations kept away from the checkpoint and the warehouse."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from runner.cli import cli
from runner.errors import ConfigError
from runner.model_tests.spec import load_specs
from runner.project.loader import load_project
from runner.project.seeds import MAX_SEED_BYTES, infer_type
from tests.support.projects import write_project

MODEL = "SELECT eventId FROM parsed_events"


def _load(tmp_path, files, **kw):
    return load_project(write_project(tmp_path, {"models/m.sql": MODEL, **files}, **kw))


def test_declaration_is_parsed_in_dbt_shape(tmp_path) -> None:
    project = _load(tmp_path, {"models/crm.yml": """
        sources:
          - name: crm
            description: The CRM export.
            tables:
              - name: customers
                path: ref/customers
                description: One row per customer.
                columns:
                  - {name: customer_id, data_type: string, description: The key.}
              - name: plans
                path: s3://bucket/plans
              - name: accounts
                path: file:///data/accounts
        """})
    customers, plans, accounts = project.sources
    assert (customers.view, customers.full_name) == ("crm__customers", "crm.customers")
    assert customers.location == str((tmp_path / "ref/customers").resolve())
    assert customers.columns == (("customer_id", "string"),)
    assert customers.description == "One row per customer."
    assert customers.descriptions == (("customer_id", "The key."),)
    assert (customers.path, customers.line) == ("models/crm.yml", 5)
    assert plans.location == "s3://bucket/plans" and plans.columns is None
    assert accounts.location == "/data/accounts"


@pytest.mark.parametrize(("yml", "line", "match"), [
    ("sources:\n  - name: crm\n    tables:\n      - name: c\n        path: p\n        colums: []\n",
     6, "unknown key 'colums' (did you mean 'columns'?)"),
    ("sources:\n  - name: crm\n    tabels: []\n", 3, "unknown key 'tabels'"),
    ("sources:\n  - name: crm\n    tables:\n      - name: c\n", 4,
     "exactly one of path (a Delta table's folder or URI) and table"),
    ("sources:\n  - name: crm\n    tables:\n      - {name: c, path: p, table: x.y}\n", 4,
     "exactly one of path"),
    ("sources:\n  - name: 1crm\n    tables: [{name: c, path: p}]\n", 2, "sources[0].name"),
    ("sources:\n  - name: crm\n    tables:\n      - name: c\n        path: p\n"
     "        columns:\n          - {name: a}\n", 7, "missing required key 'data_type'"),
    ("sources: crm\n", 1, "sources: must be a list"),
])
def test_bad_declaration_names_file_line_and_key(tmp_path, yml, line, match) -> None:
    with pytest.raises(ConfigError) as e:
        _load(tmp_path, {"models/crm.yml": yml})
    assert match in e.value.message
    assert (e.value.path, e.value.line, e.value.exit_code) == ("models/crm.yml", line, 2)


def test_a_bad_data_type_is_refused_at_compile(tmp_path) -> None:
    from runner.build import compile_project
    project = _load(tmp_path, {
        "models/crm.yml": "sources:\n  - name: crm\n    tables:\n      - name: c\n"
                          "        path: p\n        columns: [{name: a, data_type: strang}]\n",
        "models/n.sql": "SELECT a FROM {{ source('crm', 'c') }}"})
    with pytest.raises(ConfigError, match="column a: 'strang' is not a Spark SQL type") as e:
        compile_project(project)
    assert (e.value.path, e.value.line) == ("models/crm.yml", 4)


def test_catalog_table_on_either_engine(tmp_path) -> None:
    """Issue 31: the rs engine reads a catalog table too (by its location, looked up at
    start through Spark's catalog: tests/catalog/test_catalog_ops.py)."""
    yml = "sources:\n  - name: crm\n    tables:\n      - {name: c, table: crm.customers}\n"
    for engine in ("rs", "spark"):
        project = _load(tmp_path / engine, {"models/crm.yml": yml}, engine=engine)
        assert (project.sources[0].location, project.sources[0].catalog) == (
            "crm.customers", True)


@pytest.mark.parametrize(("files", "match"), [
    ({"seeds/m.csv": "a\n1\n"}, "seed 'm' has the name of model m"),
    ({"models/x.yml": "sources: [{name: m, tables: [{name: t, path: p}]}]",
      "models/m__t.sql": MODEL}, "reads as the view 'm__t', the name of model"),
    ({"models/x.yml": "sources: [{name: a, tables: [{name: b, path: p}]}]",
      "seeds/a__b.csv": "x\n1\n"}, "seed 'a__b' has the name of source 'a.b''s view"),
    ({"models/x.yml": "sources: [{name: a, tables: [{name: b, path: p}, {name: b, path: q}]}]"},
     "source table 'a.b' is declared twice"),
    ({"seeds/s.yml": "seeds: [{name: nope, columns: []}]", "seeds/s.csv": "a\n1\n"},
     "seed 'nope' is declared but there is no seeds/nope.csv"),
    ({"seeds/s.yml": "seeds: [{name: s, columns: [{name: b, data_type: int}]}]",
      "seeds/s.csv": "a\n1\n"}, "declares column 'b', which seeds/s.csv does not have"),
    ({"seeds/s.yml": "seeds: [{name: s, colums: []}]", "seeds/s.csv": "a\n1\n"},
     "unknown key 'colums'"),
    ({"seeds/s.csv": "a,a\n1,2\n"}, "column 'a' is named twice"),
    ({"seeds/s.csv": "a,b\n1\n"}, "a row has 1 fields, the header 2"),
    ({"seeds/s.csv": ""}, "has no header row"),
])
def test_clashes_and_bad_seeds_are_refused(tmp_path, files, match) -> None:
    with pytest.raises(ConfigError, match=match.replace("(", r"\(").replace(")", r"\)")):
        _load(tmp_path, files)


def test_seed_over_the_size_cap_says_declare_a_source(tmp_path) -> None:
    root = write_project(tmp_path, {"models/m.sql": MODEL, "seeds/big.csv": "a\n"})
    with (root / "seeds/big.csv").open("ab") as f:
        f.truncate(MAX_SEED_BYTES + 1)
    with pytest.raises(ConfigError, match="a seed holds at most 50 MB") as e:
        load_project(root)
    assert "sources:" in (e.value.hint or "")


def test_seed_types_are_inferred_from_every_row_or_declared(tmp_path) -> None:
    project = _load(tmp_path, {
        "seeds/s.csv": "i,f,b,d,t,s,e,mixed\n"
                       "1,1,true,2026-01-01,2026-01-01T10:00:00Z,x,,1\n"
                       "-2,2.5,FALSE,2026-02-28,2026-01-01 10:00:00,y,,2026-01-01\n",
        "seeds/types.yml": "seeds:\n  - name: s\n    columns:\n"
                           "      - {name: s, data_type: 'decimal(10,2)'}\n"})
    (seed,) = project.seeds
    assert seed.columns == (("i", "BIGINT"), ("f", "DOUBLE"), ("b", "BOOLEAN"), ("d", "DATE"),
                            ("t", "TIMESTAMP"), ("s", "decimal(10,2)"), ("e", "STRING"),
                            ("mixed", "STRING"))
    assert seed.rows == 2
    assert infer_type(["9223372036854775808"]) == "DOUBLE"  # past BIGINT


def test_seed_hash_follows_its_bytes_and_declared_types(tmp_path) -> None:
    def hash_of(root, csv: str, yml: str | None = None) -> str:
        files = {"seeds/s.csv": csv} | ({"seeds/s.yml": yml} if yml else {})
        return _load(root, files).seeds[0].content_hash

    base = hash_of(tmp_path / "a", "k,v\n1,x\n")
    assert hash_of(tmp_path / "b", "k,v\n1,x\n") == base
    assert hash_of(tmp_path / "c", "k,v\n1,y\n") != base
    typed = "seeds: [{name: s, columns: [{name: k, data_type: string}]}]"
    assert hash_of(tmp_path / "d", "k,v\n1,x\n", typed) != base


@pytest.mark.parametrize("path", ["wh/customers", "cp", "."])
def test_source_may_not_overlap_the_checkpoint_or_warehouse(tmp_path, path) -> None:
    with pytest.raises(ConfigError, match="would delete or rewrite reference data") as e:
        _load(tmp_path, {"models/x.yml": f"sources: [{{name: a, tables: [{{name: b, "
                                         f"path: '{path}'}}]}}]"})
    assert (e.value.path, e.value.line) == ("models/x.yml", 1)
    assert e.value.message.startswith("source a.b: ")


def test_load_specs_accepts_sources_in_yml_files(tmp_path) -> None:
    project = _load(tmp_path, {
        "models/only_sources.yml": "sources: [{name: a, tables: [{name: b, path: p}]}]",
        "models/m.yml": "description: One row per event.\n"
                        "sources: [{name: c, tables: [{name: d, path: q}]}]\n"})
    specs = load_specs(project)
    assert list(specs) == ["m"] and specs["m"].description == "One row per event."
    assert [t.full_name for t in project.sources] == ["c.d", "a.b"]


def test_a_yml_with_more_than_sources_still_needs_its_model(tmp_path) -> None:
    from runner.model_tests.spec import SpecError
    project = _load(tmp_path, {"models/nomodel.yml": "description: x\nsources: []\n"})
    with pytest.raises(SpecError, match="no model 'nomodel'"):
        load_specs(project)



def test_seed_rows_are_values_of_the_column_types(tmp_path) -> None:
    from datetime import date, datetime

    from runner.project.seeds import seed_rows
    project = _load(tmp_path, {
        "seeds/s.csv": "i,f,b,d,t,s,n\n"
                       "1,1,true,2026-01-01,2026-01-01T10:00:00+02:00,x,\n"
                       "-2,2.5,FALSE,2026-02-28,2026-01-01 10:00:00,,\n",
        "seeds/s.yml": "seeds: [{name: s, columns: [{name: n, data_type: 'decimal(4,1)'}]}]"})
    assert seed_rows(project.seeds[0]) == [
        (1, 1.0, True, date(2026, 1, 1), datetime(2026, 1, 1, 8, 0), "x", None),
        (-2, 2.5, False, date(2026, 2, 28), datetime(2026, 1, 1, 10, 0), None, None)]


def test_seed_cell_not_of_its_declared_type_names_the_line(tmp_path) -> None:
    from runner.project.seeds import seed_rows
    project = _load(tmp_path, {
        "seeds/s.csv": "k,v\na,1\nb,x\n",
        "seeds/s.yml": "seeds: [{name: s, columns: [{name: v, data_type: bigint}]}]"})
    with pytest.raises(ConfigError, match="column v is bigint, but a row holds 'x'") as e:
        seed_rows(project.seeds[0])
    assert (e.value.path, e.value.line) == ("seeds/s.csv", 3)


def test_an_empty_list_is_said_in_words(tmp_path) -> None:
    """pydantic's "Tuple should have at least 1 item after validation, not 0" is not shown."""
    root = write_project(tmp_path, {"models/m.sql": "SELECT eventId FROM parsed_events",
                                    "models/src.yml": "sources:\n  - name: crm\n    tables: []\n"})
    result = CliRunner().invoke(cli, ["compile", "--project-dir", str(root)])
    assert result.exit_code == 2, result.output
    assert "models/src.yml:3: sources[0].tables: needs at least 1 entry, got none" \
        in result.output, result.output
