"""A budget for rendering one model: time and output size.

``compile`` renders models from pull requests, which must not be able to hang it (nested
loops, exponential macros) or exhaust its memory (``'x' * 10 ** 9``). A timer (``SIGALRM``,
in the main thread) interrupts a render that runs past its seconds whatever it is doing; the
output is counted as it is produced; and the sandbox refuses a ``*`` or ``**`` whose result
would already be over the size bound, before building it. A model within budget pays two
timer system calls and a length sum.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from jinja2.sandbox import SandboxedEnvironment

__all__ = ["BudgetExceeded", "BudgetedEnvironment", "RenderBudget", "bounded", "time_limit",
           "timer_handler"]


@dataclass(frozen=True)
class RenderBudget:
    """Seconds and output characters one model's render may take."""

    seconds: float = 5.0
    max_chars: int = 10_000_000


class BudgetExceeded(Exception):
    """A render ran out of its budget; the message says which part."""


def _too_big(budget: RenderBudget) -> BudgetExceeded:
    return BudgetExceeded(f"rendering produced more than {budget.max_chars:,} characters "
                          "(a loop or an expression that grows without bound?)")


class _Expired(BaseException):
    """Raised by the timer's signal handler (a BaseException: no ``except Exception`` in
    template code or Jinja swallows it); :func:`time_limit` turns it into BudgetExceeded."""


def _expired(signum: int, frame: object) -> None:
    raise _Expired


_installed = False  # inside timer_handler() (signal.getsignal costs more than the timer)


def _can_time() -> bool:
    return threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")


@contextmanager
def timer_handler() -> Iterator[None]:
    """Install the timer's signal handler for a whole run of renders (the handler set before
    comes back afterwards): :func:`time_limit` then costs two ``setitimer`` calls a model."""
    if not _can_time():
        yield
        return
    global _installed
    previous = signal.signal(signal.SIGALRM, _expired)
    _installed, outer = True, _installed
    try:
        yield
    finally:
        _installed = outer
        signal.signal(signal.SIGALRM, previous)


@contextmanager
def time_limit(budget: RenderBudget) -> Iterator[None]:
    """Raise :class:`BudgetExceeded` inside the block after ``budget.seconds``.

    Only the main thread receives signals: elsewhere (and without ``setitimer``) the block
    runs unlimited. A timer set before is given back what is left of it afterwards.
    """
    if not _can_time():
        yield
        return
    if not _installed:  # outside timer_handler(): install the handler for this block only
        with timer_handler(), time_limit(budget):
            yield
        return
    started = time.monotonic()
    outer, interval = signal.setitimer(signal.ITIMER_REAL, budget.seconds)
    try:
        yield
    except _Expired as stopped:  # keeps the template frames where the render was stopped
        raise BudgetExceeded(f"rendering took longer than {budget.seconds:g}s (a loop or a "
                             "macro that does not end?)").with_traceback(stopped.__traceback__
                                                                         ) from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        if outer:  # someone else's timer: give back what is left of it
            left = outer - (time.monotonic() - started)
            signal.setitimer(signal.ITIMER_REAL, max(left, 0.001), interval)


def bounded(chunks: Iterable[str], budget: RenderBudget) -> str:
    """Join a template's output chunks, refusing more than ``budget.max_chars``.

    Raises:
        BudgetExceeded: past the bound.
    """
    out: list[str] = []
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > budget.max_chars:
            raise _too_big(budget)
        out.append(chunk)
    return "".join(out)


class BudgetedEnvironment(SandboxedEnvironment):
    """The sandbox, refusing ``seq * n`` and ``a ** b`` results larger than the budget."""

    intercepted_binops = frozenset({"*", "**"})

    def __init__(self, *args: Any, budget: RenderBudget, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.budget = budget

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        limit = self.budget.max_chars
        if operator == "*":
            for seq, n in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(n, int) \
                        and len(seq) * n > limit:
                    raise _too_big(self.budget)
        elif isinstance(left, int) and isinstance(right, int) and right > 0 \
                and abs(left) > 1 and right * left.bit_length() > limit * 4:
            raise _too_big(self.budget)  # a number with more digits than the bound allows
        return super().call_binop(context, operator, left, right)
