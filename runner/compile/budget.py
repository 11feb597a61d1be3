"""A budget for rendering one model: time and output size.

``compile`` renders models from pull requests, which must not be able to hang it (nested
loops, exponential macros) or exhaust its memory (``'x' * 10 ** 9``). A timer (``SIGALRM``,
in the main thread) interrupts a render that runs past its seconds whatever it is doing; the
output is counted as it is produced; and the sandbox refuses a ``*`` or ``**`` whose result
would already be over the size bound, before building it. A model within budget pays two
timer system calls and a length sum.
"""

from __future__ import annotations

import functools
import re
import signal
import string
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from jinja2 import Environment, nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.nodes import EvalContext
from jinja2.runtime import Context
from jinja2.sandbox import SandboxedEnvironment

__all__ = ["BudgetExceeded", "BudgetedEnvironment", "RenderBudget", "bounded", "time_limit",
           "timer_handler"]


@dataclass(frozen=True)
class RenderBudget:
    """What one model's render (and lint) may take, and the whole compile.

    Attributes:
        seconds: one model's render.
        max_chars: the rendered SQL, and any one string or list a template builds.
        max_built: characters all string operations of one render build, in all.
        lint_seconds: one model's parse and lint.
        max_sql_chars: rendered SQL that lint parses (larger: a model error).
        max_depth: nesting of parentheses, brackets and CASE in a model's SQL.
        total_seconds: render and lint of every model of one compile.
    """

    seconds: float = 5.0
    max_chars: int = 10_000_000
    max_built: int = 100_000_000
    lint_seconds: float = 10.0
    max_sql_chars: int = 2_000_000
    max_depth: int = 200
    total_seconds: float = 300.0


class BudgetExceeded(Exception):
    """A render ran out of its budget; the message says which part."""


def _too_big(budget: RenderBudget) -> BudgetExceeded:
    return BudgetExceeded(f"rendering produced more than {budget.max_chars:,} characters "
                          "(a loop or an expression that grows without bound?)")


class _Expired(BaseException):
    """Raised by the timer's signal handler (a BaseException: no ``except Exception`` in
    template code or Jinja swallows it); :func:`time_limit` turns it into BudgetExceeded."""


def _expired(_signum: int, _frame: object) -> None:
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
def time_limit(budget: RenderBudget, *, seconds: float | None = None,
               what: str = "rendering") -> Iterator[None]:
    """Raise :class:`BudgetExceeded` inside the block after ``seconds`` (default:
    ``budget.seconds``); ``what`` names the work in the message.

    Only the main thread receives signals: elsewhere (and without ``setitimer``) the block
    runs unlimited. A timer set before is given back what is left of it afterwards.
    """
    if not _can_time():
        yield
        return
    limit = budget.seconds if seconds is None else seconds
    if not _installed:  # outside timer_handler(): install the handler for this block only
        with timer_handler(), time_limit(budget, seconds=limit, what=what):
            yield
        return
    started = time.monotonic()
    outer, interval = signal.setitimer(signal.ITIMER_REAL, max(limit, 0.001))
    try:
        yield
    except _Expired as stopped:  # keeps the template frames where the render was stopped
        why = " (a loop or a macro that does not end?)" if what == "rendering" else ""
        raise BudgetExceeded(f"{what} took longer than {limit:g}s{why}").with_traceback(
            stopped.__traceback__) from None
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


_PRINTF_WIDTH = re.compile(r"%[#0 +\-]*(\*|\d+)?(?:\.(\*|\d+))?")
_SPEC_NUMBER = re.compile(r"\d+")


def _format_widths(fmt: str, args: tuple[Any, ...]) -> int:
    """The largest field width or precision a ``%`` format or ``str.format`` string asks for
    (``*`` and nested ``{}`` take theirs from the arguments: the largest integer given)."""
    widest = 0
    dynamic = False
    for m in _PRINTF_WIDTH.finditer(fmt):
        for part in m.groups():
            if part == "*":
                dynamic = True
            elif part:
                widest = max(widest, int(part))
    if "{" in fmt:
        try:
            fields = list(string.Formatter().parse(fmt))
        except ValueError:
            fields = []
        for _, _, spec, _ in fields:
            if spec:
                dynamic = dynamic or "{" in spec
                widest = max([widest, *(int(n) for n in _SPEC_NUMBER.findall(spec))])
    if dynamic:
        ints = [a for a in args if isinstance(a, int)]
        widest = max([widest, *ints])
    return widest


def _printf_args(right: Any) -> tuple[Any, ...]:
    if isinstance(right, tuple):
        return right
    if isinstance(right, dict):
        return tuple(right.values())
    return (right,)


