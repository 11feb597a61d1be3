"""``runner compile`` end to end on a project with a source (columns read from a real Delta
table) and a seed: exit 0 and the manifest's lookups; exit 2 on a bad declaration; exit 1 on
an unknown source column."""

from __future__ import annotations

import json

import pyarrow as pa
from click.testing import CliRunner
from deltalake import write_deltalake

from runner.cli import cli
from tests.support.projects import write_project

SOURCES = "sources:\n  - name: crm\n    tables:\n      - name: customers\n" \
          "        path: ref/customers\n"
MODEL = """
SELECT e.eventId, c.segment, o.team
FROM parsed_events e
LEFT JOIN {{ source('crm', 'customers') }} c ON c.customer_id = e.user.userId
LEFT JOIN {{ ref('endpoint_owners') }} o ON o.endpoint = e.request.endpoint
"""


def _project(tmp_path, model: str = MODEL, sources: str = SOURCES):
    write_deltalake(str(tmp_path / "ref" / "customers"), pa.table({
        "customer_id": pa.array(["u1"], pa.string()), "segment": pa.array(["gold"], pa.string())}))
    return write_project(tmp_path, {"models/crm.yml": sources, "models/enriched.sql": model,
                                    "seeds/endpoint_owners.csv": "endpoint,team\n/a,core\n"})


def _compile(root):
    return CliRunner().invoke(cli, ["compile", "--project-dir", str(root)],
                              catch_exceptions=False)


def test_compile_with_a_source_and_a_seed(tmp_path) -> None:
    root = _project(tmp_path)
    result = _compile(root)
    assert result.exit_code == 0, result.output
    manifest = json.loads((root / "target/manifest.json").read_text())
    assert manifest["models"]["enriched"]["lookups"] == ["crm__customers", "endpoint_owners"]
    source = manifest["lookups"]["crm__customers"]
    assert source["columns"] == [{"name": "customer_id", "type": "STRING"},
                                 {"name": "segment", "type": "STRING"}]
    assert source["location"] == str((tmp_path / "ref/customers").resolve())
    assert manifest["lookups"]["endpoint_owners"]["kind"] == "seed"
    sql = (root / "target/compiled/enriched.sql").read_text()
    assert "{{" not in sql and "crm__customers c" in sql


def test_compile_exits_2_on_a_bad_declaration(tmp_path) -> None:
    root = _project(tmp_path, sources=SOURCES + "        colums: []\n")
    result = _compile(root)
    assert result.exit_code == 2
    assert "models/crm.yml:6: sources[0].tables[0].colums: unknown key 'colums'" in result.output
    assert "Traceback" not in result.output


def test_compile_exits_1_on_an_unknown_source_column(tmp_path) -> None:
    root = _project(tmp_path, model=MODEL.replace("c.segment", "c.segmant"))
    result = _compile(root)
    assert result.exit_code == 1
    assert "models/enriched.sql:1" in result.output and "segmant" in result.output
    assert "did you mean 'segment'" in result.output
