"""What ``runner stream`` would refuse in a project before its first batch, checked by
``compile`` without Spark: compile is the pull-request gate, so a project it passes must not
be one the stream turns down at start-up.

project.yml's own values (keys, types, the trigger interval) are checked when it is loaded;
this adds the checks that need more than one value or the source's own rules.
"""

from __future__ import annotations

from runner.errors import ConfigError
from runner.project.loader import Project

__all__ = ["check_project"]


def check_project(project: Project) -> None:
    """Refuse a project ``runner stream`` would refuse at start-up.

    Raises:
        ConfigError: no model files; the event schema declares a metadata column's name;
            Kafka topics, starting offsets or source options the reader refuses.
    """
    if not project.models:
        raise ConfigError(f"no models: {project.root / 'models'} is missing or holds no .sql "
                          "files", hint="write one SELECT per table as models/<table>.sql")
    reserved = {name.lower() for name in project.parsed_events_columns}
    clash = [f.name for f in project.schema.fields if f.name.lower() in reserved]
    if clash:
        raise ConfigError(f"schema: field(s) {clash} clash with the runner's metadata columns "
                          f"{sorted(project.parsed_events_columns)}", path="project.yml",
                          hint="rename the field in the schema")
    source = project.config.source
    if source.type != "kafka":
        return
    # imported here: a files project's compile (the common pull-request check) skips it
    from runner.sources.kafka.options import KafkaSourceOptions

    if source.bootstrap_servers is None:  # compile needs no brokers (a pull request's CI
        # has no profile): the rest is checked as the reader will check it
        source = source.model_copy(update={"bootstrap_servers": "the-target's-brokers:0"})
    try:
        KafkaSourceOptions.from_source(source)  # what the reader builds at start-up
    except ConfigError as e:
        where = str(project.target.file) if project.target.file else "project.yml"
        raise ConfigError(f"source: {e.message}", path=where, hint=e.hint) from e