class _BudgetedCodeGenerator(CodeGenerator):
    """Templates whose ``~`` goes through :meth:`BudgetedEnvironment.concat`."""

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        self.write("environment.concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


#: Filters whose output can be much larger than their input: checked before they run.
_GROWING_FILTERS = ("center", "indent", "wordwrap", "format", "join", "replace", "batch",
                    "slice", "truncate", "list", "sum", "string", "pprint")


class BudgetedEnvironment(SandboxedEnvironment):
    """The sandbox, with every string-building operation inside the budget: ``*``, ``**``,
    ``+``, ``%``, ``~``, ``str.format``, the str methods that grow (``center``, ``ljust``,
    ``rjust``, ``zfill``, ``expandtabs``, ``join``, ``replace``) and the filters that do
    (:data:`_GROWING_FILTERS`). Each is refused *before* it builds a string (or list) over
    ``max_chars``; and what a render builds in all is counted against ``max_built``
    (:meth:`start` resets the count for the next model)."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})
    code_generator_class = _BudgetedCodeGenerator

    def __init__(self, *args: Any, budget: RenderBudget, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.budget = budget
        self.built = 0
        for name in _GROWING_FILTERS:
            if name in self.filters:
                self.filters[name] = self._budgeted_filter(name, self.filters[name])

    def start(self) -> None:
        """A new model's render begins: nothing built yet."""
        self.built = 0

    def grow(self, size: int) -> None:
        """Account for building ``size`` characters (or items); refuse past the budget."""
        if size > self.budget.max_chars:
            raise _too_big(self.budget)
        self.built += size
        if self.built > self.budget.max_built:
            raise BudgetExceeded(f"string operations built more than "
                                 f"{self.budget.max_built:,} characters in all (a loop that "
                                 "copies a growing string?)")

    def _width(self, width: Any) -> None:
        if isinstance(width, int) and width > self.budget.max_chars:
            raise _too_big(self.budget)

    def concat(self, values: Iterable[Any]) -> str:
        parts = [str(v) for v in values]
        self.grow(sum(map(len, parts)))
        return "".join(parts)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        limit = self.budget.max_chars
        if operator == "*":
            for seq, n in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(n, int):
                    self.grow(len(seq) * max(n, 0))
        elif operator == "+":
            if isinstance(left, (str, list, tuple)) and isinstance(right, (str, list, tuple)):
                self.grow(len(left) + len(right))
        elif operator == "%":
            if isinstance(left, str):
                self._width(_format_widths(left, _printf_args(right)))
                result = super().call_binop(context, operator, left, right)
                self.grow(len(result))
                return result
        elif isinstance(left, int) and isinstance(right, int) and right > 0 \
                and abs(left) > 1 and right * left.bit_length() > limit * 4:
            raise _too_big(self.budget)  # a number with more digits than the bound allows
        return super().call_binop(context, operator, left, right)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        fmt = value.__self__

        def budgeted(*args: Any, **kwargs: Any) -> str:
            self._width(_format_widths(fmt, (*args, *kwargs.values())))
            result = wrapped(*args, **kwargs)
            self.grow(len(result))
            return result

        return budgeted

    def call(__self, __context: Any, __obj: Any, *args: Any,
             **kwargs: Any) -> Any:
        owner = getattr(__obj, "__self__", None)
        if isinstance(owner, str):
            args = __self._check_str_method(owner, getattr(__obj, "__name__", ""), args)
        elif isinstance(owner, (list, dict, set)) and args and hasattr(args[0], "__len__") \
                and getattr(__obj, "__name__", "") in ("extend", "update"):
            __self.grow(len(owner) + len(args[0]))  # l.extend(l) doubles a list
        result = super().call(__context, __obj, *args, **kwargs)
        if isinstance(result, (str, list)):
            __self.grow(len(result))
        return result

    def _check_str_method(self, text: str, name: str, args: tuple[Any, ...]
                          ) -> tuple[Any, ...]:
        if name in ("center", "ljust", "rjust", "zfill") and args:
            self._width(args[0])
        elif name == "expandtabs":
            size = args[0] if args and isinstance(args[0], int) else 8
            self.grow(len(text) + text.count("\t") * max(size, 0))
        elif name == "join" and args:
            items = list(args[0])
            self.grow(sum(len(i) for i in items if isinstance(i, str))
                      + len(text) * max(len(items) - 1, 0))
            return (items, *args[1:])
        elif name == "replace" and len(args) >= 2:
            self._replace(text, *args[:3])
        return args

    def _replace(self, text: Any, old: Any, new: Any, count: Any = -1) -> None:
        if isinstance(text, str) and isinstance(old, str) and isinstance(new, str):
            n = text.count(old) if old else len(text) + 1
            if isinstance(count, int) and count >= 0:
                n = min(n, count)
            self.grow(len(text) + n * max(len(new) - len(old), 0))

    def _budgeted_filter(self, name: str, func: Callable[..., Any]) -> Callable[..., Any]:
        env = self

        @functools.wraps(func)  # keeps Jinja's pass_context/eval_context/environment mark
        def budgeted(*args: Any, **kwargs: Any) -> Any:
            lead = 0  # the context, eval context or environment Jinja passes first
            while lead < len(args) and isinstance(args[lead], (Context, EvalContext,
                                                               Environment)):
                lead += 1
            given = list(args[lead:])
            for value in (*given, *kwargs.values()):
                env._width(value)
            if name == "join" and given and not isinstance(given[0], str):
                given[0] = items = list(given[0])  # a generator is read once: keep the list
                env.grow(sum(len(str(i)) for i in items))
            elif name == "replace" and len(given) >= 3:
                env._replace(*given[:4])
            elif name in ("format", "indent", "wordwrap") and given:
                text = str(given[0])
                extra = [v for v in (*given[1:], *kwargs.values()) if isinstance(v, str)]
                env.grow(len(text) * (1 + max(map(len, extra), default=0)))
                if name == "format":
                    env._width(_format_widths(text, (*given[1:], *kwargs.values())))
            result = func(*args[:lead], *given, **kwargs)
            if isinstance(result, (str, list)):
                env.grow(len(result))
            return result

        return budgeted
