"""The README's promises about error positions and exit codes, checked against the runner
(stopping is tests/spark/test_stop.py; each exit code has its test, named in the README)."""

from __future__ import annotations

import re

from click.testing import CliRunner

from runner.cli import cli
from tests.support.projects import REPO_ROOT, write_project

README = (REPO_ROOT / "README.md").read_text()


def _block_after(marker: str, lang: str = "") -> str:
    start = README.index(marker)
    match = re.compile(rf"```{lang}\n(.*?)```", re.S).search(README, start)
    assert match, marker
    return match.group(1)


def test_the_readme_error_example_is_what_compile_prints(tmp_path) -> None:
    model = _block_after("Write `models/<table>.sql`", "sql")
    shown = _block_after("column and offending name").strip()
    typo = model.replace("SELECT request.endpoint", "SELECT request.endpont", 1)
    assert typo != model
    root = write_project(tmp_path, {"models/endpoint_stats.sql": typo})
    result = CliRunner().invoke(cli, ["compile", "--project-dir", str(root)])
    assert result.exit_code == 1
    assert shown in result.output.splitlines(), result.output


def test_the_readme_model_example_compiles_clean(tmp_path) -> None:
    model = _block_after("Write `models/<table>.sql`", "sql")
    root = write_project(tmp_path, {"models/endpoint_stats.sql": model})
    result = CliRunner().invoke(cli, ["compile", "--project-dir", str(root)])
    assert result.exit_code == 0 and "0 errors, 0 warnings" in result.output, result.output


# --- The README's command table and the docs' references are complete and their links resolve.

DOCS = REPO_ROOT / "docs"
_FENCE = re.compile(r"^```.*?^```", re.S | re.M)
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _without_code_blocks(text: str) -> str:
    return _FENCE.sub("", text)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    for line in _without_code_blocks(path.read_text()).splitlines():
        match = re.match(r"#{1,6} (.*)", line)
        if match:
            slug = _slug(match.group(1))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def test_every_command_and_option_is_in_the_readme_table() -> None:
    table = README[README.index("## Commands"):].split("\n## ", 1)[0]
    rows = {line.split("`")[1].split()[1]: line for line in table.splitlines()
            if line.startswith("| `runner ")}
    assert set(rows) == set(cli.commands), sorted(set(cli.commands) ^ set(rows))
    for name, command in cli.commands.items():
        for param in command.params:
            for opt in param.opts:
                if opt.startswith("--") and opt not in ("--help", "--project-dir", "--vars",
                                                        "--allow-spark-conf", "--profiles-dir",
                                                        "--target"):
                    assert opt in rows[name], f"runner {name} {opt} is not in the README table"


def test_every_config_key_is_in_the_configuration_reference() -> None:
    from runner.project.boundary import MOVED
    from runner.project.config import FilesSource, KafkaSource, ModelConfig, ProjectConfig
    from runner.project.profile import Target, TargetSource

    reference = (DOCS / "CONFIGURATION.md").read_text()

    def keys(model, prefix: str = "") -> list[str]:
        found = []
        for name, field in model.model_fields.items():
            key = prefix + (field.alias or name)
            nested = field.annotation
            if isinstance(nested, type) and hasattr(nested, "model_fields"):
                found += keys(nested, key + ".")
            elif name != "source":
                found.append(key)
        return found

    expected = keys(ProjectConfig) + keys(FilesSource, "source.") + keys(KafkaSource, "source.")
    expected += [f.alias or n for n, f in ModelConfig.model_fields.items()]
    # the effective config's deployment keys are documented where they are set: the profile
    moved = {".".join(k) for k in MOVED} | {"storage", "metrics.port", "metrics.host"}
    start = reference.index("## `profiles.yml`")
    end = reference.index("\n## ", start + 1)
    profile_part = reference[start:end]
    project_part = reference[:start] + reference[end:]
    missing = [key for key in expected if key not in moved and f"`{key}`" not in project_part
               and not any(key.startswith(f"{m}.") for m in moved)]
    assert not missing, f"not in docs/CONFIGURATION.md outside its profiles.yml part: {missing}"
    targets = keys(Target)
    targets += [f"source.{k}" for k in TargetSource.model_fields]
    missing = [key for key in targets if f"`{key}`" not in profile_part]
    assert not missing, f"not in docs/CONFIGURATION.md's profiles.yml part: {missing}"


def test_every_lint_rule_is_in_the_commands_reference() -> None:
    from runner.lint import rules_table

    reference = (DOCS / "COMMANDS.md").read_text()
    for rule_id, severity, _ in rules_table():
        assert f"| `{rule_id}` | {severity} |" in reference, rule_id


def test_links_in_the_readme_and_docs_resolve() -> None:
    pages = [REPO_ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
    broken = []
    for page in pages:
        for target in _LINK.findall(_without_code_blocks(page.read_text())):
            if re.match(r"[a-z]+:", target):
                continue
            file_part, _, anchor = target.partition("#")
            linked = (page.parent / file_part).resolve() if file_part else page
            if not linked.exists():
                broken.append(f"{page.name}: {target}")
            elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert not broken, broken
