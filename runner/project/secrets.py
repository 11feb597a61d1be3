"""Which names are secret, and which environment variables a model may read.

- Masking: a key that names a password, secret, token, key or credential (or a JAAS config, a
  PEM or a certificate) has its value masked in every message (:func:`is_secret_name`).
- ``env_var()`` in a model or macro reads only variables whose name starts with a prefix the
  project declares public (project.yml ``env_var_prefixes: [PUBLIC_]``): the value is written
  into target/compiled, the manifest, the docs site and messages. dbt's rule the other way
  round: dbt names secrets (``DBT_ENV_SECRET_``) and keeps them out of models; here a model
  reads only what the project names public, so a variable nobody thought about stays secret.
  project.yml itself may read any variable (source credentials), masked as above.
- A value project.yml reads with ``env_var()`` from a variable without a public prefix is a
  secret wherever it appears: :func:`set_secret_values` records it when the project
  loads, and :func:`mask_secrets` (every line the console prints, in every command and format)
  replaces it with :data:`MASK`. A ``var`` whose value came from such a read is never rendered
  into a model (:mod:`runner.compile.render`). Values shorter than :data:`MIN_MASKED`
  characters are not masked: they cannot be told apart from ordinary text (``1``, ``true``).

>>> is_secret_name("sasl.password"), is_secret_name("spark.hadoop.fs.s3a.access.key")
(True, True)
>>> is_secret_name("bootstrap_servers")
False
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

__all__ = ["MASK", "MIN_MASKED", "SECRET_WORDS", "is_secret_name", "mask_secrets",
           "public_env_var", "set_secret_values"]

SECRET_WORDS = ("password", "passwd", "secret", "token", "key", "credential", "jaas", "pem",
                "cert", "auth")
MASK = "***"
MIN_MASKED = 4

#: Secret values read by project.yml in this process, longest first (a value that contains
#: another is masked whole).
_SECRET_VALUES: list[str] = []


def is_secret_name(name: str) -> bool:
    """Whether ``name`` (a setting's key, a variable's name) names a secret."""
    low = name.lower()
    return any(word in low for word in SECRET_WORDS)


def public_env_var(name: str, prefixes: Sequence[str]) -> bool:
    """Whether a model may read environment variable ``name``: it starts with one of the
    project's public ``prefixes`` (case-sensitive, as environment names are)."""
    return any(prefix and name.startswith(prefix) for prefix in prefixes)


def set_secret_values(values: Iterable[str]) -> None:
    """Mask ``values`` in every message this process prints from now on, in place of the
    values set before (a process runs one project's command; the last project loaded says
    what is secret). Values shorter than :data:`MIN_MASKED` are left: see the module's
    docstring."""
    known: set[str] = set()
    for value in values:
        if len(value) >= MIN_MASKED:  # as written, and as JSON and GitHub annotations escape it
            message = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
            known.update((value, json.dumps(value)[1:-1], message,
                          message.replace(":", "%3A").replace(",", "%2C")))
    _SECRET_VALUES[:] = sorted(known, key=len, reverse=True)


def mask_secrets(text: str) -> str:
    """``text`` with every remembered secret value replaced by :data:`MASK`.

    >>> set_secret_values(["ghp_example_token"])
    >>> mask_secrets("ref to unknown model 'ghp_example_token'")
    "ref to unknown model '***'"
    """
    for value in _SECRET_VALUES:
        if value in text:
            text = text.replace(value, MASK)
    return text
