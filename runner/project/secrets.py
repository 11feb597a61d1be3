"""Which names are secret, and which environment variables a model may read.

- Masking: a key that names a password, secret, token, key or credential (or a JAAS config, a
  PEM or a certificate) has its value masked in every message (:func:`is_secret_name`).
- ``env_var()`` in a model or macro reads only variables whose name starts with a prefix the
  project declares public (project.yml ``env_var_prefixes: [PUBLIC_]``): the value is written
  into target/compiled, the manifest, the docs site and messages. dbt's rule the other way
  round: dbt names secrets (``DBT_ENV_SECRET_``) and keeps them out of models; here a model
  reads only what the project names public, so a variable nobody thought about stays secret.
  project.yml itself may read any variable (source credentials), masked as above.

>>> is_secret_name("sasl.password"), is_secret_name("spark.hadoop.fs.s3a.access.key")
(True, True)
>>> is_secret_name("bootstrap_servers")
False
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["SECRET_WORDS", "MASK", "is_secret_name", "public_env_var"]

SECRET_WORDS = ("password", "passwd", "secret", "token", "key", "credential", "jaas", "pem",
                "cert", "auth")
MASK = "***"


def is_secret_name(name: str) -> bool:
    """Whether ``name`` (a setting's key, a variable's name) names a secret."""
    low = name.lower()
    return any(word in low for word in SECRET_WORDS)


def public_env_var(name: str, prefixes: Sequence[str]) -> bool:
    """Whether a model may read environment variable ``name``: it starts with one of the
    project's public ``prefixes`` (case-sensitive, as environment names are)."""
    return any(prefix and name.startswith(prefix) for prefix in prefixes)
