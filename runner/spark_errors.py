"""Spark's errors, read in one place: which kind of failure it is, and the line to show.

pyspark raises three kinds of errors: its own ``PySparkException``\\ s, Java exceptions that py4j
converted into them (``CapturedException``: ``AnalysisException``, ``StreamingQueryException``...,
each with Spark's error condition), and ``Py4JJavaError`` for every other Java exception; a
failed job is a ``SparkException`` whose Java cause chain holds the task's own error. The runner
tells them apart by type: Python exception classes, and the classes of the Java exceptions in
the cause chain (:func:`is_storage_failure`), not by the words of Spark's messages. The
exceptions, all here: the runner's own words carried through Spark, which only text can carry
(:func:`runner_error_in`: an error the runner raised inside a Python worker, the Kafka source;
:func:`marked_text_in`: the message of a ``raise_error()`` the runner put into SQL, a failing
expectation), and delta-rs' operating-system errors, which it names only in its text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

__all__ = ["bare_message", "chain", "connect_causes", "delta_error", "first_line",
           "is_kafka_timeout", "is_storage_failure", "java_causes", "marked_text_in",
           "root_cause", "runner_error_in", "sql_position"]

_MAX_CHARS = 400
_MAX_CAUSES = 32  # a Java cause chain is a few links long; bounds a cyclic one


def first_line(error: BaseException | str) -> str:
    """The first line of ``error``'s text (at most 400 characters), else its class name.

    >>> first_line(ValueError("bad value\\n  at line 2"))
    'bad value'
    >>> first_line(KeyError())
    'KeyError'
    """
    lines = str(error).strip().splitlines()
    if not lines:
        return type(error).__name__ if isinstance(error, BaseException) else ""
    line = lines[0]
    return line if len(line) <= _MAX_CHARS else line[:_MAX_CHARS] + "..."


_JAVA_CLASS = re.compile(r"(?:[a-z_][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error)")


def bare_message(line: str, error_class: str | None, *, position: bool = True) -> str:
    """Spark's first line without what the runner shows apart: a leading ``[error_class]``
    (shown once, by whoever prints the class), ``SQLSTATE: ...`` and the trailing ``;`` its
    plan dump follows. Spark's position in the SQL it ran (``line 1 pos 28``) is kept in
    parentheses, or dropped with ``position=False`` (the caller names the model file's).

    >>> bare_message("[TRAILING_COMMA_IN_SELECT] Trailing comma detected in SELECT clause. "
    ...              "SQLSTATE: 42601; line 1 pos 28;", "TRAILING_COMMA_IN_SELECT")
    'Trailing comma detected in SELECT clause. (line 1 pos 28)'
    >>> bare_message("org.apache.spark.SparkArithmeticException: [DIVIDE_BY_ZERO] Division by "
    ...              "zero.", "DIVIDE_BY_ZERO")
    'Division by zero.'
    >>> bare_message("[X] Bad. SQLSTATE: 42601; line 1 pos 28;", "X", position=False)
    'Bad.'
    """
    java, sep, rest = line.partition(": ")  # a Java cause: "org.apache...Exception: [X] ..."
    if sep and _JAVA_CLASS.fullmatch(java):
        line = rest
    if error_class and line.startswith(f"[{error_class}]"):
        line = line[len(error_class) + 2:].lstrip()
    text, _, where = line.partition(" SQLSTATE: ")
    where = where.partition(";")[2].strip().rstrip(";").strip()
    text = text.rstrip().rstrip(";")
    return f"{text} ({where})" if where and position else text


def chain(error: BaseException) -> Iterator[BaseException]:
    """``error``, then the exceptions it was raised from (or while handling), in order."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _origin_causes(error: BaseException) -> list[Any]:
    """The Java exceptions behind a converted pyspark error, outermost first.

    A ``CapturedException`` keeps the Java throwable as ``_origin``; the one
    ``StreamingQuery.exception()`` returns has none, but keeps the Java cause as ``_cause``.
    """
    from py4j.protocol import Py4JError

    for e in chain(error):
        java = next((j for j in (getattr(e, "_origin", None), getattr(e, "_cause", None))
                     if j is not None and hasattr(j, "getClass")), None)
        if java is None:
            continue
        causes: list[Any] = []
        try:
            while java is not None and len(causes) < _MAX_CAUSES:
                causes.append(java)
                java = java.getCause()
        except Py4JError:
            pass
        return causes
    return []


_KAFKA_TIMEOUT = "org.apache.kafka.common.errors.TimeoutException"


def is_kafka_timeout(error: BaseException) -> bool:
    """True when a Kafka client gave up waiting for the brokers (Spark's Kafka source: the
    Java client's ``TimeoutException`` among the causes). A streaming query's error may carry
    only the text of its Java cause, ``Throwable.toString()``: the class name, then ``: ``."""
    if first_line(error).startswith(_KAFKA_TIMEOUT + ":"):
        return True
    return any(_is_a(java, _KAFKA_TIMEOUT)
               for java in [*_origin_causes(error), *java_causes(error)])


def java_causes(error: BaseException) -> list[Any]:
    """The Java exceptions behind the first ``Py4JJavaError`` in ``error``'s chain, outermost
    first; empty when there is none (or the JVM is gone)."""
    from py4j.protocol import Py4JError, Py4JJavaError

    for e in chain(error):
        if isinstance(e, Py4JJavaError):
            causes: list[Any] = []
            try:
                java = e.java_exception
                while java is not None and len(causes) < _MAX_CAUSES:
                    causes.append(java)
                    java = java.getCause()
            except Py4JError:  # the JVM went away: keep what was read
                pass
            return causes
    return []


_CAUSED_BY = "Caused by: "


def connect_causes(error: BaseException) -> list[str]:
    """The messages of the server's causes behind the first Spark Connect error in ``error``'s
    chain, outermost first; empty when there is none. A Connect client holds no Java
    exception: the server sends its cause chain as the error's JVM stack trace, one
    ``Caused by: <class>: <message>`` line per cause (a write task wraps a model's
    ``DIVIDE_BY_ZERO`` in ``TASK_WRITE_FAILED`` there too)."""
    try:
        from pyspark.errors.exceptions.connect import SparkConnectGrpcException
    except ImportError:  # no Connect client installed
        return []
    for e in chain(error):
        if isinstance(e, SparkConnectGrpcException):
            trace = e.getStackTrace() or ""
            return [line[len(_CAUSED_BY):].partition(": ")[2]
                    for line in trace.splitlines() if line.startswith(_CAUSED_BY)]
    return []


def root_cause(error: BaseException) -> str:
    """The line worth showing for ``error``: the innermost Java exception behind a py4j error
    (py4j's own line, ``An error occurred while calling o123.save.``, says nothing), or the
    innermost server cause of a Spark Connect error, else :func:`first_line`."""
    from py4j.protocol import Py4JError

    causes = java_causes(error)
    if causes:
        try:
            return first_line(str(causes[-1].toString()))
        except Py4JError:
            pass
    remote = [c for c in connect_causes(error) if c]
    if remote:
        return first_line(remote[-1])
    return first_line(error)


def sql_position(error: BaseException) -> tuple[int, int, str] | None:
    """Where Spark's ``error`` points in the SQL text it ran: ``(start, stop, fragment)``, the
    0-based offsets of the fragment's first and last characters, or None.

    Read from the error's query contexts (``getQueryContext()``, typed: the message's
    ``== SQL (line 3, position 12) ==`` is their rendering), of a pyspark exception in its
    chain, else of its Java causes, innermost first: the first context of the SQL text itself
    (not of a view it reads, whose ``objectType`` is ``VIEW``). A DataFrame context (an error
    of a frame the runner built in Python) has no SQL text: skipped.
    """
    from py4j.protocol import Py4JError

    for source in [*chain(error), *reversed(java_causes(error))]:
        get = getattr(source, "getQueryContext", None)
        if not callable(get):
            continue
        try:
            for context in get() or ():
                if str(context.contextType()).rpartition(".")[2] != "SQL" \
                        or context.objectType():
                    continue
                start, stop = int(context.startIndex()), int(context.stopIndex())
                if 0 <= start <= stop:
                    return start, stop, str(context.fragment())
        except (Py4JError, AttributeError, TypeError, ValueError):
            continue
    return None


def _is_a(java: Any, class_name: str) -> bool:
    """Whether the Java object's class is ``class_name`` or extends it."""
    return class_name in _class_names(java)


#: Packages of delta-spark's own exceptions (``DeltaAnalysisException``, the
#: ``ConcurrentAppendException`` family, protocol and schema errors).
_DELTA_PACKAGES = ("io.delta.", "org.apache.spark.sql.delta.")


def _class_names(java: Any) -> Iterator[str]:
    """The names of the Java object's class and its superclasses."""
    from py4j.protocol import Py4JError

    try:
        cls = java.getClass()
        while cls is not None:
            yield str(cls.getName())
            cls = cls.getSuperclass()
    except Py4JError:
        return


def delta_error(error: BaseException) -> str | None:
    """The first line of delta-spark's own exception behind ``error`` (a Delta exception class
    in a Java cause chain: a conflict, a schema or protocol error), else None: then the
    failure belongs to the query that computes the rows (a task's error, e.g.
    ``DIVIDE_BY_ZERO``), that is to the model.

    Every Java error in ``error``'s chain is searched, not only the first: pyspark's own
    conversion of a Delta error can fail (Spark's error-class table lacks Delta's classes:
    ``[INTERNAL_ERROR] Cannot find main error class 'DELTA_...'``), raising a second Java
    error while handling the first.
    """
    from py4j.protocol import Py4JError, Py4JJavaError

    for e in chain(error):  # over Spark Connect: the server names the Java class in the text
        if type(e).__module__ == "pyspark.errors.exceptions.connect" and (
                any(f"({p}" in str(e) for p in _DELTA_PACKAGES)):
            return first_line(e)
    causes = list(_origin_causes(error))
    for e in chain(error):
        if isinstance(e, Py4JJavaError):
            causes += java_causes(e)
    for java in causes:
        if any(name.startswith(_DELTA_PACKAGES) for name in _class_names(java)):
            try:
                return first_line(str(java.toString()))
            except Py4JError:
                return first_line(error)
    return None


# delta-rs has no error class for an operating-system error; its text carries Rust's io::Error.
_DELTA_RS_OS_ERROR = re.compile(r"\(os error \d+\)|\bOs \{ code: \d+")


def is_storage_failure(error: BaseException) -> bool:
    """True when ``error`` comes from the file system rather than from the data or the SQL.

    That is an ``OSError`` in its chain, a ``java.io.IOException`` among its Java causes
    (Hadoop's ``FileAlreadyExistsException`` and java.nio's ``AccessDeniedException`` extend
    it), or a delta-rs error carrying an operating-system error. delta-rs raises one class for
    every failure of its Rust core and names the OS error only in its text, so that is the one
    place its words are read.
    """
    errors = list(chain(error))
    if any(isinstance(e, OSError) for e in errors):
        return True
    if any(_is_delta_rs(e) and _DELTA_RS_OS_ERROR.search(str(e)) for e in errors):
        return True
    return any(_is_a(java, "java.io.IOException") for java in java_causes(error))


def _is_delta_rs(error: BaseException) -> bool:
    """An exception of delta-rs (its classes live in ``deltalake.exceptions``), told by class
    without importing delta-rs here: Delta's library is the sinks' business."""
    return any(c.__module__.startswith("deltalake") for c in type(error).__mro__)


_RUNNER_ERROR = re.compile(
    r"^runner\.[\w.]*?(\w+Error): (.*?)(?=\n SQLSTATE|\n=== Streaming Query|\n\s*at |\Z)",
    re.MULTILINE | re.DOTALL)


def marked_text_in(error: BaseException, start: str, end: str) -> str | None:
    """The text between ``start`` and ``end`` in the message of ``error`` or of an error in
    its chain: how a ``raise_error('<start> ... <end>')`` the runner wrote into SQL comes
    back from Spark (as ``USER_RAISED_EXCEPTION``, wrapped in whatever the job raised).

    >>> marked_text_in(RuntimeError("[X] job failed: <<boom>> at ..."), "<<", ">>")
    'boom'
    """
    pattern = re.compile(re.escape(start) + r"\s?(.*?)\s?" + re.escape(end), re.S)
    for current in chain(error):
        match = pattern.search(str(current))
        if match:
            return match.group(1)
    return None


def runner_error_in(error: BaseException | str) -> str | None:
    """The runner's own message inside a Spark error raised by Python code Spark ran (a
    Python data source, on the driver or in a task), or None.

    Such an error reaches the query as a ``StreamingQueryException`` whose text embeds the
    Python traceback; this returns the last ``runner....Error: message`` in it (with its hint
    line), for a one-message report.

    >>> runner_error_in("[STREAM_FAILED] ...\\nrunner.errors.SourceError: boom\\n SQLSTATE: 1")
    'boom'
    """
    matches = _RUNNER_ERROR.findall(str(error))
    return matches[-1][1].strip() if matches else None
