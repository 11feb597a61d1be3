"""The change-data-capture config of a merge model (``sequence_by``, ``apply_as_deletes``,
``track_history_column_list``) checked against the model's output columns."""

from __future__ import annotations

from collections.abc import Iterator

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from runner.errors import Violation, did_you_mean
from runner.lint.checks.rules import ModelRule
from runner.lint.reading.context import ModelContext
from runner.lint.spark_types.infer import is_, is_known, type_string
from runner.lint.sql.spark_dialect import SPARK

__all__ = ["ChangeDataCapture"]

#: Types whose values order changes the same way in Spark and in delta-rs' MERGE.
_ORDERABLE = (exp.DType.TINYINT, exp.DType.SMALLINT, exp.DType.INT, exp.DType.BIGINT,
              exp.DType.FLOAT, exp.DType.DOUBLE, exp.DType.DECIMAL, exp.DType.TEXT,
              exp.DType.VARCHAR, exp.DType.CHAR, exp.DType.DATE, exp.DType.DATETIME,
              exp.DType.TIMESTAMP, exp.DType.TIMESTAMPTZ, exp.DType.TIMESTAMPNTZ,
              exp.DType.TIMESTAMPLTZ)


class ChangeDataCapture(ModelRule):
    """sequence_by must be an output column of an orderable type (a number, a string, a date
    or a timestamp); apply_as_deletes a predicate over the model's output columns
    (unqualified); track_history_column_list output columns other than the key."""

    id = "cdc"

    def check(self, ctx: ModelContext) -> Iterator[Violation]:
        config = ctx.model.config
        if config.sequence_by is None or ctx.analysis is None or ctx.analysis.shape.open:
            return
        shape = ctx.analysis.shape
        found = shape.find(config.sequence_by)
        if found is None:
            yield self.at_config(ctx, f"sequence_by '{config.sequence_by}' is not an output "
                                 "column" + did_you_mean(config.sequence_by, shape.names),
                                 f"output columns: {', '.join(shape.names)}")
        elif is_known(found[1]) and not is_(found[1], *_ORDERABLE):
            yield self.at_config(ctx, f"sequence_by '{config.sequence_by}' is "
                                 f"{type_string(found[1])}, which does not order changes",
                                 "use a number (a log position, a version), a string, a date "
                                 "or a timestamp")
        if config.apply_as_deletes is not None:
            yield from self._deletes(ctx, config.apply_as_deletes, shape.names)
        if config.stored_as_scd_type == 2:
            for column in ("valid_from", "valid_to"):
                if shape.find(column) is not None:
                    yield self.at_config(ctx, f"output column '{column}' clashes with the "
                                         "history column of stored_as_scd_type=2",
                                         f"rename it (SELECT ... AS {column}_)")
        keys = {k.lower() for k in config.unique_key}
        for column in config.track_history_column_list or ():
            if column.lower() in keys:
                yield self.at_config(ctx, f"track_history_column_list names the key column "
                                     f"'{column}'", "a key's history is its rows; list the "
                                     "columns whose changes open a new version")
            elif shape.find(column) is None:
                yield self.at_config(ctx, f"track_history_column_list column '{column}' is not "
                                     "an output column" + did_you_mean(column, shape.names))

    def _deletes(self, ctx: ModelContext, text: str, names: list[str]) -> Iterator[Violation]:
        try:
            node = sqlglot.parse_one(text, read=SPARK)
        except (ParseError, TokenError):
            return  # not-a-query reports it (runner.lint.guard)
        for col in node.find_all(exp.Column):
            parts = [p.name for p in col.parts if isinstance(p, exp.Identifier)]
            if len(parts) > 1 and parts[0].lower() in ("source", "target"):
                yield self.at_config(ctx, f"apply_as_deletes: '{col.sql(dialect='spark')}' "
                                     "is qualified; it reads the change's own columns",
                                     f"write {parts[1]} alone, e.g. apply_as_deletes=\"op = 'd'\"")
            elif parts and parts[0].lower() not in {n.lower() for n in names}:
                yield self.at_config(ctx, f"apply_as_deletes: '{parts[0]}' is not an output "
                                     "column" + did_you_mean(parts[0], names),
                                     f"output columns: {', '.join(names)}")
