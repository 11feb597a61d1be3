"""AWS named profiles (``AWS_PROFILE``), resolved by boto3 for the consumers that read none:
object_store (obstore, the runner's own files) and delta-rs, which would ask the instance
metadata service instead. Spark reads profiles itself (S3A's ``ProfileAWSCredentialsProvider``).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

__all__ = ["profile_credentials", "profile_session"]


@lru_cache(maxsize=8)
def profile_session(profile: str) -> Any:
    """The boto3 session of an AWS named profile (one per profile: its credentials refresh)."""
    import boto3

    return boto3.Session(profile_name=profile)


def profile_credentials(profile: str) -> Any:
    """The (refreshing) botocore credentials of an AWS named profile (``AWS_PROFILE``: static
    keys, SSO, an assumed role, a ``credential_process``), resolved by boto3 from
    ``~/.aws/config`` and ``~/.aws/credentials`` (or ``AWS_CONFIG_FILE`` and
    ``AWS_SHARED_CREDENTIALS_FILE``), as the AWS CLI and Spark's S3A resolve it.

    Raises:
        OSError: the profile is unknown or resolves to no credentials.
    """
    from botocore.exceptions import BotoCoreError

    try:
        credentials = profile_session(profile).get_credentials()
    except BotoCoreError as e:
        raise OSError(f"AWS profile {profile!r} gives no credentials: {e}") from e
    if credentials is None:
        raise OSError(f"AWS profile {profile!r} gives no credentials")
    return credentials
