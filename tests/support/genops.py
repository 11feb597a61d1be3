"""Generated operations: a seeded random sequence of the operations the runner offers, on a
small project, checked after every step against the plain-Python reference
(:mod:`tests.support.reference`).

Each step either keeps every table of an enabled model (and the dead-letter table) exact, or is
refused (a :class:`~runner.errors.ConfigError`, exit 2 through the CLI) with nothing changed:
every table's version, the checkpoint's model registry and its ledger as they were. A refused
step is then undone (the project files put back) or taken the way the message names
(``--full-refresh --select m``), and checked again.

The operations (:data:`OPS`): ``stream`` (a new input file, then ``--available-now``),
``crash`` (a new file, a run that dies at a random failpoint of the next batch, then the restart),
``full_refresh``, ``rebuild`` (``--full-refresh --select m``), ``disable`` / ``enable`` (a
``config(enabled=false)`` line), ``remove`` / ``add`` (the model's file), ``change_sql`` (an
equivalent text: a new comment line at the end), ``park_fix`` (the model ``fragile`` made to divide by zero on a
new file's event: parked, every other table exact; then fixed and caught up), ``maintain``,
``snapshot`` (the latest cut and a random older one, each exact for the files of its batches:
one file is one batch, ``max_files_per_trigger: 1``), ``rename`` (project.yml's ``name:``:
must be refused), and the operations at the edges of a crash or a loss:

- ``rename_model``: a crash inside a batch (often right after the model's own commit), then the
  documented rename of a model (SQL file and table folder moved, ``backfill=false``): exact, or
  refused when the moved table holds a batch the checkpoint has not committed; then put back,
  the batch finished, renamed again; then renamed back under its first name.
- ``refresh_crash``: a model disabled, ``--full-refresh`` dies inside its batch 0, the model
  re-enabled: refused (its table holds the old checkpoint's batches), then rebuilt as the
  message says.
- ``registry_loss``: the checkpoint's ``runner.models.json`` deleted, or truncated (refused,
  naming the file; then deleted as its hint says), sometimes while ``fragile`` is parked or
  while a disabled model comes back in the same start-up: rebuilt from the tables' batch ids.
- ``input_removed``: a batch dies inside, its input file is removed before the restart: refused
  (naming the file) with nothing changed; the file put back, the replay completes.

A model file change is followed by a run, so its outcome belongs to the step.

``kafka`` (a broker's bootstrap address): the project also has the Kafka model ``events_out``
(``materialized='kafka'``, a topic of its own), which every operation may pick as it picks a
table; after each step a ``read_committed`` consumer must see every valid event of the input
exactly once in its topic while it is live, and a start-up that takes it back after it sat out
(``enable``, ``add``) must say it is back, not new. A rebuild or ``--full-refresh`` with it
enabled is refused (a topic cannot be emptied); the operations that would produce its history
a second time under a new checkpoint (``full_refresh`` while it is disabled or removed,
``refresh_crash``) and ``rename_model`` (a table folder's move) leave it out.

``bucket`` (an ``s3://`` URI): the checkpoint, the warehouse and the source folder are in that
bucket, the project files stay local. The input files are written locally first (the reference
reads them there) and then uploaded; the table moves, the registry's loss and an input file's
removal go through the storage layer (:mod:`tests.support.locations`). Crashes raise in
process as on local disk.

Used by ``tests/faults/test_generated_ops.py`` (crashes in process: a failpoint raises) and
``python -m bench.generated_ops`` (a ``runner stream`` process dies at the failpoint).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner import failpoints
from runner.build import compile_project
from runner.checkpoint.ledger import Ledger
from runner.checkpoint.registry import REGISTRY_FILE, load_registry
from runner.demo import write_demo_files
from runner.errors import ConfigError, RunnerError
from runner.events import ModelJoining
from runner.ops.maintain import maintain
from runner.ops.snapshot import snapshot_of
from runner.project.loader import load_project
from runner.runtime.start.stream import run_stream
from runner.sinks.tables import current_version, read_table
from runner.storage.ops import Location, as_location, write_atomic
from tests.support.events import Recorder
from tests.support.locations import child_names, move_tree, put
from tests.support.projects import (
    BASE_YML,
    ENDPOINT_COUNTS,
    EXAMPLE_FILES,
    REPO_ROOT,
    SLOW_REQUESTS,
    write_project,
)
from tests.support.reference import DEAD, actual_tables, expected_tables, valid_event

__all__ = ["OPS", "Crash", "GenOps", "StepFailed", "in_process_crash", "subprocess_crash"]

OPS = ("stream", "crash", "full_refresh", "rebuild", "disable", "enable", "remove", "add",
       "change_sql", "park_fix", "maintain", "snapshot", "rename", "rename_model",
       "refresh_crash", "registry_loss", "input_removed")
#: How often each operation is drawn (streams and crashes most: they move the batches on).
WEIGHTS = (5, 3, 1, 2, 2, 2, 2, 2, 1, 1, 1, 2, 1, 1, 1, 1, 1)

YML = (BASE_YML.replace("vars:\n  slow_ms: 1000\n", "vars:\n  slow_request_ms: 1000\n")
       .replace("  path: incoming\n", "  path: incoming\n  max_files_per_trigger: 1\n"))
BAD_LATENCY = 987654321  # no demo event has it: only the events park_fix adds
FRAGILE = f"SELECT eventId, 100 / (request.latency_ms - {BAD_LATENCY}) AS ratio FROM parsed_events\n"
FIXED = (f"SELECT eventId, 100 / NULLIF(request.latency_ms - {BAD_LATENCY}, 0) AS ratio "
         "FROM parsed_events\n")
MODELS = {**{Path(k).stem: v for k, v in EXAMPLE_FILES.items() if k.startswith("models/")},
          "endpoint_counts": ENDPOINT_COUNTS, "slow_requests": SLOW_REQUESTS, "fragile": FIXED}
REFS = {"slow_requests": "performance_metrics"}  # model -> the model it refs
DISABLED = "{{ config(enabled=false) }}\n"
NO_BACKFILL = "{{ config(backfill=false) }}\n"
KAFKA = "events_out"  # the Kafka model of a walk with a broker (``GenOps.kafka``)
KAFKA_SQL = ("{{{{ config(materialized='kafka', topic='{topic}') }}}}\n"
             "SELECT eventId AS key, eventId, _batch_id FROM parsed_events\n")
RENAMED = "_renamed"  # a model renamed by rename_model is <model>_renamed until renamed back
CRASH_POINTS = ("batch.start", "sink.before_commit:{m}", "sink.after_commit:{m}",
                "batch.after_sinks", "batch.after_ledger")

#: Runs the project with a failpoint armed (``point@batch``; ``full_refresh=True``: as
#: ``--full-refresh``); returns whether it died there.
Crash = Callable[..., bool]


class StepFailed(AssertionError):
    """A step left a table inexact, or was refused after changing something."""


def in_process_crash(root: Path, point: str, *, full_refresh: bool = False) -> bool:
    """The failpoint raises inside this process's run (the runner sees an exception)."""
    os.environ["RUNNER_FAILPOINTS"] = f"{point}=raise"
    failpoints._armed.cache_clear()
    try:
        _run(root, full_refresh=full_refresh)
    except (RunnerError, failpoints.FailpointError):
        return True
    finally:
        os.environ.pop("RUNNER_FAILPOINTS", None)
        failpoints._armed.cache_clear()
    return False


