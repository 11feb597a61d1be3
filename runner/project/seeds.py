"""Seeds: small reference data versioned with the project, ``seeds/<name>.csv`` (a header row).

Column types are declared in any ``seeds/*.yml`` (dbt's shape)::

    seeds:
      - name: endpoint_owners
        description: Which team owns each endpoint.
        columns:
          - {name: endpoint, data_type: string}
          - {name: team, data_type: string}

or, for the columns not declared, inferred from every row: BIGINT, DOUBLE, BOOLEAN, DATE,
TIMESTAMP, else STRING (an empty cell is a null and fits any type). A model reads a seed with
``{{ ref('<name>') }}``; its version is its content hash (:attr:`Seed.content_hash`).
Its keys (:func:`seed_keys`, the columns no two rows share a value of) are read from the file
once, when lint first asks: a join on a seed's key keeps a merge model's key unique.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from runner.errors import ConfigError, did_you_mean
from runner.project.sources import ColumnDecl, load_yml, strict_error
from runner.project.yaml_template import yaml_line

__all__ = ["MAX_SEED_BYTES", "Seed", "infer_type", "load_seeds", "seed_keys", "seed_rows"]

#: A seed larger than this is refused: declare a source (a Delta table) instead.
MAX_SEED_BYTES = 50 * 1024 * 1024
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Seed:
    name: str
    path: Path  # the CSV file, absolute
    columns: tuple[tuple[str, str], ...]  # (name, type: declared as written, or inferred)
    content_hash: str  # sha256 of the CSV's bytes and the declared types
    rows: int
    file: str = ""  # the CSV relative to the project directory
    description: str | None = None
    descriptions: tuple[tuple[str, str], ...] = ()


class _SeedDecl(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(pattern=_NAME.pattern)
    description: str | None = None
    columns: tuple[ColumnDecl, ...] = ()


class _SeedsFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    seeds: tuple[_SeedDecl, ...] = ()


_INT = re.compile(r"^[+-]?\d+$")
_FLOAT = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$")
_ORDER = ("BIGINT", "DOUBLE", "BOOLEAN", "DATE", "TIMESTAMP")


def _fits(value: str, kind: str) -> bool:
    if kind == "BIGINT":
        return bool(_INT.match(value)) and -2**63 <= int(value) < 2**63
    if kind == "DOUBLE":
        return bool(_FLOAT.match(value))
    if kind == "BOOLEAN":
        return value.lower() in ("true", "false")
    if kind == "DATE":
        return bool(_DATE.match(value))
    return bool(_TIMESTAMP.match(value))


def infer_type(values: Sequence[str]) -> str:
    """The narrowest of BIGINT, DOUBLE, BOOLEAN, DATE, TIMESTAMP every non-empty value fits,
    else STRING (all empty: STRING).

    >>> infer_type(["1", "2", ""]), infer_type(["1", "2.5"]), infer_type(["2026-01-01", "x"])
    ('BIGINT', 'DOUBLE', 'STRING')
    """
    present = [v for v in values if v != ""]
    if not present:
        return "STRING"
    return next((k for k in _ORDER if all(_fits(v, k) for v in present)), "STRING")


def _declarations(root: Path) -> dict[str, tuple[_SeedDecl, str, int | None]]:
    """Seed name (lower-cased) -> its declaration, its file and line, from ``seeds/*.yml``."""
    found: dict[str, tuple[_SeedDecl, str, int | None]] = {}
    base = root / "seeds"
    files = sorted(p for ext in ("*.yml", "*.yaml") for p in base.rglob(ext) if p.is_file())
    for file in files:
        rel = file.relative_to(root).as_posix()
        text, data = load_yml(file, rel)
        try:
            parsed = _SeedsFile.model_validate(data)
        except ValidationError as e:
            raise strict_error(e, _SeedsFile, text=text, path=rel, prefix=()) from e
        for i, decl in enumerate(parsed.seeds):
            line = yaml_line(text, ("seeds", i))
            if decl.name.lower() in found:
                _, other, other_line = found[decl.name.lower()]
                raise ConfigError(f"seed '{decl.name}' is declared twice ({other}:{other_line} "
                                  "and here)", path=rel, line=line)
            found[decl.name.lower()] = (decl, rel, line)
    return found


def _read(root: Path, file: Path, decl: tuple[_SeedDecl, str, int | None] | None) -> Seed:
    rel = file.relative_to(root).as_posix()
    size = file.stat().st_size
    if size > MAX_SEED_BYTES:
        raise ConfigError(f"seed '{file.stem}' has {size:,} bytes; a seed holds at most "
                          f"{MAX_SEED_BYTES // 2**20} MB", path=rel,
                          hint="write the data to a Delta table and declare it under sources: "
                               "in a models/*.yml")
    data = file.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ConfigError(f"seed '{file.stem}' is not UTF-8 text: {e.reason} at byte {e.start}",
                          path=rel) from e
    rows = list(csv.reader(io.StringIO(text, newline="")))
    if not rows or not any(cell.strip() for cell in rows[0]):
        raise ConfigError(f"seed '{file.stem}' has no header row", path=rel,
                          hint="the first line names the columns: endpoint,team")
    header = [h.strip() for h in rows[0]]
    body = [r for r in rows[1:] if r != []]
    seen: set[str] = set()
    for h in header:
        if not _NAME.match(h) or h.lower() in seen:
            raise ConfigError(f"seed '{file.stem}': column '{h}' is "
                              + ("named twice" if h.lower() in seen else "not a valid name"),
                              path=rel, line=1, hint="letters, digits and _; unique names")
        seen.add(h.lower())
    for n, r in enumerate(body, start=2):
        if len(r) != len(header):
            raise ConfigError(f"seed '{file.stem}': a row has {len(r)} fields, the header "
                              f"{len(header)}", path=rel, line=n)
    declared: dict[str, ColumnDecl] = {}
    description = None
    if decl is not None:
        spec, yml, _ = decl
        description = spec.description
        for c in spec.columns:
            if c.name.lower() not in seen:
                raise ConfigError(f"seed '{spec.name}' declares column '{c.name}', which "
                                  f"{rel} does not have" + did_you_mean(c.name, header),
                                  path=yml, line=None)
            declared[c.name.lower()] = c
    columns = tuple(
        (h, declared[h.lower()].data_type if h.lower() in declared
         else infer_type([r[i] for r in body]))
        for i, h in enumerate(header))
    types = json.dumps([[n, t] for n, t in columns if n.lower() in declared])
    digest = hashlib.sha256(data + b"\0" + types.encode()).hexdigest()
    return Seed(name=file.stem, path=file.resolve(), columns=columns, content_hash=digest,
                rows=len(body), file=rel, description=description,
                descriptions=tuple((c.name, c.description) for c in declared.values()
                                   if c.description))


def load_seeds(root: Path, *, models: Mapping[str, str]) -> tuple[Seed, ...]:
    """Every ``seeds/**/<name>.csv`` of the project with its columns and content hash.

    Args:
        models: lower-cased -> path of every model (a seed may not share a model's name).

    Raises:
        ConfigError: a bad file name, a clash with a model or another seed, a declaration
            of a seed that does not exist, a seed over :data:`MAX_SEED_BYTES`, a malformed CSV.
    """
    base = root / "seeds"
    if not base.is_dir():
        return ()
    decls = _declarations(root)
    seeds: list[Seed] = []
    by_name: dict[str, str] = {}
    for file in sorted(p for p in base.rglob("*.csv") if p.is_file()):
        rel = file.relative_to(root).as_posix()
        low = file.stem.lower()
        if not _NAME.match(file.stem):
            raise ConfigError(f"seed file name '{file.name}' is not a valid table name "
                              "(letters, digits and _; not starting with a digit)", path=rel)
        if low in models:
            raise ConfigError(f"seed '{file.stem}' has the name of model {models[low]}: "
                              "ref() could not tell them apart", path=rel,
                              hint="rename the seed or the model")
        if low in by_name:
            raise ConfigError(f"two seeds are named '{file.stem}': {by_name[low]} and {rel}",
                              path=rel, hint="rename one file")
        by_name[low] = rel
        seeds.append(_read(root, file, decls.get(low)))
    for low, (decl, yml, line) in decls.items():
        if low not in by_name:
            raise ConfigError(f"seed '{decl.name}' is declared but there is no "
                              f"seeds/{decl.name}.csv" + did_you_mean(
                                  decl.name, [s.name for s in seeds]), path=yml, line=line)
    return tuple(seeds)


def _timestamp(value: str) -> datetime:
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00").replace(" ", "T", 1))
    if parsed.tzinfo is not None:  # an offset: the UTC instant (Spark's session time zone: UTC)
        parsed = parsed.astimezone(UTC).replace(tzinfo=None)
    return parsed


_CONVERT: dict[str, Callable[[str], Any]] = {
    "BIGINT": int, "INT": int, "SMALLINT": int, "TINYINT": int,
    "DOUBLE": float, "FLOAT": float,
    "BOOLEAN": lambda v: v.lower() == "true" if v.lower() in ("true", "false") else _bad(v),
    "DATE": date.fromisoformat, "TIMESTAMP": _timestamp, "STRING": str,
}


def _bad(value: str) -> Any:
    raise ValueError(value)


def seed_rows(seed: Seed) -> list[tuple[Any, ...]]:
    """The seed's rows as Python values of its column types (an empty cell: None), in file
    order: what a batch joins. Types other than BIGINT, INT, SMALLINT, TINYINT, DOUBLE,
    FLOAT, BOOLEAN, DATE, TIMESTAMP and STRING (declared ``decimal(10,2)``...) stay text: the
    reader casts them to the declared type.

    Raises:
        ConfigError: a cell that is not a value of its column's type (file, line, column).
    """
    text = seed.path.read_bytes().decode("utf-8-sig")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    converters = [_CONVERT.get(t.strip().upper(), str) for _, t in seed.columns]
    out: list[tuple[Any, ...]] = []
    for number, row in enumerate(rows[1:], start=2):
        if row == []:
            continue
        values = []
        for (name, kind), convert, cell in zip(seed.columns, converters, row):
            try:
                values.append(None if cell == "" else convert(cell))
            except ValueError as e:
                raise ConfigError(f"seed '{seed.name}': column {name} is {kind}, but a row "
                                  f"holds {cell!r}", path=seed.file, line=number,
                                  hint="fix the value, or declare the column's type in "
                                       "seeds/*.yml") from e
        out.append(tuple(values))
    return out


def _comparable(value: Any) -> Any:
    """``value`` as Spark's ``=`` and GROUP BY see it: every NaN is one value (Python's
    ``nan != nan`` would count two NaN rows as distinct)."""
    return "NaN" if isinstance(value, float) and math.isnan(value) else value


@cache
def seed_keys(seed: Seed) -> tuple[frozenset[str], ...]:
    """The seed's single-column keys (lower-cased): the columns no two rows share a value of,
    compared as typed values (BIGINT ``1`` and ``01`` are one value; TIMESTAMPs as instants)
    and an empty cell counted as a value, as GROUP BY counts null. Only columns of the types
    :func:`seed_rows` converts count (a declared ``decimal(10,2)`` stays text, where ``1.0``
    and ``1.00`` would look distinct). Read once per seed (cached: a :class:`Seed` is frozen
    and carries its content hash); a seed whose cells do not fit their types has no key
    (compile reports nothing here: reading it fails the run with the cell's line).

    >>> seed_keys(Seed("s", Path("/nonexistent.csv"), (("a", "BIGINT"),), "h", 0))
    ()
    """
    try:
        rows = seed_rows(seed)
    except (ConfigError, OSError):
        return ()
    keys = []
    for i, (name, kind) in enumerate(seed.columns):
        if kind.strip().upper() not in _CONVERT:
            continue
        values = {_comparable(row[i]) for row in rows}
        if len(values) == len(rows):
            keys.append(frozenset({name.lower()}))
    return tuple(keys)
