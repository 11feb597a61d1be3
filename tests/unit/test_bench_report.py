"""The current-numbers tables of docs/ are what ``bench/results/*.json`` give
(``python -m bench.report --check``), and every result file is read by the report."""

from __future__ import annotations

from bench import report


def test_docs_numbers_are_current() -> None:
    assert report.main(["--check"]) == 0, "run: python -m bench.report"


def test_every_result_file_has_a_renderer_and_a_page() -> None:
    found = report.results()
    assert found, "bench/results holds no result"
    assert report.check_coverage(found) == []


def test_every_renderer_gives_rows_and_a_command() -> None:
    for bench, (path, doc) in report.results().items():
        command, rows = report.RENDERERS[bench](doc)
        assert command.startswith("`python -m bench."), path.name
        assert rows and all(figure and value for figure, value in rows), path.name


def test_check_fails_when_a_page_drifts(tmp_path, monkeypatch) -> None:
    page = tmp_path / "docs" / "PAGE.md"
    page.parent.mkdir()
    page.write_text(f"# Page\n\n{report.BEGIN}\nstale\n{report.END}\n", encoding="utf-8")
    monkeypatch.setattr(report, "REPO", tmp_path)
    monkeypatch.setattr(report, "PAGES", {"docs/PAGE.md": ("soak",)})
    monkeypatch.setattr(report, "check_coverage", lambda found: [])
    assert report.main(["--check"]) == 1
    assert report.main([]) == 0
    assert report.main(["--check"]) == 0
    assert "stale" not in page.read_text(encoding="utf-8")
