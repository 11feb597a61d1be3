"""`runner docs`: the static site (no Spark), its lineage, and a render in headless Chromium."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from runner.build import compile_project
from runner.cli import cli
from runner.docs_site import build_site, plan_lineage
from runner.project.loader import load_project
from tests.support.projects import REPO_ROOT

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "ae" / "shop"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("target", "wh", "cp", "logs"))
    return root


def test_lineage_follows_structs_explodes_and_refs(shop: Path) -> None:
    example = load_project(REPO_ROOT)
    lin = {m: {c.column: c for c in cols}
           for m, cols in plan_lineage(example, compile_project(example).plan).items()}
    status = lin["request_logs"]["status_class"]
    assert status.sources == ("request.status_code",) and not status.direct
    assert status.expression.startswith("CASE WHEN request.status_code >= 500")
    assert lin["request_logs"]["userId"].sources == ("user.userId",)
    assert lin["request_logs"]["userId"].direct
    assert lin["error_events"]["errorCode"].sources == ("errors[].errorCode",)
    assert lin["performance_metrics"]["timestamp"].sources == ("timestamp",)

    project = load_project(shop)
    stats = {c.column: c for c in plan_lineage(project, compile_project(project).plan)[
        "endpoint_stats"]}
    assert stats["endpoint"].sources == ("request.endpoint",)
    assert stats["endpoint"].via == ("requests",) and stats["endpoint"].direct
    assert stats["requests"].sources == () and stats["requests"].expression == "COUNT(*)"
    assert stats["errors"].sources == ("request.status_code",)
    assert stats["last_seen"].sources == ("timestamp",) and not stats["last_seen"].direct


def test_site_pages_graph_and_selection(shop: Path) -> None:
    result = CliRunner().invoke(cli, ["docs", "--project-dir", str(shop)])
    assert result.exit_code == 0, result.output
    docs = shop / "target" / "docs"
    assert result.output.strip() == f"wrote 3 pages -> {docs / 'index.html'}"
    index = (docs / "index.html").read_text()
    for node in ("parsed_events", "requests", "endpoint_stats", "_dead_letter"):
        assert f'data-node="{node}"' in index
    assert 'data-from="requests" data-to="endpoint_stats"' in index  # the ref
    assert 'class="edge edge--dead" data-from="requests" data-to="_dead_letter"' in index
    assert 'href="models/endpoint_stats.html"' in index
    assert "http://" not in index.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in index
    page = (docs / "models" / "endpoint_stats.html").read_text()
    assert "greatest(target.last_seen, source.last_seen)" in page  # config: merge_update
    assert "accumulates_onto_prior_rows" in page and "2 prior rows" in page
    assert 'data-for="endpoint"' in page  # lineage graph edge of column endpoint
    requests = (docs / "models" / "requests.html").read_text()
    assert "known_status" in requests and "status_code BETWEEN 100 AND 599" in requests
    assert "expectation requests.known_status failed: ..." in requests

    other = shop / "only"
    site = build_site(load_project(shop), compile_project(load_project(shop)).plan,
                      select=["tag:stats"], out_dir=other)
    assert [p.name for p in site.pages] == ["endpoint_stats.html"]
    assert 'data-node="requests"' not in site.index.read_text()
    result = CliRunner().invoke(cli, ["docs", "--project-dir", str(shop), "-s", "nope"])
    assert result.exit_code == 2 and "no model named 'nope'" in result.output


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         f"--user-data-dir={tmp_path / 'chromium-profile'}", *args],
        capture_output=True, text=True, timeout=120, check=True)


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (Debian: apt-get install -y "
                                               "chromium; .ci/run installs it)")
def test_site_renders_in_headless_chromium(shop: Path, tmp_path: Path) -> None:
    project = load_project(shop)
    site = build_site(project, compile_project(project).plan)
    index = _chromium(tmp_path, "--dump-dom", site.index.as_uri()).stdout
    assert 'data-ready="1"' in index  # the page's script ran without errors
    assert '<svg class="dag"' in index and 'data-node="endpoint_stats"' in index
    page = _chromium(tmp_path, "--dump-dom",
                     (site.root / "models" / "endpoint_stats.html").as_uri()).stdout
    assert 'data-ready="1"' in page and 'id="model-title"' in page
    assert '<svg class="lineage"' in page and "request.status_code" in page
    shot = tmp_path / "index.png"
    _chromium(tmp_path, "--window-size=1280,900", f"--screenshot={shot}", site.index.as_uri())
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
