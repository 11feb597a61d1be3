"""Each model's name in the catalog (docs/CATALOG.md), decided at compile time, offline.

With ``catalog: {schema: analytics}`` in project.yml a model's table is registered as
``analytics.<model>``; dbt's ``schema=`` and ``alias=`` config keys override the schema and
the table name (a model's schema replaces the project's: dbt's default prefixes it with the
target schema, the runner has no targets). Two models may not share a name. Names are SQL
built through sqlglot's AST (:meth:`Relation.table`), never spliced into text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from sqlglot import exp

from runner.errors import Violation
from runner.project.config import CatalogConfig, ModelConfig

__all__ = ["Relation", "relation_of", "relation_violations"]


@dataclass(frozen=True)
class Relation:
    """A table's name in the catalog: ``[catalog.]schema.name``."""

    schema: str
    name: str
    catalog: str | None = None

    @property
    def dotted(self) -> str:
        """``analytics.request_logs`` (dbt-spark's ``relation_name``; every part is an
        identifier of ``[A-Za-z0-9_]``, so no quoting is needed to read it)."""
        return ".".join(p for p in (self.catalog, self.schema, self.name) if p)

    def table(self) -> exp.Table:
        """The name as a sqlglot table node (every part a quoted identifier)."""
        return exp.Table(this=exp.to_identifier(self.name, quoted=True),
                         db=exp.to_identifier(self.schema, quoted=True),
                         catalog=exp.to_identifier(self.catalog, quoted=True)
                         if self.catalog else None)

    def schema_node(self) -> exp.Table:
        """The schema (``[catalog.]schema``) as a node for ``CREATE SCHEMA``."""
        return exp.Table(db=exp.to_identifier(self.schema, quoted=True),
                         catalog=exp.to_identifier(self.catalog, quoted=True)
                         if self.catalog else None)

    @classmethod
    def parse(cls, dotted: str) -> Relation:
        """The inverse of :attr:`dotted`; a bare table name is in Spark's ``default`` schema.

        >>> Relation.parse("crm.customers"), Relation.parse("customers").schema
        (Relation(schema='crm', name='customers', catalog=None), 'default')
        """
        parts = [p.strip("`") for p in dotted.split(".")]
        if len(parts) == 1:
            return cls("default", parts[0])
        return cls(parts[-2], parts[-1], parts[0] if len(parts) >= 3 else None)


def relation_of(catalog: CatalogConfig | None, model: str, config: ModelConfig
                ) -> Relation | None:
    """The model's name in the catalog; None without ``catalog:`` in project.yml.

    >>> relation_of(CatalogConfig(schema="analytics"), "orders", ModelConfig(alias="o2")).dotted
    'analytics.o2'
    """
    if catalog is None:
        return None
    return Relation(schema=(config.database or catalog.database).lower(),
                    name=(config.alias or model).lower(),
                    catalog=catalog.name.lower() if catalog.name else None)


class Named(Protocol):
    """What :func:`relation_violations` needs of a model (a RenderedModel has it)."""

    @property
    def name(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def config(self) -> ModelConfig: ...
    @property
    def config_line(self) -> int | None: ...


def relation_violations(catalog: CatalogConfig | None, models: Sequence[Named]
                        ) -> list[tuple[str, Violation]]:
    """Model errors of the names: ``schema=``/``alias=`` without ``catalog:`` in project.yml,
    and two models with one name (the error names both files). ``(model, violation)`` pairs.
    """
    out: list[tuple[str, Violation]] = []
    if catalog is None:
        for m in models:
            keys = [k for k in ("schema", "alias") if getattr(
                m.config, "database" if k == "schema" else k) is not None]
            if keys:
                out.append((m.name, Violation(
                    "catalog-name", "error", m.path, m.config_line, None,
                    f"config {' and '.join(keys)} name a catalog table, and project.yml has no "
                    "catalog:", "add `catalog: {schema: <schema>}` to project.yml to register "
                    "the tables by name, or remove the key")))
        return out
    seen: dict[str, Named] = {}
    for m in models:
        relation = relation_of(catalog, m.name, m.config)
        assert relation is not None
        first = seen.setdefault(relation.dotted, m)
        if first is not m:
            out.append((m.name, Violation(
                "catalog-name", "error", m.path, m.config_line, None,
                f"models {first.name} ({first.path}) and {m.name} ({m.path}) are both named "
                f"{relation.dotted} in the catalog",
                "give one of them another alias= or schema= in its config")))
    return out
