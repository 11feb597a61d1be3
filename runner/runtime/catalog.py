"""Tables by name: register every model's Delta table in Spark's catalog (docs/CATALOG.md).

With ``catalog:`` in project.yml each model's table is an external Delta table named
``[catalog.]schema.alias`` (:mod:`runner.compile.relations`) at its location, registered
through the run's Spark session whichever engine writes (delta-spark's catalog registers a
table delta-rs wrote exactly as one it wrote itself: provider ``delta``, the schema read from
the table's log, so a schema change is visible by name with no metastore call). The metastore
is touched only:

- at start (:meth:`Names.check`, before anything is written): it must answer within the Hive
  client's bounded timeouts (:data:`HIVE_CLIENT_DEFAULTS`), else exit 2 naming its URI; a
  name taken by a table at another location (not this pipeline's) is refused, exit 2;
- at start again, after rebuilds and backfills (:meth:`Names.register`): schemas created if
  missing, each existing table registered if its name is not;
- after the batch that creates a table (:meth:`Names.wrap`): its name registered. A metastore
  that fails then does not stop the stream: the name is registered at the next start.

``CREATE TABLE IF NOT EXISTS`` keeps a name that someone registered between the check and the
statement, silently: so each registration reads the name's location back and refuses (exit 2
at start; mid-stream a ``NameNotRegistered`` note, the stream goes on) when it is not the
model's.

The statements are built as sqlglot trees (names quoted as identifiers, the location a string
literal), never spliced into SQL text.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from runner.checkpoint.catalog_names import write_names
from runner.compile.plan import Plan
from runner.compile.relations import Relation
from runner.errors import ConfigError
from runner.events import BatchDone, Event, NameNotRegistered, Reporter, TableRegistered
from runner.failpoints import failpoint
from runner.project.loader import Project
from runner.sinks.tables import is_table
from runner.spark_client import is_remote
from runner.spark_errors import first_line

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["HIVE_CLIENT_DEFAULTS", "Names", "catalog_session_conf", "local_location",
           "location_of", "register_seeds"]

#: The Hive metastore client's timeouts and retries in a session of a project with
#: ``catalog:``: an unreachable metastore fails the first call after one short retry (Hive's
#: defaults retry for minutes), a hung one after the socket timeout. ``spark.conf`` overrides.
HIVE_CLIENT_DEFAULTS: Mapping[str, str] = {
    "spark.hadoop.hive.metastore.connect.retries": "1",
    "spark.hadoop.hive.metastore.client.connect.retry.delay": "1s",
    "spark.hadoop.hive.metastore.failure.retries": "0",
    "spark.hadoop.hive.metastore.client.socket.timeout": "20s",
}


def catalog_session_conf(project: Project) -> dict[str, str]:
    """The runner's session defaults for the project's catalog ({} without ``catalog:``)."""
    return dict(HIVE_CLIENT_DEFAULTS) if project.config.catalog is not None else {}


def _sql(spark: SparkSession, statement: exp.Expression) -> Any:
    return spark.sql(statement.sql(dialect="spark")).collect()


def local_location(location: str) -> str:
    """A location as Spark's catalog gives it, as the runner names it: ``file:/a/b/`` is the
    folder ``/a/b``; a URI (``s3a://b/t/``) loses its trailing slash.

    >>> local_location("file:/wh/orders/"), local_location("s3a://b/t/")
    ('/wh/orders', 's3a://b/t')
    """
    for prefix in ("file://", "file:"):
        if location.startswith(prefix):
            location = location[len(prefix):]
            break
    return os.path.normpath(location) if "://" not in location else location.rstrip("/")


def _same_place(a: str, b: str) -> bool:
    """Whether two locations name one folder (``s3a://`` is ``s3://`` under Hadoop's name).

    >>> _same_place("file:/wh/t/", "/wh/t"), _same_place("s3a://b/wh/t", "s3://b/wh/t/")
    (True, True)
    """
    def norm(location: str) -> str:
        location = local_location(location)
        return "s3://" + location[len("s3a://"):] if location.startswith("s3a://") else location
    return norm(a) == norm(b)


def location_of(spark: SparkSession, relation: Relation) -> str | None:
    """The location of the table registered as ``relation``, None when there is none (an
    empty string: a table without a location, a view)."""
    if not spark.catalog.tableExists(relation.dotted):
        return None
    rows = _sql(spark, exp.Describe(this=relation.table(), style=exp.var("EXTENDED")))
    return next((str(r[1]) for r in rows if r[0] == "Location"), "")


class Names:
    """The run's catalog names: model -> relation, and the location each must point at."""

    def __init__(self, spark: SparkSession, project: Project, plan: Plan | None, *,
                 report: Reporter, relations: Mapping[str, Relation] | None = None) -> None:
        self.spark = spark
        self.project = project
        self.report = report
        self.relations = dict(relations) if relations is not None else {
            s.name: s.relation for s in (plan.steps if plan else ()) if s.relation is not None}
        self.paths = {m: str(project.table_path(m)) for m in self.relations}
        self.registered: set[str] = set()
        self.broken = False  # the metastore failed mid-stream: the next start registers

    @property
    def conf_origin(self) -> str:
        """The file that sets the metastore: the profile's, else project.yml."""
        return str(self.project.target.file or "project.yml")

    @property
    def uri(self) -> str:
        if is_remote(self.spark):  # Spark Connect: the server's settings, no Hadoop conf
            return (self.spark.conf.get("spark.hadoop.hive.metastore.uris", None)
                    or "(the Spark Connect server's metastore)")
        conf = self.spark.sparkContext.getConf()
        return (conf.get("spark.hadoop.hive.metastore.uris")
                or self.spark.sparkContext._jsc.hadoopConfiguration().get(  # noqa: SLF001
                    "hive.metastore.uris") or "(the cluster's metastore)")

    def check(self) -> None:
        """At start, before anything is written: the metastore answers, and no model's name
        is taken by a table at another location.

        Raises:
            ConfigError: no metastore configured, unreachable, or a name taken (exit 2).
        """
        if not self.relations:
            return
        impl = self.spark.conf.get("spark.sql.catalogImplementation", "in-memory")
        plugged = next(iter(self.relations.values())).catalog is not None  # catalog.name
        # Over Connect the server's session catalog is shared by every session of the server
        # and lives as long as it does: names there are readable by name from its other
        # clients, and each start registers again what a restarted server lost.
        if impl != "hive" and not plugged and not is_remote(self.spark):
            raise ConfigError(
                "catalog: registers the tables in a metastore, and this Spark session has "
                f"none (spark.sql.catalogImplementation is {impl})", path="project.yml",
                hint="set spark.sql.catalogImplementation: hive under spark.conf (project.yml "
                     "or the target) and spark.hadoop.hive.metastore.uris: thrift://HOST:9083 "
                     "under the profile target's spark.conf (or run where the cluster provides "
                     "one); nothing was written")
        first = next(iter(self.relations.values()))
        try:
            self.spark.catalog.databaseExists(first.schema)
        except Exception as e:  # py4j: the Hive client could not connect
            raise ConfigError(f"cannot reach the metastore at {self.uri}: {first_line(e)}",
                              path=self.conf_origin,
                              hint="start the metastore or fix spark.hadoop.hive.metastore.uris "
                                   "in the profile target's spark.conf; nothing was written"
                              ) from e
        for model, relation in self.relations.items():
            where = location_of(self.spark, relation)
            if where is not None and _same_place(where, self.paths[model]):
                self.registered.add(model)  # by an earlier run: nothing to do
            elif where is not None:
                raise ConfigError(
                    f"model {model}: the name {relation.dotted} is taken by a table this "
                    f"pipeline does not own (at {where or 'no location'}; the model's table "
                    f"is {self.paths[model]})", path="project.yml",
                    hint=f"give the model another alias= or schema=, or drop the other table "
                         f"(DROP TABLE {relation.dotted}) if it is no longer used; nothing was "
                         "written")

    def register(self) -> None:
        """Register every model whose table exists and whose name :meth:`check` did not find
        (at start, after rebuilds and backfills); record the names for ``runner status``."""
        if not self.relations:
            return
        write_names(self.project.checkpoint, {m: r.dotted for m, r in self.relations.items()})
        schemas = {(r.catalog, r.schema): r for r in self.relations.values()}
        for relation in schemas.values():
            _sql(self.spark, exp.Create(this=relation.schema_node(), kind="SCHEMA",
                                        exists=True))
        for model in self.relations:
            if model not in self.registered and is_table(self.paths[model]):
                self._register(model)

    def register_tables(self) -> None:
        """Register every table whose name :meth:`check` did not find (seeds: ``runner
        seed``), creating schemas if missing; the checkpoint's record of names is untouched."""
        for relation in {(r.catalog, r.schema): r for r in self.relations.values()}.values():
            _sql(self.spark, exp.Create(this=relation.schema_node(), kind="SCHEMA",
                                        exists=True))
        for name in self.relations:
            if name not in self.registered and is_table(self.paths[name]):
                self._register(name)

    def _register(self, model: str) -> None:
        relation = self.relations[model]
        properties = exp.Properties(expressions=[
            exp.FileFormatProperty(this=exp.var("DELTA")),
            exp.LocationProperty(this=exp.Literal.string(self.paths[model]))])
        failpoint(f"catalog.before_create:{model}")
        try:
            _sql(self.spark, exp.Create(this=relation.table(), kind="TABLE", exists=True,
                                        properties=properties))
            where = location_of(self.spark, relation)
        except Exception as e:  # py4j: the metastore, or no delta data source
            why = first_line(e)
            raise ConfigError(f"model {model}: cannot register {relation.dotted} in the "
                              f"metastore at {self.uri}: {why}",
                              hint="Delta tables are registered through delta-spark's catalog: "
                                   "its jar must be on Spark's classpath (scripts/setup.sh)"
                              if "DATA_SOURCE_NOT_FOUND" in why or "delta" in why.lower()
                              else "check the metastore; the next start registers the name"
                              ) from e
        if where is None or not _same_place(where, self.paths[model]):
            # IF NOT EXISTS kept a table someone registered after check(): not ours
            raise ConfigError(
                f"model {model}: the name {relation.dotted} was taken, after the start-up "
                f"check, by a table this pipeline does not own (at {where or 'no location'}; "
                f"the model's table is {self.paths[model]}); the name was left as it is",
                path="project.yml",
                hint=f"give the model another alias= or schema=, or drop the other table "
                     f"(DROP TABLE {relation.dotted}) if it is no longer used; the model's "
                     "table itself is written as usual")
        self.registered.add(model)
        self.report(TableRegistered(model, relation.dotted))

    def after_batch(self) -> None:
        """Register the tables the batch created (no metastore call when none was)."""
        if self.broken:
            return
        for model in self.relations:
            if model in self.registered or not is_table(self.paths[model]):
                continue
            try:
                self._register(model)
            except ConfigError as e:  # mid-stream: the stream goes on; the next start retries
                self.broken = True
                self.report(NameNotRegistered(e.message))
                return

    def wrap(self, report: Reporter) -> Reporter:
        """``report``, with a :class:`~runner.events.BatchDone` preceded by
        :meth:`after_batch`."""
        if not self.relations:
            return report

        def wrapped(event: Event) -> None:
            if isinstance(event, BatchDone):
                self.after_batch()
            report(event)
        return wrapped


def register_seeds(project: Project, seeds: list[str], *, report: Reporter) -> dict[str, str]:
    """Register seed tables by name as models are (``catalog:``: ``<schema>.<seed>``), with a
    session of the project's Spark settings and the metastore; seed -> its catalog name.

    Raises:
        ConfigError: no metastore, unreachable, or a name taken by another table (exit 2).
    """
    from runner.compile.relations import relation_of
    from runner.project.config import ModelConfig
    from runner.runtime.client.session import build_session, stop_session

    relations = {s: r for s in seeds
                 if (r := relation_of(project.config.catalog, s, ModelConfig())) is not None}
    if not relations:
        return {}
    conf = project.config.spark
    spark = build_session(master=conf.master, remote=conf.remote,
                          conf={**catalog_session_conf(project), **dict(conf.conf)},
                          app_name=f"runner-seed:{project.config.name}",
                          log_dir=str(project.root / "logs"))
    try:
        names = Names(spark, project, None, report=report, relations=relations)
        names.check()
        names.register_tables()
    finally:
        stop_session(spark)
    return {s: r.dotted for s, r in relations.items()}
