"""Where the pipeline's locations are, and the refusals that keep them from destroying data.

``--full-refresh`` deletes the checkpoint's contents and every model table; a rebuild deletes
one table. So a checkpoint, warehouse, dead-letter table or source folder that is, contains or
lies inside another of them, the project directory or the project's own files, the filesystem
root or a home directory would let an ordinary command delete what the user never meant to
hand over. :func:`check_locations` refuses such a project when it is loaded (every command
loads it first), before anything is read or written, with exit 2.

Locations are local paths (relative to the project directory unless absolute, ``~`` expanded,
``file:`` URIs taken as the local path they name) or object-store URIs (``s3://``, ``s3a://``,
``abfss://``, ``abfs://``, ``gs://``: :class:`~runner.storage.objects.ObjectPath`; ``az://`` is
spelled as ABFS's ``abfss://container@account...`` when loaded), compared as bucket + prefix.
Other URIs (``hdfs://``, ``dbfs:/`` ...) are refused by name rather than joined onto the
project directory: the runner keeps its lease, registry and ledger in the checkpoint through
its storage layer, which speaks local disk and those object stores.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from runner.errors import ConfigError
from runner.project.config import ProjectConfig
from runner.project.yaml_template import yaml_line
from runner.storage.objects import SCHEMES, ObjectPath, object_path, split_uri
from runner.storage.ops import Location

__all__ = [
    "ProjectLocations",
    "abfs_spelling",
    "check_locations",
    "check_project_paths",
    "is_uri",
    "resolve_location",
]

#: ``scheme:/...``: a URI, never a relative path (``s3://b/k``, ``dbfs:/mnt/x``, ``file:///x``).
_URI = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]+):/")
#: The URI schemes a location may have (``az://`` becomes ABFS's spelling: :func:`abfs_spelling`).
_SPOKEN = sorted(f"{s}://" for s in SCHEMES)
#: An Azure storage account's name, as Azure allows it.
_AZURE_ACCOUNT = re.compile(r"[a-z0-9]{3,24}")
#: The project's own files: no managed location may be, contain or lie inside one of them.
PROJECT_FILES = ("project.yml", "models", "macros", "seeds", "target", ".git")


def is_uri(value: str) -> bool:
    """``value`` names a location by URI (``s3://...``, ``file:///...``), not by path."""
    return _URI.match(value) is not None


def resolve_location(root: Path, value: str, *, key: str = "path",
                     options: Mapping[str, str] | None = None) -> Location:
    """The location ``value`` names: an object-store URI as an
    :class:`~runner.storage.objects.ObjectPath` (with the explicit storage ``options``);
    otherwise a local path, relative to ``root`` unless absolute, ``~`` expanded, a ``file:``
    URI as its path. Not resolved through symlinks (callers compare with
    :meth:`Path.resolve`).

    Raises:
        ConfigError: ``value`` is a URI of another scheme, an object-store URI without a
            bucket, or a ``file:`` URI naming another host or a relative path.
    """
    match = _URI.match(value)
    if match is None:
        path = Path(value).expanduser()
        return path if path.is_absolute() else root / path
    scheme = match["scheme"].lower()
    if scheme in ("az", "azure"):
        value, scheme = abfs_spelling(value, options, key=key), "abfss"
    if scheme in SCHEMES:
        if not split_uri(value)[1]:
            raise ConfigError(f"{key}: {value!r} names no bucket", path="project.yml",
                              hint=f"write {scheme}://<bucket>/<prefix>")
        return object_path(value, options)
    if scheme != "file":
        raise ConfigError(
            f"{key}: {value!r} is a {match['scheme']}: URI; the runner's storage layer speaks "
            f"local paths and {', '.join(_SPOKEN)}",
            path="project.yml",
            hint="give an object-store URI of one of those schemes, a mounted path "
                 "(a Databricks /dbfs or /Volumes path), or a local path")
    url = urlparse(value)
    if url.netloc not in ("", "localhost") or not url.path.startswith("/"):
        raise ConfigError(f"{key}: {value!r} is not a local file: URI", path="project.yml",
                          hint="write file:///absolute/path, or a plain path")
    return Path(unquote(url.path))


def abfs_spelling(value: str, options: Mapping[str, str] | None = None, *,
                  key: str = "path") -> str:
    """An ``az://container/path`` (or ``azure://``) location in the spelling Spark's ABFS
    connector takes, ``abfss://container@ACCOUNT.dfs.core.windows.net/path`` (``abfs://`` to a
    local emulator), with the account of ``AZURE_STORAGE_ACCOUNT_NAME`` or the target's
    ``storage:``; any other value unchanged. Hadoop has no ``az`` file system and the runner
    hands its locations to Spark, so the location is spelled once, at load, for all three
    consumers (Spark, delta-rs and the runner's own files all take the ABFS spelling).

    Raises:
        ConfigError: an ``az://`` location while no storage account is named.

    >>> abfs_spelling("az://data/cp", {"azure_storage_account_name": "acct"})
    'abfss://data@acct.dfs.core.windows.net/cp'
    >>> abfs_spelling("s3://b/cp")
    's3://b/cp'
    """
    match = _URI.match(value)
    if match is None or match["scheme"].lower() not in ("az", "azure"):
        return value
    from runner.storage.settings import storage_settings

    container, _, rest = value.split("://", 1)[1].partition("/")
    if not container:
        raise ConfigError(f"{key}: {value!r} names no container", path="project.yml",
                          hint="write az://<container>/<prefix>")
    settings = storage_settings(value, options)  # an unknown option is its own error
    account = settings.storage_options.get("azure_storage_account_name")
    if account is not None and not _AZURE_ACCOUNT.fullmatch(account):
        # it becomes the URI's host part: nothing but a name may get there
        raise ConfigError(f"{key}: {value!r}: {account!r} is not an Azure storage account name "
                          "(3 to 24 lowercase letters and digits)", path="project.yml",
                          hint="set AZURE_STORAGE_ACCOUNT_NAME or storage: "
                               "{azure_storage_account_name: ...} to the account's name")
    try:
        return settings.spark_uri()
    except ConfigError as e:
        raise ConfigError(
            f"{key}: {value!r}: Spark reaches Azure storage through its ABFS connector, which "
            "names the storage account in the URI, and no account is set", path="project.yml",
            hint=f"set AZURE_STORAGE_ACCOUNT_NAME (or storage: {{azure_storage_account_name: "
                 f"...}}), or write abfss://{container}@<account>.dfs.core."
                 f"windows.net/{rest}") from e


@dataclass(frozen=True)
class ProjectLocations:
    """The resolved locations of one project, as :func:`check_locations` compares them."""

    root: Path
    checkpoint: Location
    warehouse: Location
    dead_letter: Location
    source: Location | None  # files source; None for Kafka
    tables: tuple[Location, ...]  # <warehouse>/<model>, the dead-letter table included


def _real(path: Location) -> Location:
    return path.resolve()  # symlinks followed for the part that exists


def _overlap(a: Location, b: Location) -> str | None:
    if a == b:
        return "is"
    if b in a.parents:
        return "lies inside"
    if a in b.parents:
        return "contains"
    return None


def _homes() -> set[Path]:
    """The current user's home directory ($HOME, and the password database's)."""
    homes = {os.path.expanduser("~"), os.environ.get("HOME") or ""}
    return {Path(h).resolve() for h in homes if os.path.isabs(h)}


def _protected(path: Location) -> str | None:
    """Why ``path`` may never be a managed location: the root (of the file system or of a
    bucket), a home directory, a folder holding every user's homes, or a folder containing
    the current user's home."""
    if isinstance(path, ObjectPath):
        return None if path.key else f"the root of bucket {path.bucket}"
    if path == Path(path.anchor):
        return "the filesystem root"
    if path in (Path("/home"), Path("/Users")):
        return "the folder of every user's home directory"
    if path == Path("/root") or path.parent in (Path("/home"), Path("/Users")):
        return "a home directory"
    for home in _homes():
        if path == home:
            return "a home directory ($HOME)"
        if path in home.parents:
            return f"a folder containing the home directory {home}"
    return None


def _line(text: str | None, key: str) -> int | None:
    return yaml_line(text, tuple(key.split("."))) if text else None


def check_locations(loc: ProjectLocations, *, text: str | None = None,
                    files: Mapping[str, str] | None = None) -> None:
    """Refuse locations that an ordinary command could destroy data through.

    Args:
        loc: the project's locations (see :class:`ProjectLocations`).
        text: project.yml's rendered text, for the line of the offending key.
        files: key -> the file that set it, when not project.yml (the profile's target).

    Raises:
        ConfigError: every offending location, each naming its key, its line and the fix.
    """
    errors: list[ConfigError] = []

    def refuse(key: str, message: str, hint: str) -> None:
        where = (files or {}).get(key)
        errors.append(ConfigError(f"{key}: {message}", path=where or "project.yml",
                                  line=None if where else _line(text, key), hint=hint))

    root = _real(loc.root)
    managed: list[tuple[str, Location]] = [("checkpoint", _real(loc.checkpoint)),
                                       ("warehouse", _real(loc.warehouse))]
    if loc.source is not None:
        managed.append(("source.path", _real(loc.source)))
    for key, path in managed:
        why = _protected(path)
        if why:
            refuse(key, f"{path} is {why}; a --full-refresh or a rebuild deletes what the "
                        f"{key.split('.')[0]} holds", f"give {key} a folder of its own")
            continue
        if path == root or path in root.parents:
            refuse(key, f"{path} {'is' if path == root else 'contains'} the project directory "
                        f"{root}; a --full-refresh would delete project.yml, models/ and .git",
                   f"give {key} a folder of its own, e.g. {root / ('_' + key.split('.')[0])}")
            continue
        for own in PROJECT_FILES:
            how = _overlap(path, _real(root / own))
            if how:
                refuse(key, f"{path} {how} the project's {own}",
                       f"give {key} a folder of its own, outside {own}")
                break
    for i, (key_a, a) in enumerate(managed):
        for key_b, b in managed[i + 1:]:
            how = _overlap(a, b)
            if how:
                refuse(key_a, f"{a} {how} {key_b} {b}; each needs a folder of its own "
                              "(a --full-refresh of one would delete the other)",
                       f"move {key_a} or {key_b} so that neither contains the other")
    if not errors:
        for table in loc.tables:
            key = "dead_letter" if table == loc.dead_letter else "warehouse"
            path = _real(table)
            why = _protected(path)
            if why:
                refuse(key, f"table {table.name} would live at {path}, which is {why}; "
                            "--full-refresh and rebuilds delete a table's folder",
                       "point warehouse at a folder that holds only this pipeline's tables, "
                       "or rename the model")
    if errors:
        raise ConfigError(errors[0].message, path=errors[0].path, line=errors[0].line,
                          hint=errors[0].hint, also=errors[1:])


def check_project_paths(root: Path, config: ProjectConfig, *, tables: Iterable[str],
                        text: str | None = None,
                        lookups: Iterable[tuple[str, int | None, str, str]] = (),
                        files: Mapping[str, str] | None = None) -> None:
    """Resolve the pipeline's locations and refuse the unsafe ones (see :func:`check_locations`).

    Args:
        root: the project directory.
        config: project.yml, validated.
        tables: the names of the tables under the warehouse (models and the dead-letter table).
        text: project.yml's rendered text, for line numbers.
        lookups: (file, line, what, location) of each declared source table and seed: a
            local one may not be, contain or lie inside the checkpoint or the warehouse
            (remote URIs and catalog names are not compared).
        files: location key -> the file that set it, when not project.yml (the target's).

    Raises:
        ConfigError: a remote URI, or a location that overlaps another, the project, the
            filesystem root or a home directory; a source overlapping the checkpoint or the
            warehouse.
    """
    values = [("checkpoint", config.checkpoint), ("warehouse", config.warehouse)]
    if config.source.type == "files":
        values.append(("source.path", config.source.path))
    paths: dict[str, Location] = {}
    for key, value in values:
        try:
            paths[key] = resolve_location(root, value, key=key, options=config.storage)
        except ConfigError as e:
            where = (files or {}).get(key)
            raise ConfigError(e.message, path=where or "project.yml",
                              line=None if where else _line(text, key), hint=e.hint) from e
    warehouse = paths["warehouse"]
    check_locations(ProjectLocations(
        root=root, checkpoint=paths["checkpoint"], warehouse=warehouse,
        dead_letter=warehouse / config.dead_letter, source=paths.get("source.path"),
        tables=tuple(warehouse / name for name in (*tables, config.dead_letter))), text=text,
        files=files)
    _check_lookups(lookups, paths)


def _check_lookups(lookups: Iterable[tuple[str, int | None, str, str]],
                   paths: dict[str, Location]) -> None:
    """A source or seed read per batch must stay out of what --full-refresh deletes or
    rewrites (the checkpoint, the warehouse), and must not hold them."""
    managed = [(key, _real(paths[key])) for key in ("checkpoint", "warehouse")]
    for file, line, what, location in lookups:
        if is_uri(location) or not os.path.isabs(location):
            continue
        where = _real(Path(location))
        for key, path in managed:
            how = _overlap(where, path)
            if how:
                raise ConfigError(f"{what}: {where} {how} the {key} {path}; a --full-refresh "
                                  f"or a rebuild would delete or rewrite reference data",
                                  path=file, line=line,
                                  hint=f"keep reference data outside the {key}")
