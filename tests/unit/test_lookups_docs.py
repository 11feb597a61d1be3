"""``runner docs`` shows sources and seeds: DAG nodes, column lineage, an index section."""

from __future__ import annotations

import re

from runner.build import compile_project
from runner.docs_site import build_site, plan_lineage
from runner.project.loader import load_project
from tests.support.projects import write_project

FILES = {
    "models/crm.yml": """
        sources:
          - name: crm
            tables:
              - name: customers
                path: ref/customers
                description: One row per customer.
                columns:
                  - {name: customer_id, data_type: string}
                  - {name: segment, data_type: string, description: Price plan.}
        """,
    "seeds/endpoint_owners.csv": "endpoint,team\n/a,core\n",
    "models/enriched.sql": """
        SELECT e.eventId, c.segment, upper(o.team) AS team
        FROM parsed_events e
        JOIN {{ source('crm', 'customers') }} c ON c.customer_id = e.user.userId
        JOIN {{ ref('endpoint_owners') }} o ON o.endpoint = e.request.endpoint
        """,
    "models/by_segment.sql": "SELECT segment, count(*) AS n FROM {{ ref('enriched') }} "
                             "GROUP BY segment",
}


def test_lineage_reaches_source_and_seed_columns(tmp_path) -> None:
    project = load_project(write_project(tmp_path, FILES))
    lineage = plan_lineage(project, compile_project(project).plan)
    enriched = {c.column: c for c in lineage["enriched"]}
    assert enriched["eventId"].sources == ("eventId",) and enriched["eventId"].lookups == ()
    assert enriched["segment"].lookups == ("crm.customers.segment",)
    assert enriched["segment"].direct and enriched["segment"].sources == ()
    assert enriched["team"].lookups == ("endpoint_owners.team",)
    assert not enriched["team"].direct
    segment = {c.column: c for c in lineage["by_segment"]}["segment"]
    assert segment.lookups == ("crm.customers.segment",) and segment.via == ("enriched",)


def test_site_shows_sources_and_seeds(tmp_path) -> None:
    project = load_project(write_project(tmp_path, FILES))
    site = build_site(project, compile_project(project).plan)
    index = site.index.read_text()
    dag = re.search(r'<svg[^>]*class="dag".*?</svg>', index, re.S)
    assert dag is not None
    assert 'data-node="lookup:crm__customers"' in dag.group(0)
    assert 'data-node="lookup:endpoint_owners"' in dag.group(0)
    assert "node--lookup" in dag.group(0) and "edge--lookup" in dag.group(0)
    assert 'id="lookup-crm__customers"' in index and "One row per customer." in index
    assert "Price plan." in index and "content hash " in index
    assert ">enriched.segment</a>" in index  # the source column feeds enriched.segment
    page = (site.root / "models" / "enriched.html").read_text()
    assert 'href="../index.html#lookup-crm__customers"' in page
    assert "crm.customers.segment" in page and "endpoint_owners.team" in page
