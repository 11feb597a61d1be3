"""Processes below a pid, read from ``/proc`` (no psutil): shared by the bench scripts."""

from __future__ import annotations

import os

__all__ = ["command_name", "descendants"]


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