def _copy_runner() -> Path:
    """A copy of the ``runner`` package as it is now (taken when a :class:`GenOps` with
    :func:`subprocess_crash` is made, right after this process imported the runner). The
    crashing ``runner stream`` runs it, so it and its restart in this process run the same code
    even when the working tree is edited during a long run. Without it a bench run mixed two
    versions: ``same_input.SAMPLE_BYTES`` went from 64 KiB to 4 KiB 11 minutes into the run;
    the crashing process (4 KiB) recorded batch 27's input, the restart here (64 KiB) sampled
    other bytes of the 9 KB file and refused the replay as "rewritten". (A module this process
    first imports later still comes from the working tree.)"""
    folder = Path(tempfile.mkdtemp(prefix="genops-runner-"))
    atexit.register(shutil.rmtree, folder, True)
    shutil.copytree(REPO_ROOT / "runner", folder / "runner",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if (REPO_ROOT / ".jars").exists():  # runner.runtime.client.session finds the jars next to runner/
        (folder / ".jars").symlink_to(REPO_ROOT / ".jars")
    return folder


_RUNNER_COPY: Path | None = None


def _runner_copy() -> Path:
    global _RUNNER_COPY
    if _RUNNER_COPY is None:
        _RUNNER_COPY = _copy_runner()
    return _RUNNER_COPY


def subprocess_crash(root: Path, point: str, *, full_refresh: bool = False) -> bool:
    """``runner stream --available-now`` in its own process group, killed at the failpoint by
    ``os._exit(137)`` (no cleanup, as a SIGKILL); whatever is left of the group is killed. It
    runs the copy of the runner taken when :class:`GenOps` first used this (the code this
    process runs), not the working tree as it may be by then."""
    env = {**os.environ, "RUNNER_FAILPOINTS": f"{point}=exit", "PYTHONPATH": str(REPO_ROOT)}
    refresh = ["--full-refresh"] if full_refresh else []
    # -c, not -m: -m puts the working directory (REPO_ROOT, the live runner/) first on the path
    start = (f"import runpy, sys; sys.path.insert(0, {str(_runner_copy())!r}); "
             "runpy.run_module('runner', run_name='__main__', alter_sys=True)")
    proc = subprocess.Popen([sys.executable, "-c", start, "stream", "--available-now",
                             *refresh, "--project-dir", str(root)], env=env, cwd=REPO_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=600)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if proc.returncode not in (0, 137):
        raise StepFailed(f"the crashing run exited {proc.returncode}:\n{out[-3000:]}")
    return proc.returncode == 137


def _run(root: Path, **kw: Any) -> Any:
    """``runner stream --available-now``, in process: a compile error fails the step (the CLI
    would not start; the generator only writes projects that compile)."""
    project = load_project(root)
    result = compile_project(project)
    if result.errors:
        raise StepFailed(f"the project does not compile: {result.errors}")
    return run_stream(project, result.plan, mode="available_now", trigger="1 second", **kw)


@dataclass
class GenOps:
    """One generated sequence on the project under ``root`` (created here)."""

    root: Path
    seed: int
    engine: str
    crash: Crash = in_process_crash
    #: the models of the project (default: all of :data:`MODELS`)
    models: tuple[str, ...] = tuple(MODELS)
    #: an object-store URI (``s3://bucket``): checkpoint, warehouse and source folder there
    bucket: str | None = None
    rng: random.Random = field(init=False)
    present: set[str] = field(init=False)
    disabled: set[str] = field(default_factory=set)
    revision: int = 0
    files: int = 0
    log: list[dict[str, Any]] = field(default_factory=list)
    #: model -> its name now, while rename_model has it under another name
    renamed: dict[str, str] = field(default_factory=dict)
    #: model -> batches its ledger entries do not name it in (run while it was renamed): a
    #: snapshot of those batches lacks it, as runner snapshot says of tables it cannot serve
    gaps: dict[str, set[int]] = field(default_factory=dict)
    #: a Kafka broker's bootstrap address: the walk gains the Kafka model :data:`KAFKA`
    kafka: str | None = None
    #: when set, an operation that picks a model picks this one whenever it can
    focus: str | None = None
    topic: str = ""
    #: the second of the last input file's upload (``bucket``)
    _uploaded: int = 0

    def __post_init__(self) -> None:
        if self.crash is subprocess_crash:
            _runner_copy()  # now, as close to this process's imports as the harness gets
        self.rng = random.Random(self.seed)
        target: dict[str, Any] | None = None
        if self.kafka is not None:
            from tests.support.brokers import create_topic

            self.topic = f"genops_{self.seed}_{os.urandom(4).hex()}"
            create_topic(self.kafka, self.topic, 2)
            self.models = tuple(m for m in self.models if m != KAFKA) + (KAFKA,)
            target = {"kafka_outputs": {"bootstrap_servers": self.kafka}}
        self.present = set(self.models)
        macros = {k: v for k, v in EXAMPLE_FILES.items() if k.startswith(("macros/", "seeds/"))}
        yml = YML
        if self.bucket is not None:
            yml = (yml.replace("warehouse: wh\n", f"warehouse: {self.bucket}/wh\n")
                   .replace("checkpoint: cp\n", f"checkpoint: {self.bucket}/cp\n")
                   .replace("  path: incoming\n", f"  path: {self.bucket}/incoming\n"))
        write_project(self.root, {**macros, **{f"models/{m}.sql": self._sql(m)
                                               for m in self.models}},
                      project_yml=yml, engine=self.engine, target=target)
        (self.root / "incoming").mkdir(exist_ok=True)

    # -- the locations: local folders of the project, or prefixes of the bucket -------------

    def _location(self, name: str) -> Location:
        return as_location(f"{self.bucket}/{name}") if self.bucket else self.root / name

    @property
    def wh(self) -> Location:
        return self._location("wh")

    @property
    def cp(self) -> Location:
        return self._location("cp")

    def _source(self, path: Path) -> Location:
        """Where the runner reads the input file ``path`` (``incoming/`` holds the local copy
        the reference reads)."""
        return self._location("incoming") / path.name if self.bucket else path

    # -- the project ----------------------------------------------------------------------

    def live(self) -> set[str]:
        return self.present - self.disabled

    def _sql(self, name: str) -> str:
        return KAFKA_SQL.format(topic=self.topic) if name == KAFKA else MODELS[name]

    def _pick(self, among: list[str]) -> str:
        """:attr:`focus` when it is among the candidates, else a random one."""
        return self.focus if self.focus in among else self.rng.choice(among)

    def _model(self, name: str) -> Path:
        return self.root / "models" / f"{name}.sql"

    def _feed(self, *, bad: bool = False) -> Path:
        """One new input file (one batch), ``bad``: plus an event fragile divides by zero on.
        Each file's mtime is later than the previous one's: Spark takes files oldest first."""
        incoming = self.root / "incoming"
        before = set(incoming.glob("*.json"))
        self.files += 1
        write_demo_files(incoming, events=self.rng.randint(20, 60), files=1,
                         seed=self.seed * 100_000 + self.files, poison_every=17)
        (path,) = set(incoming.glob("*.json")) - before
        if bad:
            line = next(x for x in path.read_text().splitlines() if valid_event(x))
            event = json.loads(line)
            event["eventId"], event["request"]["latency_ms"] = f"bad-{self.files}", BAD_LATENCY
            path.write_text(path.read_text() + json.dumps(event) + "\n")
        stamp = 1_700_000_000 + self.files * 10
        os.utime(path, (stamp, stamp))
        if self.bucket is not None:  # the upload's time orders the files there, to the second
            while int(time.time()) <= self._uploaded:  # (S3 listings' LastModified): no tie
                time.sleep(0.1)
            put(self._source(path), path.read_bytes())
            self._uploaded = int(time.time())
        return path

    def _files(self) -> list[Path]:
        return sorted((self.root / "incoming").glob("*.json"), key=lambda p: p.stat().st_mtime)

    # -- the checks -----------------------------------------------------------------------

    def _state(self) -> dict[str, Any]:
        """What a refused step must not change: every table's version, the registry, the
        ledger."""
        wh, cp = self.wh, self.cp
        versions = {name: current_version(wh / name) for name in child_names(wh)}
        registry = (cp / REGISTRY_FILE).read_text() if (cp / REGISTRY_FILE).is_file() else None
        ledger = hashlib.sha256()
        for name in child_names(cp / "ledger"):
            ledger.update(name.encode() + (cp / "ledger" / name).read_bytes())
        state: dict[str, Any] = {"versions": versions, "registry": registry,
                                 "ledger": ledger.hexdigest()}
        if self.kafka is not None:
            state["topic"] = Counter(self._topic())
        return state

    def _topic(self) -> list[str]:
        from tests.support.kafka_out import read_committed

        assert self.kafka is not None
        return [r["eventId"] for r in read_committed(self.kafka, self.topic)]

    def check_exact(self, files: list[Path] | None = None,
                    versions: dict[str, int | None] | None = None,
                    skip: frozenset[str] = frozenset()) -> None:
        """Every live table (and the dead letters) holds exactly what ``files`` (default: all
        input) say; ``versions``: the tables read at those versions."""
        incoming = self.root / "incoming"
        if files is not None:
            incoming = self.root / f"upto-{len(files)}"
            incoming.mkdir(exist_ok=True)
            for f in incoming.glob("*.json"):
                f.unlink()
            for f in files:
                (incoming / f.name).write_bytes(f.read_bytes())
        names = [m for m in sorted(self.live()) if m not in ("fragile", KAFKA)
                 and m not in skip] + [DEAD]
        expected = expected_tables(incoming, names)
        # a model renamed (rename_model) is read from its table under the name it has now
        actual = actual_tables(self.wh, versions, names=self.renamed)
        wrong = {}
        for name in names:
            lost, extra = expected[name] - actual[name], actual[name] - expected[name]
            if lost or extra:
                wrong[name] = f"{sum(lost.values())} lost, {sum(extra.values())} extra"
        if "fragile" in self.live() and "fragile" not in skip:
            want = Counter(e["eventId"] for f in sorted(incoming.glob("*.json"))
                           for line in f.read_text().splitlines()
                           if (e := valid_event(line)) is not None)
            got = self._fragile(versions)
            if want != got:
                wrong["fragile"] = (f"{sum((want - got).values())} lost, "
                                    f"{sum((got - want).values())} extra")
        if KAFKA in self.live() and KAFKA not in skip and files is None:
            want = Counter(e["eventId"] for f in sorted(incoming.glob("*.json"))
                           for line in f.read_text().splitlines()
                           if (e := valid_event(line)) is not None)
            got = Counter(self._topic())
            if want != got:
                wrong[KAFKA] = (f"topic {self.topic}: {sum((want - got).values())} lost, "
                                f"{sum((got - want).values())} extra")
        if wrong:
            raise StepFailed(f"tables not exact: {wrong}")

    def _fragile(self, versions: dict[str, int | None] | None) -> Counter:
        path = self.wh / "fragile"
        if versions is not None and "fragile" in versions:
            if versions["fragile"] is None:
                return Counter()
            from runner.sinks.inspect import open_table

            table = open_table(str(path), versions["fragile"]).to_pyarrow_dataset().to_table(
                use_threads=False)
        elif path.exists():
            table = read_table(str(path))
        else:
            return Counter()
        return Counter(table.column("eventId").to_pylist())

    # -- running a step -------------------------------------------------------------------

    def _attempt(self, step: dict[str, Any], undo: Callable[[], None] | None = None,
                 way_out: str | None = None, **kw: Any) -> bool:
        """Run the pipeline; True when it ran. Refused: nothing may have changed; then the way
        out (a rebuild of ``way_out``) when the message names it, else ``undo``."""
        before = self._state()
        message = ""
        try:
            _run(self.root, **kw)
            return True
        except ConfigError as e:
            message = str(e)
            step["refused"] = message[:600]
            after = self._state()
            if after != before:
                raise StepFailed(f"refused, but it changed {_diff(before, after)}: {e}") from e
        if way_out is not None and "--full-refresh --select" in message:
            step["way_out"] = f"--full-refresh --select {way_out}"
            _run(self.root, rebuild=[way_out])
            return True
        if undo is not None:
            undo()
            step["undone"] = True
        return False

    def step(self, op: str | None = None) -> dict[str, Any]:
        """Draw (or take) one operation, apply it, check the tables; the step's record."""
        op = op or self.rng.choices(OPS, WEIGHTS)[0]
        step: dict[str, Any] = {"n": len(self.log), "op": op}
        self.log.append(step)
        getattr(self, f"_op_{op}")(step)
        if not step.get("skipped"):
            self.check_exact()
        return step

    def run(self, steps: int, on_step: Callable[[dict[str, Any]], None] = lambda s: None
            ) -> None:
        self._op_stream({"op": "stream"})  # batch 0: every model has a table
        self.check_exact()
        for _ in range(steps):
            on_step(self.step())

    # -- the operations -------------------------------------------------------------------

    def _op_stream(self, step: dict[str, Any]) -> None:
        self._feed()
        self._attempt(step)

    def _op_crash(self, step: dict[str, Any]) -> None:
        self._feed()
        ids = Ledger(self.cp).batch_ids()
        batch = ids[-1] + 1 if ids else 0
        point = self.rng.choice(CRASH_POINTS).format(m=self._pick(sorted(self.live())))
        step["at"] = f"{point}@{batch}"
        step["died"] = self.crash(self.root, step["at"])
        self._attempt(step)  # the restart

    def _op_full_refresh(self, step: dict[str, Any]) -> None:
        if self.kafka is not None and KAFKA not in self.live():
            step["skipped"] = True  # it would come back new and produce its history again
            return
        if self._attempt(step, full_refresh=True):
            self.gaps.clear()  # a new checkpoint: a new ledger

    def _op_rebuild(self, step: dict[str, Any]) -> None:
        model = step["model"] = self._pick(sorted(self.live()))
        if self._attempt(step, rebuild=[model]):
            self.gaps.pop(model, None)  # every entry names the rebuilt table

    def _choose(self, step: dict[str, Any], among: set[str]) -> str | None:
        """A model of ``among`` whose change keeps the project compiling (no model refs it,
        not even a disabled one: compile renders those too; two models stay live), or None
        (the step is skipped)."""
        needed = {REFS[m] for m in self.present if m in REFS}  # a disabled model's refs too
        ok = sorted(m for m in among if m not in needed)
        if not ok or len(self.live()) <= 2 and among <= self.live():
            step["skipped"] = True
            return None
        step["model"] = self._pick(ok)
        return str(step["model"])

    def _op_disable(self, step: dict[str, Any]) -> None:
        model = self._choose(step, self.live())
        if model is not None:
            self._disable(step, model)

    def _disable(self, step: dict[str, Any], model: str) -> None:
        path = self._model(model)
        self.disabled.add(model)
        old = path.read_text()
        path.write_text(DISABLED + old)

        def undo() -> None:
            path.write_text(old)
            self.disabled.discard(model)

        self._attempt(step, undo)

    def _op_enable(self, step: dict[str, Any]) -> None:
        ready = sorted(m for m in self.disabled
                       if REFS.get(m) is None or REFS[m] in self.live())
        if not ready:
            step["skipped"] = True
            return
        model = step["model"] = self._pick(ready)
        path = self._model(model)
        old = path.read_text()
        path.write_text(old.removeprefix(DISABLED))
        self.disabled.discard(model)

        def undo() -> None:
            path.write_text(old)
            self.disabled.add(model)

        self._joining(step, model, undo)

    def _joining(self, step: dict[str, Any], model: str, undo: Callable[[], None]) -> None:
        """Run with ``model`` joining again; a Kafka model that holds batches is back."""
        said = Recorder()
        self._attempt(step, undo, way_out=model, report=said)
        joined = [e for e in said.of(ModelJoining) if e.model == model]
        step["joined"] = [e.status for e in joined]
        if model == KAFKA and "new" in step["joined"] and self._topic():
            raise StepFailed(f"{KAFKA}, whose topic holds batches, joined as new: {joined}")

    def _op_remove(self, step: dict[str, Any]) -> None:
        model = self._choose(step, self.present)
        if model is None:
            return
        path, old = self._model(model), self._model(model).read_text()
        path.unlink()
        self.present.discard(model)
        was_disabled = model in self.disabled
        self.disabled.discard(model)

        def undo() -> None:
            path.write_text(old)
            self.present.add(model)
            if was_disabled:
                self.disabled.add(model)

        self._attempt(step, undo)

    def _op_add(self, step: dict[str, Any]) -> None:
        ready = sorted(m for m in set(self.models) - self.present
                       if REFS.get(m) is None or REFS[m] in self.live())
        if not ready:
            step["skipped"] = True
            return
        model = step["model"] = self._pick(ready)
        path = self._model(model)
        path.write_text(self._sql(model))
        self.present.add(model)

        def undo() -> None:
            path.unlink()
            self.present.discard(model)

        self._joining(step, model, undo)

    def _op_change_sql(self, step: dict[str, Any]) -> None:
        model = step["model"] = self._pick(sorted(self.live()))
        path = self._model(model)
        self.revision += 1
        # At the end: after a merge model's GROUP BY once broke the merge-key proof (026f6e5)
        path.write_text(path.read_text().rstrip("\n") + f"\n-- revision {self.revision}\n")
        self._feed()
        self._attempt(step)

    def _op_park_fix(self, step: dict[str, Any]) -> None:
        if "fragile" not in self.live():
            step["skipped"] = True
            return
        path = self._model("fragile")
        path.write_text(FRAGILE)
        self._feed(bad=True)
        summary = _run(self.root)
        registry = load_registry(self.cp)
        parked = registry is not None and registry["fragile"].state == "parked"
        if "fragile" not in summary.parked or not parked:
            raise StepFailed(f"fragile was not parked: {summary.parked}")
        self.check_exact(skip=frozenset({"fragile"}))  # every other table moved on
        path.write_text(FIXED)
        self._feed()
        self._attempt(step)  # caught up from the history, then the new batch

    def _op_maintain(self, step: dict[str, Any]) -> None:
        maintain(load_project(self.root))

    def _op_snapshot(self, step: dict[str, Any]) -> None:
        project = load_project(self.root)
        ids = Ledger(project.checkpoint).batch_ids()
        if not ids:
            step["skipped"] = True
            return
        files = self._files()
        for batch in {ids[-1], self.rng.choice(ids)}:
            snap = snapshot_of(project, batch=batch)
            versions = {name: t.version for name, t in snap.tables.items()}
            renamed = frozenset(m for m, ids in self.gaps.items() if batch in ids)
            missing = (self.live() | {DEAD}) - set(versions) - renamed - {KAFKA}
            if missing:
                raise StepFailed(f"the snapshot of batch {batch} lacks {sorted(missing)}")
            step.setdefault("batches", []).append(batch)
            self.check_exact(files[:batch + 1], versions, skip=renamed)

    def _op_rename(self, step: dict[str, Any]) -> None:
        yml = self.root / "project.yml"
        old = yml.read_text()
        yml.write_text(old.replace("name: test_pipeline", "name: renamed_pipeline"))
        if self._attempt(step, undo=lambda: yml.write_text(old)):
            raise StepFailed("a rename of the pipeline ran instead of being refused")

    # -- at the edges of a crash or a loss -------------------------------------------------

    def _next_batch(self) -> int:
        ids = Ledger(self.cp).batch_ids()
        return ids[-1] + 1 if ids else 0

    def _crash_in_next_batch(self, step: dict[str, Any], model: str | None = None) -> bool:
        """A new input file, then a run that dies at a failpoint of its batch: right after
        ``model``'s own commit half the time (when given), else anywhere."""
        self._feed()
        target = model or self._pick(sorted(self.live()))
        point = (f"sink.after_commit:{model}" if model is not None and self.rng.random() < 0.5
                 else self.rng.choice(CRASH_POINTS).format(m=target))
        step["at"] = f"{point}@{self._next_batch()}"
        step["died"] = self.crash(self.root, step["at"])
        return bool(step["died"])

    def _move_model(self, old: str, new: str, *, keep_rows: bool) -> None:
        """The documented rename: the SQL file and the table folder move (``keep_rows``: the
        model says ``backfill=false`` for the next start)."""
        src, dst = self._model(old), self._model(new)
        text = src.read_text().removeprefix(NO_BACKFILL)
        src.unlink()
        dst.write_text((NO_BACKFILL if keep_rows else "") + text)
        if (self.wh / old).exists():
            move_tree(self.wh / old, self.wh / new)

    def _op_rename_model(self, step: dict[str, Any]) -> None:
        model = self._choose(step, self.live() - {"fragile", KAFKA})
        if model is None:
            return
        original = self._model(model).read_text()
        self._crash_in_next_batch(step, model)
        new = model + RENAMED
        first_batch = self._next_batch()

        def put_back() -> None:  # the refusal's way out: put back, finish the batch, again
            self._move_model(new, model, keep_rows=False)
            self.renamed.pop(model)
            self._model(model).write_text(original)
            _run(self.root)
            self.check_exact()
            self._move_model(model, new, keep_rows=True)
            self.renamed[model] = new

        self._move_model(model, new, keep_rows=True)
        self.renamed[model] = new
        if not self._attempt(step, put_back):
            step["way_out"] = "put back, the batch finished, renamed again"
            first_batch = self._next_batch()
            if not self._attempt(step):
                raise StepFailed(f"the rename of {model} was refused again after the crashed "
                                 f"batch was finished: {step['refused']}")
        self.check_exact()
        self._feed()  # a batch under the new name
        self._attempt(step)
        self.check_exact()
        # Back under its first name (no crash): a new model again, the table moved back.
        last = self._next_batch() - 1
        self._move_model(new, model, keep_rows=True)
        self.renamed.pop(model)
        if not self._attempt(step):
            raise StepFailed(f"renaming {new} back to {model} was refused: {step['refused']}")
        self._model(model).write_text(original)
        self.gaps.setdefault(model, set()).update(range(first_batch, last + 1))

    def _op_refresh_crash(self, step: dict[str, Any]) -> None:
        if self.kafka is not None:  # refused while it is enabled; produced again if it is not
            step["skipped"] = True
            return
        ready = sorted(m for m in self.disabled
                       if REFS.get(m) is None or REFS[m] in self.live())
        if ready:
            model = step["model"] = self.rng.choice(ready)
            old = self._model(model).read_text()
        else:
            chosen = self._choose(step, self.live())
            if chosen is None:
                return
            model = chosen
            old = self._model(model).read_text()
            self._model(model).write_text(DISABLED + old)  # no run of its own: the refresh's
            self.disabled.add(model)
        live = sorted(self.live())
        point = self.rng.choice(("batch.start", "sink.after_commit:{m}", "batch.after_sinks",
                                 "batch.after_ledger")).format(m=self.rng.choice(live))
        step["at"] = f"{point}@0"  # inside the refresh's first batch: none committed
        step["died"] = self.crash(self.root, step["at"], full_refresh=True)
        self.gaps.clear()  # a new checkpoint: a new ledger
        path = self._model(model)
        path.write_text(path.read_text().removeprefix(DISABLED))
        self.disabled.discard(model)

        def undo() -> None:
            path.write_text(old if old.startswith(DISABLED) else DISABLED + old)
            self.disabled.add(model)

        self._attempt(step, undo, way_out=model)

    def _op_registry_loss(self, step: dict[str, Any]) -> None:
        registry = self.cp / REGISTRY_FILE
        if not registry.is_file():
            step["skipped"] = True
            return
        parked = "fragile" in self.live() and self.rng.random() < 0.5
        if parked:  # lost while fragile is parked
            step["parked"] = "fragile"
            self._model("fragile").write_text(FRAGILE)
            self._feed(bad=True)
            if "fragile" not in _run(self.root).parked:
                raise StepFailed("fragile was not parked")
            self.check_exact(skip=frozenset({"fragile"}))
        ready = sorted(m for m in self.disabled
                       if REFS.get(m) is None or REFS[m] in self.live())
        back = self.rng.choice(ready) if ready and self.rng.random() < 0.5 else None
        step["damage"] = self.rng.choice(("deleted", "truncated"))
        if step["damage"] == "truncated":
            write_atomic(registry, registry.read_bytes()[:len(registry.read_bytes()) // 2])
            before = self._state()
            try:
                _run(self.root)
            except RunnerError as e:
                if REGISTRY_FILE not in str(e) or isinstance(e, ConfigError):
                    raise StepFailed(f"a truncated registry: not the error expected: {e}") \
                        from e
                step["refused"] = str(e)[:600]
            else:
                raise StepFailed("a truncated registry was read as if whole")
            if self._state() != before:
                raise StepFailed(f"a truncated registry, refused, but it changed "
                                 f"{_diff(before, self._state())}")
        registry.unlink()  # the runner's hint: the next start-up rebuilds it from the tables
        if parked:
            self._model("fragile").write_text(FIXED)
        if back is not None:  # and a disabled model comes back in the same start-up
            step["model"] = back
            path = self._model(back)
            path.write_text(path.read_text().removeprefix(DISABLED))
            self.disabled.discard(back)
        self._feed()
        self._attempt(step, way_out=back)

    def _op_input_removed(self, step: dict[str, Any]) -> None:
        if not self._crash_in_next_batch(step):
            return  # the batch completed: nothing to replay
        path = self._files()[-1]  # the crashed batch's file (one file per batch)
        away = self.root / "away" / path.name
        away.parent.mkdir(exist_ok=True)
        path.rename(away)
        if self.bucket is not None:  # the runner's copy goes; the local one (the reference's)
            self._source(path).unlink()  # is away with it
        before = self._state()
        try:
            _run(self.root)
        except ConfigError as e:
            step["refused"] = str(e)[:600]
            if path.name not in str(e):
                raise StepFailed(f"the refusal does not name the missing file: {e}") from e
        else:
            raise StepFailed(f"the replay of a batch ran without its input file {path.name}")
        finally:
            after = self._state()
            away.rename(path)
            if self.bucket is not None:
                put(self._source(path), path.read_bytes())
        if after != before:
            raise StepFailed(f"refused, but it changed {_diff(before, after)}")
        self._attempt(step)  # the file is back: the replay completes, exactly once


def _diff(before: dict[str, Any], after: dict[str, Any]) -> str:
    return ", ".join(f"{k}: {before[k]!r} -> {after[k]!r}"[:300] for k in before if before[k] != after[k])
