"""Secrets live in the deployment's profile (runner/project/profile.py), never in project.yml.

- project.yml reads only public environment variables (an ``env_var_prefixes`` prefix): a
  read of any other name is a configuration error, whatever the template does with it. The
  findings: ``vars: {build_label: "{{ env_var('GITHUB_TOKEN') }}"}`` plus ``{{
  ref(var('build_label')) }}`` made ``runner compile --format github`` print ``ref to unknown
  model 'ghp_...'``; later, ``{{ env_var('X') if not env_var('X').startswith('runner_env_')
  else 'dev' }}`` passed the render-twice check that replaced it and the secret landed in a
  table.
- A value the profile reads with ``env_var()`` is masked in every message of every command and
  format, and in what target/ and the docs site hold.

No Spark: everything here happens before a session starts.
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
    "{{ env_var('GITHUB_TOKEN') }}",              # the first finding
    "v-{{ env_var('GITHUB_TOKEN') | lower }}",    # a filter changes the text
    "{{ env_var('GITHUB_TOKEN')[4:] }}",          # a slice of it
    # the second: a template that tells a marker from the real value
    "{{ env_var('GITHUB_TOKEN') if not env_var('GITHUB_TOKEN').startswith('runner_env_') "
    "else 'dev' }}",
])
def test_project_yml_cannot_read_a_secret(tmp_path: Path, template: str,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    root = _project(tmp_path, f'  build_label: "{template}"\n  slow_ms: 1000\n',
                    {"models/r.sql": "SELECT * FROM {{ ref(var('build_label')) }}"},
                    extra="env_var_prefixes: [PUBLIC_]\n")
    for fmt in ("text", "json", "github"):
        code, out = _outputs(root, ["compile", "--format", fmt])[0]
        assert code == 2, out
        assert "env_var('GITHUB_TOKEN'): project.yml reads only public variables" in \
            out.replace("%27", "'").replace("%3A", ":"), out
        assert TOKEN not in out and TOKEN[4:] not in out and TOKEN.lower() not in out
    assert not (root / "target").exists()


def test_a_secret_read_into_an_invalid_key_is_never_quoted(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """A value that fails validation is quoted in its message (``name: ... (got '...')``):
    the read is refused first, and the value masked meanwhile."""
    monkeypatch.setenv("PIPELINE_NAME", "not an identifier " + TOKEN)
    yml = BASE_YML.replace("name: test_pipeline", "name: \"{{ env_var('PIPELINE_NAME') }}\"")
    root = write_project(tmp_path, MODEL, project_yml=yml)
    for fmt in ("text", "json", "github"):
        code, out = _outputs(root, ["compile", "--format", fmt])[0]
        assert code == 2 and TOKEN not in out, out
        assert "PIPELINE_NAME" in out


def test_a_var_from_a_public_variable_or_a_default_renders(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.setenv("PUBLIC_REGION", "eu-west-1")
    monkeypatch.delenv("PUBLIC_UNSET_LABEL", raising=False)
    root = _project(
        tmp_path,
        "  region: \"{{ env_var('PUBLIC_REGION') }}\"\n"
        "  label: \"{{ env_var('PUBLIC_UNSET_LABEL', 'fallback') }}\"\n"
        "  slow_ms: 1000\n",
        {"models/r.sql": "SELECT eventId, '{{ var('region') }}' AS region, "
                         "'{{ var('label') }}' AS label FROM parsed_events"},
        extra="env_var_prefixes: [PUBLIC_]\n")
    code, out = _outputs(root, ["compile"])[0]
    assert code == 0, out
    compiled = (root / "target" / "compiled" / "r.sql").read_text()
    assert "'eu-west-1' AS region" in compiled and "'fallback' AS label" in compiled


def test_profile_secrets_are_masked_in_every_command_and_format(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    """A value the profile read reaches a message two ways: the profile's own error quoting it
    (a metrics port that is not a number), and a model that names the secret itself."""
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    root = write_project(tmp_path / "a", MODEL,
                         target={"metrics": {"port": "{{ env_var('GITHUB_TOKEN') }}"}})
    for command in (["compile"], ["compile", "--format", "json"],
                    ["compile", "--format", "github"], ["status"], ["snapshot"],
                    ["test", "--kind", "data"], ["stream", "--available-now"]):
        code, out = _outputs(root, command)[0]
        assert code == 2, (command, out)
        assert "metrics.port" in out and TOKEN not in out, (command, out)
        assert MASK in out, (command, out)

    root = write_project(tmp_path / "b", {"models/r.sql": f"SELECT * FROM {{{{ ref('{TOKEN}') }}}}"},
                         target={"storage": {"aws_session_token": "{{ env_var('GITHUB_TOKEN') }}"}})
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
    """A warehouse path the profile reads with env_var() is shown on the docs site's project
    cards and could be quoted in the manifest's messages: both are written masked."""
    monkeypatch.setenv("WAREHOUSE_DIR", str(tmp_path / f"wh-{TOKEN}"))
    root = write_project(tmp_path / "proj", MODEL,
                         target={"warehouse": "{{ env_var('WAREHOUSE_DIR') }}"})
    for command in (["compile"], ["docs"]):
        code, out = _outputs(root, command)[0]
        assert code == 0, out
    written = "".join(p.read_text(errors="replace") for p in (root / "target").rglob("*")
                      if p.is_file() and p.suffix in (".html", ".json", ".sql", ".svg"))
    assert "index.html" in {p.name for p in (root / "target").rglob("*")}
    assert TOKEN not in written
