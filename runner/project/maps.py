"""Settings maps of the configuration files: Spark conf, client properties, storage options.

YAML reads ``true`` and ``5`` as a bool and an int; Spark, librdkafka and object_store take
strings (``true``, not Python's ``True``). One conversion for every such map, as a pydantic type.

>>> stringify({"a": True, "b": 5, "c": "x"})
{'a': 'true', 'b': '5', 'c': 'x'}
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, SecretStr

__all__ = ["SecretMap", "StrMap", "stringify"]


def stringify(value: Any) -> Any:
    """YAML scalars of a settings map as the strings Spark/Kafka expect (true, not True)."""
    if isinstance(value, dict):
        return {str(k): str(v).lower() if isinstance(v, bool) else
                v if isinstance(v, str) else str(v) for k, v in value.items()}
    return value


#: A settings map (Spark conf, client properties, storage options) whose YAML scalars are
#: read as the strings the libraries expect (``true``, not ``True``); secret values kept hidden.
StrMap = Annotated[dict[str, str], BeforeValidator(stringify)]
SecretMap = Annotated[dict[str, SecretStr], BeforeValidator(stringify)]
