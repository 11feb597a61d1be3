"""What project.yml may not hold: the deployment's keys, which live in the profile now.

project.yml comes with the pull request. A key that chooses a host, a credential, a client
property or a file outside the project there would let the pull request decide where the
deployment's credentials go or what code loads (docs/SECURITY.md), so each such key is a
configuration error naming where it goes now (:data:`MOVED`), and the locations project.yml
keeps (the built-in ``dev`` target's) must be relative paths inside the project.

:func:`split_deployment` moves those keys of an old project.yml into a target, and
:func:`migrate` writes that target into a profiles.yml, for whoever migrates a project (the
tests' and benches' project writers use them too).

>>> project, target = split_deployment({"name": "p", "spark": {"master": "local[2]"},
...                                     "warehouse": "/data/wh"})
>>> project, target
({'name': 'p'}, {'spark': {'master': 'local[2]'}, 'warehouse': '/data/wh'})
"""

from __future__ import annotations

import copy
import posixpath
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from runner.errors import ConfigError
from runner.project.paths import is_uri
from runner.project.yaml_template import yaml_line

__all__ = ["LOCATION_KEYS", "MOVED", "check_boundary", "merged", "migrate", "split_deployment",
           "write_target"]

#: project.yml key path -> what it is (it goes to the same path in a profile's target).
MOVED: Mapping[tuple[str, ...], str] = {
    ("storage",): "object-store options and endpoints",
    ("spark", "master"): "Spark's master",
    ("spark", "remote"): "the Spark Connect server (sc://host:port)",
    ("source", "bootstrap_servers"): "Kafka's brokers",
    ("source", "options"): "Kafka client properties (security, SASL, TLS)",
    ("metrics",): "the metrics server's port and address",
    ("kafka_outputs",): "the brokers and client properties Kafka models produce with",
}

#: Locations project.yml may keep as the built-in dev target's: relative, inside the project.
LOCATION_KEYS: tuple[tuple[str, ...], ...] = (("warehouse",), ("checkpoint",),
                                              ("source", "path"))

#: spark.conf keys that are connections (a host, credentials): the target's ``spark.conf``.
_CONNECTION_CONF = ("spark.hadoop.",)


def _get(data: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = data
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _outside(value: str) -> str | None:
    """Why location ``value`` is not a relative path inside the project, or None."""
    if is_uri(value):
        return "a URI"
    if value.startswith(("/", "~", "\\")) or (len(value) > 1 and value[1] == ":"):
        return "an absolute path"
    normal = posixpath.normpath(value.replace("\\", "/"))
    if normal == ".." or normal.startswith("../"):
        return "a path outside the project"
    return None


def _moved_location(data: Mapping[str, Any], path: tuple[str, ...]) -> str | None:
    value = _get(data, path)
    return _outside(value) if isinstance(value, str) else None


def check_boundary(data: Mapping[str, Any], *, text: str, path: str = "project.yml") -> None:
    """Refuse every deployment key left in project.yml's (parsed) ``data``.

    Raises:
        ConfigError: each key that moved, naming where it goes (exit 2).
    """
    errors: list[ConfigError] = []
    hint = ("move it to the profile's target (profiles.yml outside the project: "
            "docs/PROFILES.md)")
    for key, what in MOVED.items():
        if _get(data, key) is not None:
            dotted = ".".join(key)
            errors.append(ConfigError(
                f"{dotted}: {what}: the deployment's to choose, not a pull request's",
                path=path, line=yaml_line(text, key),
                hint=f"{hint}: outputs: <target>: {dotted}"))
    for key in LOCATION_KEYS:
        why = _moved_location(data, key)
        if why:
            dotted = ".".join(key)
            errors.append(ConfigError(
                f"{dotted}: {_get(data, key)!r} is {why}; project.yml's locations are the dev "
                "target's, relative paths inside the project", path=path,
                line=yaml_line(text, key), hint=f"{hint}: outputs: <target>: {dotted}"))
    if errors:
        raise ConfigError(errors[0].message, path=path, line=errors[0].line,
                          hint=errors[0].hint, also=errors[1:])


def split_deployment(data: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """An old project.yml's ``data`` as (project.yml without the deployment's keys, a target
    holding them): :data:`MOVED`, locations outside the project, and ``spark.conf``'s
    connection settings (``spark.hadoop.*``)."""
    project = copy.deepcopy(dict(data))
    target: dict[str, Any] = {}

    def move(path: tuple[str, ...]) -> None:
        parent: Any = project
        for part in path[:-1]:
            parent = parent.get(part) if isinstance(parent, dict) else None
        if not isinstance(parent, dict) or path[-1] not in parent:
            return
        node = target
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = parent.pop(path[-1])

    for key in MOVED:
        move(key)
    for key in LOCATION_KEYS:
        if _moved_location(project, key):
            move(key)
    conf = _get(project, ("spark", "conf"))
    if isinstance(conf, dict):
        for name in [k for k in conf if str(k).startswith(_CONNECTION_CONF)]:
            move(("spark", "conf", name))
    for section in ("spark", "source"):
        if project.get(section) == {}:
            del project[section]
    if isinstance(project.get("spark"), dict) and project["spark"].get("conf") == {}:
        del project["spark"]["conf"]
        if not project["spark"]:
            del project["spark"]
    return project, target


def write_target(file: Path, profile: str, target: Mapping[str, Any], *,
                 name: str = "dev") -> None:
    """Set ``profile``'s target ``name`` (made its default when the profile is new) in the
    profiles.yml ``file``, keeping every other entry."""
    data = yaml.safe_load(file.read_text(encoding="utf-8")) if file.is_file() else None
    data = data if isinstance(data, dict) else {}
    entry = data.setdefault(profile, {"target": name, "outputs": {}})
    entry.setdefault("outputs", {})[name] = dict(target)
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def migrate(data: Mapping[str, Any], *, profiles: Path, profile: str,
            target: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """An old project.yml's ``data`` split (:func:`split_deployment`): the deployment's keys
    (and ``target``'s) become ``profile``'s ``dev`` target in the profiles.yml ``profiles``;
    returns project.yml's mapping, naming ``profile`` when a target was written."""
    project, moved = split_deployment(data)
    moved = merged(moved, target or {})
    if not moved:
        return project
    write_target(profiles, profile, moved)
    return {**project, "profile": profile}


def merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``over``'s keys over it, mappings merged key by key."""
    out = dict(base)
    for key, value in over.items():
        inner = out.get(key)
        out[key] = merged(inner, value) if isinstance(value, Mapping) and \
            isinstance(inner, Mapping) else value
    return out
