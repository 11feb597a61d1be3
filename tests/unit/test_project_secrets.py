"""A value project.yml reads with ``env_var()`` is a secret (runner/project/secrets.py): masked in
every message of every command and format, and never rendered into a model through ``var()``
unless the variable's name has a public prefix (``env_var_prefixes``).

The finding: ``vars: {build_label: "{{ env_var('GITHUB_TOKEN') }}"}`` plus ``{{
ref(var('build_label')) }}`` made ``runner compile --format github`` print ``ref to unknown
model 'ghp_...'``. No Spark: everything here happens before a session starts.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from runner.cli import cli
from runner.project.secrets import MASK, mask_secrets
from tests.support.projects import BASE_YML, write_project

TOKEN = "ghp_0123456789abcdefSECRET"
MODEL = {"models/m.sql": "SELECT eventId FROM parsed_events"}


def _project(tmp_path: Path, vars_yml: str, files: dict[str, str], *,
             extra: str = "") -> Path:
    yml = BASE_YML.replace("vars:\n  slow_ms: 1000\n", f"vars:\n{vars_yml}") + extra
    assert yml != BASE_YML + extra
    return write_project(tmp_path, {**MODEL, **files}, project_yml=yml)


def _outputs(root: Path, *commands: list[str]) -> list[tuple[int, str]]:
    results = []
    for command in commands:
        r = CliRunner().invoke(cli, [*command, "--project-dir", str(root)])
        results.append((r.exit_code, r.output))
    return results


@pytest.mark.parametrize("template", [
    "{{ env_var('GITHUB_TOKEN') }}",              # the finding
    "v-{{ env_var('GITHUB_TOKEN') | lower }}",    # a filter changes the text
    "{{ env_var('GITHUB_TOKEN')[4:] }}",          # a slice of it
    "{{ env_var('GITHUB_TOKEN') ~ '_x' }}",       # joined
])
def test_a_var_holding_a_secret_is_never_rendered(tmp_path: Path, template: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    root = _project(tmp_path, f'  build_label: "{template}"\n  slow_ms: 1000\n',
                    {"models/r.sql": "SELECT * FROM {{ ref(var('build_label')) }}"})
    for fmt in ("text", "json", "github"):
        code, out = _outputs(root, ["compile", "--format", fmt])[0]
        assert code == 1, out
        assert "var('build_label') holds a value project.yml read with " \
               "env_var('GITHUB_TOKEN')" in out.replace("%0A", "\n"), out
        assert TOKEN not in out and TOKEN[4:] not in out and TOKEN.lower() not in out
    target = root / "target"
    written = "".join(p.read_text() for p in target.rglob("*") if p.is_file())
    assert TOKEN not in written and TOKEN[4:] not in written


def test_a_var_from_a_public_variable_or_a_default_renders(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.setenv("PUBLIC_REGION", "eu-west-1")
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.delenv("UNSET_LABEL", raising=False)
    root = _project(
        tmp_path,
        "  region: \"{{ env_var('PUBLIC_REGION') }}\"\n"
        "  label: \"{{ env_var('UNSET_LABEL', 'fallback') }}\"\n"
        "  token: \"{{ env_var('GITHUB_TOKEN') }}\"\n"  # read, never used by a model
        "  slow_ms: 1000\n",
        {"models/r.sql": "SELECT eventId, '{{ var('region') }}' AS region, "
                         "'{{ var('label') }}' AS label FROM parsed_events"},
        extra="env_var_prefixes: [PUBLIC_]\n")
    code, out = _outputs(root, ["compile"])[0]
    assert code == 0, out
    compiled = (root / "target" / "compiled" / "r.sql").read_text()
    assert "'eu-west-1' AS region" in compiled and "'fallback' AS label" in compiled


def test_secret_values_are_masked_in_every_command_and_format(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    """Other keys that carry a secret into a message: here project.yml's ``name`` (refused: not
    an identifier) and a model that names the secret itself (an unknown ref)."""
    monkeypatch.setenv("PIPELINE_NAME", "not an identifier " + TOKEN)
    yml = BASE_YML.replace("name: test_pipeline", "name: \"{{ env_var('PIPELINE_NAME') }}\"")
    root = write_project(tmp_path / "a", MODEL, project_yml=yml)
    for command in (["compile"], ["compile", "--format", "json"],
                    ["compile", "--format", "github"], ["status"], ["snapshot"],
                    ["test", "--kind", "data"], ["stream", "--available-now"]):
        code, out = _outputs(root, command)[0]
        assert code == 2, (command, out)
        assert TOKEN not in out, (command, out)
        assert MASK in out, (command, out)

    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    root = _project(tmp_path / "b", "  token: \"{{ env_var('GITHUB_TOKEN') }}\"\n",
                    {"models/r.sql": f"SELECT * FROM {{{{ ref('{TOKEN}') }}}}"})
    for fmt in ("text", "json", "github"):
        code, out = _outputs(root, ["compile", "--format", fmt])[0]
        assert code == 1, out
        assert TOKEN not in out and "ref to unknown model '***'" in out.replace("%27", "'")


def test_masking_covers_escaped_forms_and_leaves_short_values() -> None:
    from runner.project.secrets import set_secret_values

    set_secret_values(['pa"ss:wo,rd\\x', "ab", "10%:off"])
    assert mask_secrets('{"msg": "pa\\"ss:wo,rd\\\\x"}') == '{"msg": "***"}'  # JSON-escaped
    assert mask_secrets("::error::pa\"ss%3Awo%2Crd\\x") == "::error::***"  # a GitHub property
    assert mask_secrets("a 10%25:off b") == "a *** b"  # a GitHub message (only % escaped)
    assert mask_secrets("ab stays") == "ab stays"  # shorter than MIN_MASKED: ordinary text


def test_secret_values_never_reach_target_or_the_docs_site(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """A warehouse path read with env_var() is shown on the docs site's project cards and could
    be quoted in the manifest's messages: both are written masked."""
    monkeypatch.setenv("WAREHOUSE_DIR", str(tmp_path / f"wh-{TOKEN}"))
    yml = BASE_YML.replace("warehouse: wh", "warehouse: \"{{ env_var('WAREHOUSE_DIR') }}\"")
    assert yml != BASE_YML
    root = write_project(tmp_path / "proj", MODEL, project_yml=yml)
    for command in (["compile"], ["docs"]):
        code, out = _outputs(root, command)[0]
        assert code == 0, out
    written = "".join(p.read_text(errors="replace") for p in (root / "target").rglob("*")
                      if p.is_file() and p.suffix in (".html", ".json", ".sql", ".svg"))
    assert "index.html" in {p.name for p in (root / "target").rglob("*")}
    assert TOKEN not in written
