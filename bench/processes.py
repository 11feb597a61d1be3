"""Processes: ``runner stream`` as a child process (:class:`RunnerProcess`), and what
``/proc`` says of a process tree (no psutil): its members' names, memory and CPU, and
:class:`TreeSampler`, the one sampler every bench uses for a run's peak memory, CPU seconds
and, where asked, a memory series over the run."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import is_batch_record, progress_record


def descendants(root: int, *, include_root: bool = False) -> list[int]:
    """Every process below ``root`` (children, their children, ...); ``root`` first if asked."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    out: list[int] = []
    todo = [root] if include_root else list(children.get(root, []))
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def command_name(pid: int) -> str | None:
    """``/proc/<pid>/comm`` (``java``, ``python3.11``...), None when the process is gone."""
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return None


def status_kb(pid: int, key: str) -> int:
    """A ``kB`` line of ``/proc/<pid>/status`` (``VmHWM``, ``VmRSS``); 0 when gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of one process so far (0.0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Proc:
    """What the sampler saw of one process of a run's tree."""

    pid: int
    role: str
    hwm_kb: int = 0
    cpu_s: float = 0.0


class TreeSampler(threading.Thread):
    """Samples the process tree below ``root`` (included) every ``interval`` s: each process's
    peak (``VmHWM``) and CPU seconds by role (``driver`` = ``root``, ``jvm``, ``py_workers``,
    ``other``) and the peak of the tree's summed ``VmRSS``. With ``series_every``, also a
    series of resident MB by role every ``series_every`` s, each sample extended with
    ``label()`` (e.g. the batches done so far)."""

    def __init__(self, root: int, interval: float = 0.2, *, series_every: float | None = None,
                 label: Callable[[], dict[str, Any]] | None = None) -> None:
        super().__init__(daemon=True)
        self.root, self.interval = root, interval
        self.series_every, self.label = series_every, label
        self.procs: dict[int, Proc] = {}
        self.other_names: dict[str, int] = {}
        self.tree_rss_peak_kb = 0
        self.series: list[dict[str, Any]] = []
        self.started = time.monotonic()
        self._next_series = self.started + (series_every or 0)
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            self.sample()
            self._halt.wait(self.interval)

    def stop(self) -> None:
        self._halt.set()
        self.join()

    def _role(self, pid: int) -> str:
        if pid == self.root:
            return "driver"
        comm = command_name(pid)
        if comm is None:
            return "other"
        if comm == "java":
            return "jvm"
        return "py_workers" if comm.startswith("python") else "other"

    def sample(self) -> None:
        rss: dict[str, int] = {}
        for pid in descendants(self.root, include_root=True):
            hwm = status_kb(pid, "VmHWM")
            if not hwm:  # gone (or a kernel thread)
                continue
            proc = self.procs.get(pid)
            if proc is None:
                proc = self.procs[pid] = Proc(pid, self._role(pid))
                if proc.role == "other":  # count processes by name (a forked child shows
                    comm = command_name(pid) or "?"  # its parent thread's name until exec)
                    self.other_names[comm] = self.other_names.get(comm, 0) + 1
            elif proc.role == "other":  # spark-submit's shell exec()s into the JVM later
                proc.role = self._role(pid)
            proc.hwm_kb = max(proc.hwm_kb, hwm)
            proc.cpu_s = max(proc.cpu_s, cpu_seconds(pid))
            # Not "other": a process the JVM spawns (chmod, jspawnhelper...) shares or copies
            # the JVM's pages until it exec()s, which would count the JVM twice.
            if proc.role != "other":
                rss[proc.role] = rss.get(proc.role, 0) + status_kb(pid, "VmRSS")
        self.tree_rss_peak_kb = max(self.tree_rss_peak_kb, sum(rss.values()))
        now = time.monotonic()
        if self.series_every and now >= self._next_series:
            self._next_series = now + self.series_every
            self.series.append({"t": round(now - self.started, 1),
                                **(self.label() if self.label else {}),
                                **{f"{role}_mb": round(rss.get(role, 0) / 1024, 1)
                                   for role in ("driver", "jvm", "py_workers")}})

    def summary(self) -> dict[str, Any]:
        """Per role: the largest single process's peak MB, the summed CPU seconds, the count;
        the tree's summed RSS peak; the names of the ``other`` processes; the tree's CPU."""
        by_role: dict[str, dict[str, float]] = {}
        for p in self.procs.values():
            r = by_role.setdefault(p.role, {"peak_mb": 0.0, "cpu_s": 0.0, "processes": 0})
            r["peak_mb"] = max(r["peak_mb"], p.hwm_kb / 1024)  # largest single process
            r["cpu_s"] += p.cpu_s
            r["processes"] += 1
        return {"roles": by_role, "tree_rss_peak_mb": self.tree_rss_peak_kb / 1024,
                "other_process_names": self.other_names,
                "cpu_s": sum(r["cpu_s"] for r in by_role.values())}


@dataclass
class RunnerProcess:
    """``runner stream --progress json`` in its own process (and process group); JSON lines
    time-stamped on arrival."""

    project: Path
    args: list[str]
    env: dict[str, str]
    lines: list[tuple[float, float, dict[str, Any]]] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)

    def start(self) -> RunnerProcess:
        cmd = [sys.executable, "-m", "runner", "stream", "--project-dir", str(self.project),
               "--progress", "json", *self.args]
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, cwd=str(self.project),
                                     env={**self.env, "RUNNER_ALLOW_SPARK_CONF":
                                          os.environ.get("RUNNER_ALLOW_SPARK_CONF", "")},
                                     start_new_session=True)
        self._threads = [threading.Thread(target=self._read, daemon=True),
                         threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr),
                                          daemon=True)]
        for t in self._threads:
            t.start()
        return self

    def _read(self) -> None:
        for line in self.proc.stdout:  # type: ignore[union-attr]
            doc = progress_record(line)
            if doc is not None:
                self.lines.append((time.perf_counter() - self.started, time.time(), doc))

    def batches(self) -> list[tuple[float, float, dict[str, Any]]]:
        return [(t, wall, d) for t, wall, d in self.lines if is_batch_record(d)]

    def input_rows(self) -> int:
        return sum(d["input_rows"] for _, _, d in self.batches())

    def events(self) -> list[str]:
        return [str(d["event"]) for _, _, d in self.lines if "event" in d]

    def wait_for(self, predicate: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if self.proc.poll() is not None:
                raise RuntimeError(f"runner exited ({self.proc.returncode}) while waiting for "
                                   f"{what}: {''.join(self.stderr)[-1500:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out after {timeout:g} s waiting for {what}")
            time.sleep(0.05)

    def finish(self, timeout: float | None, *, terminate: bool = False,
               check: bool = True) -> float:
        """Wait for the process (SIGTERM first when ``terminate``; killed after ``timeout``
        seconds); its wall seconds. A non-zero exit raises unless ``check`` is False."""
        if terminate:
            self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            rc = self.proc.wait()
        wall = time.perf_counter() - self.started
        for t in self._threads:
            t.join(5)
        if rc != 0 and check:
            raise RuntimeError(f"runner exited with {rc}: {''.join(self.stderr)[-1500:]}")
        return wall

    def kill(self) -> None:
        """Kill this run's process group (the runner, its JVM, its Python workers)."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def summary(self) -> dict[str, Any]:
        return next((d["summary"] for _, _, d in reversed(self.lines) if "summary" in d), {})
