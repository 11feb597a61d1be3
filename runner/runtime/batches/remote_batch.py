"""``foreachBatch``'s function over Spark Connect (docs/CONNECT.md).

Over Connect the function is pickled and runs in a Python worker **on the server** (the
server's ``PYSPARK_PYTHON``, with the runner installed): it may hold no lock, no client session
and nothing of the client's, and nothing it changes in memory reaches the client. So
:class:`RemoteBatch` carries only data (the plan, the sinks, the checkpoint, the engine's
name) and, per batch, does on the server what the classic query's function does in the
runner's process, each through the storage layer on locations client and server share:

1. keeps the Kafka offsets, records (on a replay: compares) the batch's input;
2. runs :func:`~runner.runtime.batches.batch.run_batch` with a writer of the batch's own
   session (delta-spark's SQL, or delta-rs on the worker), the parked models read from the
   registry;
3. parks the batch's failed models in the registry, records the batch in the ledger (and
   maintains the tables when due) before Spark's commit-log entry, as the classic path does;
4. leaves the :class:`~runner.runtime.batches.batch.BatchResult` (or the batch's runner
   error) under ``<checkpoint>/connect/<run>/``, where the client of that run reads it
   (:class:`ResultFiles`) for its progress lines, summary and exit code. A folder per run:
   the query of a killed client may still finish (or fail) a batch on the server after the
   next client started, and that client must not take it for one of its own.

The worker holds no lock of its own: before it records the batch's input, before each
commit (the writer's ``permit``: every Delta commit of either engine), and before it parks
models and writes the ledger, it checks the client's :class:`~runner.checkpoint.lock.
RemotePermit` (the lock file, read through the storage layer), as the classic path checks the
client's own lock. In an object store every write of the runner's files under the checkpoint
is fenced by it too (:mod:`runner.storage.fence`). A worker whose client lost the checkpoint
(another runner took it, or the client died) fails the batch with
:class:`~runner.errors.LeaseLostError` before committing; the batch replays on the next start.

Those files are JSON of plain fields, never pickles: whoever can write under the checkpoint
could otherwise run code in the client when it reads them. An error comes back as one of
:mod:`runner.errors`' classes by name (its message, hint, place and exit code), else as a
:class:`~runner.errors.RunnerError` with the exit code it had.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from runner import errors
from runner.checkpoint.registry import load_registry
from runner.errors import RunnerError
from runner.runtime.batches.batch import BatchPlan, BatchResult, run_batch
from runner.runtime.batches.parking import ParkedError, record_parked
from runner.sinks.base import WriteResult
from runner.storage import fence
from runner.storage.objects import ObjectPath
from runner.storage.ops import Location, names, read_versioned, write_atomic

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from runner.checkpoint.lock import RemotePermit
    from runner.project.loader import Project
    from runner.sources.same_input import ReplayGuard

__all__ = ["RESULTS_FOLDER", "RemoteBatch", "ResultFiles", "dump_error", "dump_result",
           "load_error", "load_result"]

#: Under the checkpoint, a folder per run: one file per finished batch (``<id>.result``) or
#: failed one (``<id>.failed``), written by the server's worker, read by the run's client.
RESULTS_FOLDER = "connect"


def _folder(checkpoint: Location, run: str) -> Location:
    return checkpoint / RESULTS_FOLDER / run


@dataclass
class RemoteBatch:
    """A picklable ``foreachBatch`` function: everything it needs is data.

    ``bp``'s writer is the client's (not pickled): the worker makes its own with
    ``engine`` and ``arrow_max_rows`` on the batch's session, whose commits ask ``permit``
    (the client's lock). ``run`` names this client run's results folder.
    """

    bp: BatchPlan
    project: Project
    query_id: str
    guard: ReplayGuard
    engine: str
    arrow_max_rows: int | None
    keep: Callable[[int], object]
    permit: RemotePermit
    run: str
    _server: dict[str, Any] = field(default_factory=dict, repr=False)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["bp"] = replace(self.bp, writer=None)  # type: ignore[arg-type]
        state["_server"] = {}
        return state

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        checkpoint, permit = self.project.checkpoint, self.permit.check
        folder = _folder(checkpoint, self.run)
        self._fence()
        try:
            permit()  # the client still holds the checkpoint: else nothing is recorded
            self.keep(batch_id)
            self.guard(batch_id)  # before any table commits it: record (replayed: compare)
            bp = self._plan(df)
            parked = {m for m, e in (load_registry(checkpoint) or {}).items()
                      if e.state == "parked"}
            result = run_batch(bp, df, batch_id, frozenset(parked))
            permit()  # the registry and the ledger entry: the classic path's fence
            record_parked(checkpoint, result.parked)
            self._bookkeeper(bp).after_batch(result)
        except RunnerError as e:  # the client reads why, whoever holds the lock now
            write_atomic(folder / f"{batch_id}.failed", dump_error(e), fenced=False)
            raise
        write_atomic(folder / f"{batch_id}.result", dump_result(result))

    def _fence(self) -> None:
        """In an object store: every write under the checkpoint from this worker asks the
        permit first (runner.storage.fence), once per worker process."""
        lock = self.permit.path
        if isinstance(lock, ObjectPath) and "fenced" not in self._server:
            fence.hold(lock, self.permit.check)
            self._server["fenced"] = True

    def _plan(self, df: DataFrame) -> BatchPlan:
        from runner.sinks import make_writer

        writer = make_writer(self.engine, df.sparkSession,  # type: ignore[arg-type]
                             arrow_max_rows=self.arrow_max_rows)
        writer.permit = self.permit.check
        return replace(self.bp, writer=writer)

    def _bookkeeper(self, bp: BatchPlan) -> Any:
        """One per worker process (it keeps the last ledger entry's versions)."""
        from runner.runtime.after_batch import Bookkeeper

        if "books" not in self._server:
            self._server["books"] = Bookkeeper(self.project, bp, query_id=self.query_id)
        return self._server["books"]


def dump_result(result: BatchResult) -> bytes:
    """A batch's result as JSON (every field is a number, a string, or a mapping of them)."""
    return json.dumps(asdict(result), sort_keys=True).encode()


def load_result(data: bytes) -> BatchResult:
    """:func:`dump_result`'s inverse; raises ``ValueError`` on anything else."""
    d = json.loads(data)
    try:
        return BatchResult(
            batch_id=int(d["batch_id"]), input_rows=int(d["input_rows"]),
            dead_letters=int(d["dead_letters"]), seconds=float(d["seconds"]),
            writes=tuple(WriteResult(**w) for w in d["writes"]),
            expectations={str(m): {str(k): int(v) for k, v in e.items()}
                          for m, e in d["expectations"].items()},
            parked={str(m): ParkedError(**p) for m, p in d["parked"].items()})
    except (KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"not a batch result: {e}") from e


#: The error classes a failure file may name: :mod:`runner.errors`' own, nothing else.
_ERRORS: dict[str, type[RunnerError]] = {
    name: cls for name in errors.__all__
    if isinstance(cls := getattr(errors, name, None), type) and issubclass(cls, RunnerError)}


def dump_error(error: RunnerError) -> bytes:
    """The error as the client raises it: its class's name, message, hint, place, exit code
    (and a Kafka refusal's error class)."""
    return json.dumps({
        "class": type(error).__name__, "message": error.message, "hint": error.hint,
        "path": error.path, "line": error.line, "column": error.column,
        "exit_code": error.exit_code, "error_class": getattr(error, "error_class", None),
    }, sort_keys=True).encode()


def load_error(data: bytes) -> RunnerError:
    """:func:`dump_error`'s inverse: the named class when it is one of :data:`_ERRORS`
    (built without running its own ``__init__``), else a :class:`RunnerError` keeping the
    exit code."""
    d = json.loads(data)
    if not isinstance(d, dict):
        raise ValueError("not a batch error")
    cls = _ERRORS.get(str(d.get("class")), RunnerError)
    error = cls.__new__(cls)
    RunnerError.__init__(error, str(d.get("message", "")), hint=_opt_str(d.get("hint")),
                         path=_opt_str(d.get("path")), line=_opt_int(d.get("line")),
                         column=_opt_int(d.get("column")))
    if cls is RunnerError and isinstance(d.get("exit_code"), int):
        error.exit_code = d["exit_code"]
    if isinstance(error, errors.StorageError):
        error.strerror, error.filename = error.message, None
    if isinstance(error, errors.KafkaRecordError):
        error.error_class = str(d.get("error_class") or "")
    return error


def _opt_str(value: object) -> str | None:
    return None if value is None else str(value)


def _opt_int(value: object) -> int | None:
    return value if isinstance(value, int) else None


class ResultFiles:
    """The client's side: the batches the server's worker finished, in order, each once."""

    def __init__(self, checkpoint: Location, run: str) -> None:
        self.folder = _folder(checkpoint, run)
        self.seen: set[str] = set(names(self.folder))

    def new(self) -> tuple[list[BatchResult], RunnerError | None]:
        """The results not read yet (by batch id) and a batch's failure, if one failed."""
        fresh = sorted((n for n in names(self.folder) if n not in self.seen),
                       key=lambda n: int(n.split(".", 1)[0]))
        results: list[BatchResult] = []
        failure: RunnerError | None = None
        for name in fresh:
            found = read_versioned(self.folder / name)
            if found is None:
                continue
            self.seen.add(name)
            try:
                if name.endswith(".failed"):
                    failure = failure or load_error(found[0])
                else:
                    results.append(load_result(found[0]))
            except ValueError as e:  # json.JSONDecodeError is one
                raise errors.ExecutionError(
                    f"{self.folder / name}: not a result the runner's batch function wrote "
                    f"({e})", hint="only the runner's batch function writes under "
                    "<checkpoint>/connect/: check who else can write under the checkpoint") from e
        return results, failure
