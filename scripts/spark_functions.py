"""Regenerate ``runner/lint/spark_types/functions.json``: the Spark SQL built-ins a model may call,
and how Spark's analyser checks a call of each.

Lists Spark's own function registries (scalar, aggregate, window and generator functions from
``FunctionRegistry``; table-valued functions from ``TableFunctionRegistry``) with their class
names and groups, and gives each one a category. A model may call the ``allowed`` ones only
(``runner/lint/guard.py``); every other category is refused by ``compile``:

- ``jvm``: calls Java methods by name (``reflect``, ``java_method``, ``try_reflect``).
- ``files``: reads files or paths on the driver or the executors (``read_files``, a descriptor
  file of ``from_protobuf``/``to_protobuf``, the Python workers' log files).
- ``generator``: ``range``, allowed only with literal bounds (see guard.py's RANGE_MAX_ROWS).
- ``session``: reads or changes session state beyond the current values (none in Spark 4.2;
  ``SET``/``RESET``/``USE`` are statements, refused as not a query).

Names absent from the registry are refused too (catalog and temporary functions are code).

For each allowed function it also records what ``runner/lint/checks/signatures.py`` checks a call
against, from the registry where it says so and else by asking the analyser (each probe is one
``spark.sql`` analysed, never run):

- ``kind``: ``aggregate``, ``window``, ``generator``, ``higher_order`` or ``scalar``: the
  expression class's place in Spark's hierarchy (``AggregateFunction``, ``WindowFunction``,
  ``Generator``, ``HigherOrderFunction``), else the analysed plan of a call (an ``Aggregate``,
  a ``Generate``), else the registry's group.
- ``nargs``: the argument counts (0 to 7) the analyser accepts, probed with NULL arguments;
  ``wrong_nargs``: those it refuses with ``WRONG_NUM_ARGS`` (7 refused: more are too). A count
  refused for a missing required argument (``mask()``: ``REQUIRED_PARAMETER_NOT_FOUND``) is in
  neither.
- ``params``: the names of named arguments (``mask(str, upperChar => 'Y')``), from the
  function's ``FunctionSignature``; ``required``: how many of them have no default (Spark's
  ``NamedParametersSupport`` refuses a call that gives none for one of these, by position or
  by name).
- ``literal``: argument positions (0-based) that must be constant, with the error class Spark
  gives a column there (``DATATYPE_MISMATCH.NON_FOLDABLE_INPUT``...).
- ``types``: per argument position (the first three), the basic types Spark refuses there with
  ``DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE`` naming that position (the other arguments NULL),
  and the type it requires (and the error class when it is not that one: a function's builder
  refuses ``mode(x, 'true')`` with ``UNEXPECTED_INPUT_TYPE``; a type check's own message,
  ``TYPE_CHECK_FAILURE_WITH_HINT``, names no position: it is the position's when the same call
  with another type there passes, ``approx_top_k(<binary>)``). A position that refuses every
  NULL first (``schema_of_csv``: ``UNEXPECTED_NULL``) is probed with a constant of each type
  instead (``schema_of_csv(42)``).
- ``nulls``: argument positions (0-based) where Spark refuses a ``NULL`` literal, with the
  error class (``explode(NULL)``: ``DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE``, VOID is no
  collection; ``schema_of_json(NULL)``: ``DATATYPE_MISMATCH.UNEXPECTED_NULL``), the other
  arguments typed NULLs of types they take.
- ``refused``: the error class of a function Spark refuses whatever its arguments (the TIME
  functions, ``UNSUPPORTED_TIME_TYPE``: every call of it refused so, no argument type taken).
- ``probed_nargs``: the argument count ``literal`` and ``types`` were probed with (the largest
  accepted up to 3 at which Spark refuses something of a position; ``to_xml(s, options)``
  refuses every call whose options are no map, so it is probed with one argument): they hold
  for calls of at most that many arguments (``make_timestamp``'s six-argument form takes other
  types than its two-argument one).

``operators`` holds the same for the operators: each pair of basic types a binary operator
refuses (each type a unary one refuses), with the error class.

Run it again for a new Spark version (it starts a local SparkSession; about 4 minutes, the
same file each time): ``python scripts/spark_functions.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "runner" / "lint" / "spark_types" / "functions.json"
sys.path.insert(0, str(ROOT))

#: Denied by name: (category, why). Names not in this Spark's registry are kept (a runtime with
#: more built-ins, e.g. Databricks' ``read_files``, gets the specific message).
DENIED: dict[str, tuple[str, str]] = {
    "reflect": ("jvm", "calls Java methods"),
    "java_method": ("jvm", "calls Java methods"),
    "try_reflect": ("jvm", "calls Java methods"),
    "read_files": ("files", "reads files by path"),
    "from_protobuf": ("files", "may read a descriptor file by path"),
    "to_protobuf": ("files", "may read a descriptor file by path"),
    "python_worker_logs": ("files", "reads the Python workers' log files"),
    "range": ("generator", "generates rows without bound unless its bounds are literal"),
}
#: Classes whose instances call into the JVM by name, whatever the function is called.
DENIED_CLASSES = ("CallMethodViaReflection", "TryReflect")

#: The basic types a call is probed with, by the name functions.json and signatures.py use.
TYPES: dict[str, str] = {
    "boolean": "BOOLEAN", "tinyint": "TINYINT", "smallint": "SMALLINT", "int": "INT",
    "bigint": "BIGINT", "float": "FLOAT", "double": "DOUBLE",
    "decimal": "DECIMAL(10,2)", "string": "STRING", "binary": "BINARY", "date": "DATE",
    "timestamp": "TIMESTAMP", "timestamp_ntz": "TIMESTAMP_NTZ",
    "interval_day": "INTERVAL DAY TO SECOND", "interval_month": "INTERVAL YEAR TO MONTH",
    "array": "ARRAY<INT>", "map": "MAP<STRING, INT>", "struct": "STRUCT<a: INT>",
    # a string literal: Spark coerces it where it would refuse a string column
    # (``'a' - DATE'2020-01-01'``), so it is probed as a type of its own
    "string_literal": "STRING",
}
#: A column's type for the literal-ness probe: the first of these a position accepts.
_PREFERRED = ("string", "int", "double", "bigint", "decimal", "boolean", "date", "timestamp",
              "array", "map", "struct", "binary", "timestamp_ntz", "interval_day",
              "interval_month", "smallint", "tinyint", "float")
BINARY_OPERATORS = ("+", "-", "*", "/", "%", "div", "&", "|", "^", "||", "=", "<=>", "!=",
                    "<", "<=", ">", ">=", "and", "or")
UNARY_OPERATORS = ("-", "~", "not")
_ORDINALS = ("first", "second", "third", "fourth")
#: The first that a class extends is its kind (``row_number`` is an aggregate window function:
#: a window function, not an aggregate).
_KINDS = (("window", "org.apache.spark.sql.catalyst.expressions.WindowFunction"),
          ("aggregate", "org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction"),
          ("generator", "org.apache.spark.sql.catalyst.expressions.Generator"),
          ("higher_order", "org.apache.spark.sql.catalyst.expressions.HigherOrderFunction"))
_GROUP_KINDS = {"agg_funcs": "aggregate", "window_funcs": "window",
                "generator_funcs": "generator", "lambda_funcs": "higher_order"}
MAX_ARGS = 7
#: The errors of an argument of a type its position refuses: the type check's, and the one a
#: function builder throws itself (``mode(x, 'true')``: its second argument must be a BOOLEAN).
_TYPE_ERRORS = ("DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE", "UNEXPECTED_INPUT_TYPE")
#: A type check's own message: a type refusal when the same call with another type there passes.
_HINTED = "DATATYPE_MISMATCH.TYPE_CHECK_FAILURE_WITH_HINT"
#: The errors of a call whose argument count Spark refuses without ``WRONG_NUM_ARGS``.
_COUNT_ERRORS = ("WRONG_NUM_ARGS", "REQUIRED_PARAMETER_NOT_FOUND")
#: The error of a call that makes or takes a TIME value (not supported by default in Spark 4.2).
_NO_TIME = "UNSUPPORTED_TIME_TYPE"
TYPED_POSITIONS = 3


def category(name: str, class_name: str) -> str:
    if name in DENIED:
        return DENIED[name][0]
    if class_name.rsplit(".", 1)[-1] in DENIED_CLASSES:
        return "jvm"
    return "allowed"


def _dumps(document: dict[str, Any]) -> str:
    """The document as JSON with one function (operator) a line: reviewable diffs."""
    head = json.dumps({k: v for k, v in document.items()
                       if k not in ("functions", "operators")}, indent=1)
    parts = [head[:-2]]
    for key in ("operators", "functions"):
        rows = ",\n".join(f"  {json.dumps(n)}: {json.dumps(f)}" for n, f in document[key].items())
        parts.append(f',\n "{key}": {{\n{rows}\n }}')
    return "".join(parts) + "\n}\n"


class Prober:
    """Calls analysed by one session, each answered with None (accepted) or Spark's error
    condition and its message parameters."""

    def __init__(self, spark: Any) -> None:
        import py4j.java_gateway
        import py4j.protocol

        # py4j's own error (not pyspark's conversion, which costs a Python traceback per probe)
        py4j.java_gateway.get_return_value = py4j.protocol.get_return_value
        self.session = spark._jsparkSession  # noqa: SLF001 - the JVM session, through py4j
        self.jvm = spark._jvm  # noqa: SLF001
        self.count = 0

    def error(self, sql: str) -> tuple[str, dict[str, str]] | None:
        from py4j.protocol import Py4JError, Py4JJavaError

        self.count += 1
        try:
            self.session.sql(sql)
        except Py4JJavaError as e:
            java = e.java_exception
            try:
                condition = str(java.getCondition() or java.getClass().getSimpleName())
                params = {str(k): str(v) for k, v in dict(java.getMessageParameters()).items()}
            except Py4JError:  # no SparkThrowable (schema_of_json(42): a ClassCastException)
                return str(java.getClass().getSimpleName()), {}
            return condition, params
        return None

    def plan(self, sql: str) -> str:
        return str(self.session.sql(sql).queryExecution().analyzed().toString())

    def kind_of_class(self, class_name: str) -> str | None:
        from py4j.protocol import Py4JError

        lang = self.jvm.java.lang
        try:
            cls = lang.Class.forName(class_name)
            for kind, base in _KINDS:
                if lang.Class.forName(base).isAssignableFrom(cls):
                    return kind
            expression = "org.apache.spark.sql.catalyst.expressions.Expression"
            return "scalar" if lang.Class.forName(expression).isAssignableFrom(cls) else None
        except Py4JError:
            return None

    def params(self, class_name: str) -> tuple[list[str], int]:
        """Named arguments of an ``ExpressionBuilder``'s ``FunctionSignature``, and how many
        of them have no default (they come first: Spark checks that they do)."""
        from py4j.protocol import Py4JError

        try:
            module = self.jvm.java.lang.Class.forName(class_name + "$").getField("MODULE$")
            signature = module.get(None).functionSignature()
        except Py4JError:
            return [], 0
        if not signature.isDefined():
            return [], 0
        parameters = signature.get().parameters()
        params = [parameters.apply(i) for i in range(parameters.size())]
        return [str(p.name()) for p in params], sum(not p.default().isDefined() for p in params)


def _call(name: str, args: list[str]) -> str:
    return f"SELECT `{name}`({', '.join(args)})"


def _null(t: str) -> str:
    """A value of type ``t``: a typed NULL (a string literal for ``string_literal``)."""
    return "'1'" if t == "string_literal" else f"CAST(NULL AS {TYPES[t]})"


def _probe(prober: Prober, name: str, class_name: str, group: str) -> dict[str, Any]:
    """What the analyser says about calls of ``name``."""
    out: dict[str, Any] = {}
    nargs: list[int] = []
    wrong: list[int] = []
    first_plan = ""
    window_error = False
    time_errors = 0  # calls refused because they make or take a TIME value
    for n in range(MAX_ARGS + 1):
        sql = _call(name, ["NULL"] * n)
        error = prober.error(sql)
        if error is None:
            nargs.append(n)
            first_plan = first_plan or prober.plan(sql)
        elif error[0].startswith("WRONG_NUM_ARGS"):
            wrong.append(n)
        elif not error[0].startswith(("PARSE", *_COUNT_ERRORS)):
            nargs.append(n)
            window_error = window_error or error[0].startswith("WINDOW_FUNCTION_WITHOUT_OVER")
            time_errors += error[0] == _NO_TIME
    kind = prober.kind_of_class(class_name)
    if kind is None and first_plan:
        kind = ("aggregate" if first_plan.startswith("Aggregate") else
                "generator" if "Generate " in first_plan else None)
    if kind is None and window_error:
        kind = "window"
    out["kind"] = kind or _GROUP_KINDS.get(group, "scalar")
    if nargs:
        out["nargs"] = nargs
    if wrong:
        out["wrong_nargs"] = wrong
    params, required = prober.params(class_name)
    if params:
        out["params"] = params
    if required:
        out["required"] = required
    arities = sorted((n for n in nargs if 0 < n <= TYPED_POSITIONS), reverse=True)
    arities = arities or [n for n in nargs if n > 0][:1]
    if not arities or out["kind"] == "higher_order":
        return out
    # the largest count at which Spark says something of a position (a NULL options map makes
    # every call of to_xml(s, options) fail, whatever s is: probed as to_xml(s))
    for arity in arities:
        found = _positions(prober, name, arity, every_time=time_errors == len(nargs))
        if found:
            out.update(found)
            break
    return out


def _positions(prober: Prober, name: str, arity: int, *, every_time: bool) -> dict[str, Any]:
    """What the analyser says of the first positions of calls of ``arity`` arguments:
    ``types``, ``literal``, ``nulls`` (and ``probed_nargs``), or ``refused``; empty when it
    says nothing of them. ``every_time``: each call with NULLs was refused for TIME."""
    out: dict[str, Any] = {}
    accepted = {i: _accepted(prober, name, arity, i) for i in range(min(arity, TYPED_POSITIONS))}
    fills = {j: _fill(prober, a) for j, a in accepted.items()}
    if any(not ok for ok, _, _ in accepted.values()):
        # a position that takes no basic type (vector_norm's ARRAY<FLOAT>) refuses the NULL
        # the others were probed with first: probe them again with it typed as it requires
        for i, (_, refused, _) in list(accepted.items()):
            others = [fills.get(j) or "NULL" for j in range(arity)]
            if not refused and any(o != "NULL" for j, o in enumerate(others) if j != i):
                accepted[i] = _accepted(prober, name, arity, i, others)
    if every_time and not any(ok for ok, _, _ in accepted.values()):
        out["refused"] = _NO_TIME  # whatever its arguments: it makes or takes a TIME value
        return out
    types: dict[str, list[Any]] = {}
    literal: dict[str, str] = {}
    nulls = {str(i): refusal for i in accepted
             if (refusal := _null_refused(prober, name, arity, i, accepted)) is not None}
    for i, (ok, refused, required) in accepted.items():
        # a refusal that depends on the other arguments (lag's default: the input's type,
        # VOID when the input is NULL) is not the position's own: refused again with every
        # other argument of an accepted type, else dropped
        classes = {t: _refused_among(prober, name, arity, i, t, accepted) for t in refused
                   if "VOID" not in required}
        refused = [t for t in refused if classes.get(t)]
        if refused:
            error = classes[refused[0]]
            types[str(i)] = [required, refused] + ([error] if error != _TYPE_ERRORS[0] else [])
        # a column of a type the position takes (else of one it does not refuse: some
        # functions refuse every NULL there), the other arguments constants of such types
        for column in _candidates(ok, refused)[:3]:
            args = [_sample(_candidates(*accepted[j][:2])) if j in accepted else "NULL"
                    for j in range(arity)]
            args[i] = "c"
            answer = prober.error(_call(name, args) + f" FROM (SELECT {_null(column)} AS c)")
            if answer is None:
                break
            if "FOLDABLE" in answer[0] or "LITERAL" in answer[0] or "CONSTANT" in answer[0]:
                literal[str(i)] = answer[0]
                break
    if types:
        out["types"] = types
    if literal:
        out["literal"] = literal
    if nulls:
        out["nulls"] = nulls
    if types or literal or nulls:
        out["probed_nargs"] = arity
    return out


#: A value of each type, for the other arguments of a literal-ness probe (some functions refuse
#: a NULL there before they look at the column).
_SAMPLES = {"string": "'1'", "int": "1", "double": "0.5D", "bigint": "1L", "decimal": "0.5",
            "boolean": "true", "date": "DATE'2020-01-01'",
            "timestamp": "TIMESTAMP'2020-01-01 00:00:00'", "array": "array(1)",
            "map": "map('a', 1)", "struct": "named_struct('a', 1)"}
#: A constant of each type of TYPES, for a position that refuses every NULL before it looks at
#: the type (``schema_of_csv(CAST(NULL AS INT))``: UNEXPECTED_NULL; ``schema_of_csv(42)``:
#: UNEXPECTED_INPUT_TYPE).
VALUES = {**{t: f"CAST({v} AS {TYPES[t]})" for t, v in _SAMPLES.items()},
           "tinyint": "1Y", "smallint": "1S", "float": "CAST(1 AS FLOAT)",
           "binary": "X'01'", "timestamp_ntz": "TIMESTAMP_NTZ'2020-01-01 00:00:00'",
           "interval_day": "INTERVAL '1 00:00:00' DAY TO SECOND",
           "interval_month": "INTERVAL '1-0' YEAR TO MONTH", "string_literal": "'1'"}


def _typed_error(prober: Prober, name: str, args: list[str], i: int, t: str
                 ) -> tuple[str, dict[str, str]] | None:
    """Spark's answer to a call with a value of type ``t`` at ``i`` (``args[i]``, a typed
    NULL): again with a constant of ``t`` there when it refuses the NULL as a NULL."""
    error = prober.error(_call(name, args))
    if error is not None and error[0] == "DATATYPE_MISMATCH.UNEXPECTED_NULL":
        args = list(args)
        args[i] = VALUES[t]
        error = prober.error(_call(name, args))
    return error


def _candidates(ok: list[str], refused: list[str]) -> list[str]:
    """The types to try at a position: those it accepts, else those it does not refuse."""
    return [t for t in _PREFERRED if t in ok] or [t for t in _PREFERRED if t not in refused]


def _sample(types: list[str]) -> str:
    return next((_SAMPLES[t] for t in types if t in _SAMPLES), "NULL")


_FILLS: dict[str, bool] = {}


def _fill(prober: Prober, accepted: tuple[list[str], list[str], str]) -> str | None:
    """A typed NULL for a position: of the first type it accepts, else of the type Spark
    said it requires when that is one type a session takes (``ARRAY<FLOAT>``; not
    ``INTEGRAL``, not ``TIME``), else None."""
    ok, _, required = accepted
    first = next((t for t in _PREFERRED if t in ok), None)
    if first is not None:
        return _null(first)
    if not required or " or " in required.lower() or "(" in required:
        return None
    value = f"CAST(NULL AS {required})"
    if required not in _FILLS:
        _FILLS[required] = prober.error(f"SELECT {value}") is None
    return value if _FILLS[required] else None


def _accepted(prober: Prober, name: str, arity: int, i: int, others: list[str] | None = None
              ) -> tuple[list[str], list[str], str]:
    """The types position ``i`` accepts and refuses (the other arguments ``others``, else
    NULL), and the type Spark says it requires."""
    ok: list[str] = []
    refused: list[str] = []
    hinted: list[str] = []
    required = ""
    for t in TYPES:
        args = list(others) if others is not None else ["NULL"] * arity
        args[i] = _null(t)
        error = _typed_error(prober, name, args, i, t)
        if error is None:
            ok.append(t)
        elif _names_position(error, i):
            refused.append(t)
            required = error[1].get("requiredType", "").replace('"', "")
        elif error[0] == _HINTED:
            hinted.append(t)
    if ok and hinted and not refused:
        # a type check's own message names no position: this one's when nothing but the type
        # there changed (``to_avro(s, 42)``; confirmed again by _refused_among)
        return ok, hinted, " or ".join(dict.fromkeys(TYPES[t] for t in ok))
    return ok, refused, required


def _names_position(error: tuple[str, dict[str, str]], i: int) -> bool:
    """``error`` refuses the type of argument ``i``, which was no NULL literal: a refusal
    of a VOID is another argument's (``collate(s, NULL)``: the builder names the collation
    "first")."""
    return error[0] in _TYPE_ERRORS and error[1].get("paramIndex") == _ORDINALS[i] and \
        error[1].get("inputType") != '"VOID"'


def _refused_among(prober: Prober, name: str, arity: int, i: int, t: str,
                   accepted: dict[int, tuple[list[str], list[str], str]]) -> str | None:
    """The error class position ``i`` still refuses ``t`` with, the other arguments typed:
    each of ``t`` where it accepts ``t``, else of the first type it accepts (NULL past the
    probed positions); None when it takes it so."""
    args = []
    for j in range(arity):
        ok = accepted[j][0] if j in accepted else []
        other = t if t in ok else next((o for o in _PREFERRED if o in ok), None)
        fill = _fill(prober, accepted[j]) if j in accepted else None
        args.append(_null(t) if j == i else _null(other) if other else fill or "NULL")
    error = _typed_error(prober, name, args, i, t)
    if error is not None and error[0] == _HINTED and accepted[i][0]:
        args[i] = _null(accepted[i][0][0])  # the same call with a type the position takes
        return _HINTED if prober.error(_call(name, args)) is None else None
    return error[0] if error is not None and _names_position(error, i) else None


def _null_refused(prober: Prober, name: str, arity: int, i: int,
                  accepted: dict[int, tuple[list[str], list[str], str]]) -> str | None:
    """The error class Spark refuses a ``NULL`` literal (type VOID) at position ``i`` with,
    the other arguments typed as in :func:`_refused_among`; None when it takes it (most
    positions: Spark casts NULL to the type they need)."""
    args = []
    for j in range(arity):
        ok = accepted[j][0] if j in accepted else []
        other = next((o for o in _PREFERRED if o in ok), None)
        fill = _fill(prober, accepted[j]) if j in accepted else None
        args.append("NULL" if j == i else _null(other) if other else fill or "NULL")
    error = prober.error(_call(name, args))
    if error is None:
        return None
    if error[0] == "DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE" and \
            error[1].get("paramIndex") == _ORDINALS[i] and error[1].get("inputType") == '"VOID"':
        return error[0]
    if error[0] != "DATATYPE_MISMATCH.UNEXPECTED_NULL":
        return None
    args[i] = _sample(_candidates(*accepted[i][:2]))  # the NULL's own: a value there passes
    again = prober.error(_call(name, args)) if args[i] != "NULL" else error
    return error[0] if again is None or again[0] != error[0] else None


def _operators(prober: Prober) -> dict[str, dict[str, str]]:
    """Per operator, the refused type pairs (``"string date"``) or types, with the class."""
    out: dict[str, dict[str, str]] = {}
    for op in BINARY_OPERATORS:
        refused: dict[str, str] = {}
        for left in TYPES:
            for right in TYPES:
                error = prober.error(f"SELECT {_null(left)} {op} {_null(right)}")
                if error is not None:
                    refused[f"{left} {right}"] = error[0]
        out[op] = refused
    for op in UNARY_OPERATORS:
        unary: dict[str, str] = {}
        for t in TYPES:
            error = prober.error(f"SELECT {op} {_null(t)}")
            if error is not None:
                unary[t] = error[0]
        out[f"unary {op}"] = unary
    return out


def main() -> int:
    argparse.ArgumentParser(
        description=f"Rewrite {OUT.relative_to(ROOT)}: Spark's built-in functions and how its "
        "analyser checks a call of each, probed on a local Spark session (2 to 4 minutes; see "
        "the module's docstring).").parse_args()
    from runner.runtime.client.session import build_session, stop_session

    started = time.monotonic()
    spark = build_session(master="local[1]", app_name="spark-functions")
    try:
        jvm = spark._jvm  # noqa: SLF001 - Spark's registry through py4j
        assert jvm is not None
        analysis = jvm.org.apache.spark.sql.catalyst.analysis
        groups: dict[str, str] = {}
        registry = analysis.FunctionRegistry.expressions()
        keys = registry.keySet().iterator()
        while keys.hasNext():
            key = keys.next()
            groups[str(key)] = str(registry.get(key).get()._1().getGroup() or "")  # noqa: SLF001 - a Scala tuple through py4j
        tvfs = analysis.TableFunctionRegistry.builtin().listFunction()
        for i in range(tvfs.size()):
            groups.setdefault(str(tvfs.apply(i).funcName()), "table_funcs")
        functions: dict[str, dict[str, Any]] = {}
        for f in spark.catalog.listFunctions():
            name = f.name.lower()
            functions[name] = {"class": f.className or "", "group": groups.get(name, ""),
                               "category": category(name, f.className or "")}
        for name, group in groups.items():  # table-valued functions listFunctions omits
            functions.setdefault(name.lower(), {"class": "", "group": group,
                                                "category": category(name.lower(), "")})
        for name, (cat, _) in DENIED.items():
            functions.setdefault(name, {"class": "", "group": "", "category": cat})
        prober = Prober(spark)
        for i, name in enumerate(sorted(functions), 1):
            if i % 100 == 0:
                print(f"probed {i} of {len(functions)} functions ({prober.count} calls, "
                      f"{time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)
            record = functions[name]
            if record["category"] == "allowed" and name[0].isalpha() and \
                    record["group"] != "table_funcs":
                record.update(_probe(prober, name, record["class"], record["group"]))
        document = {
            "spark_version": spark.version,
            "generated_by": "python scripts/spark_functions.py",
            "types": TYPES,
            "reasons": {name: why for name, (_, why) in DENIED.items()},
            "operators": _operators(prober),
            "functions": dict(sorted(functions.items())),
        }
    finally:
        stop_session(spark)
    OUT.write_text(_dumps(document), encoding="utf-8")
    denied = sorted(n for n, f in functions.items() if f["category"] != "allowed")
    version = document["spark_version"]
    print(f"{OUT.relative_to(ROOT)}: {len(functions)} functions of Spark {version} "
          f"({prober.count} calls analysed in {time.monotonic() - started:.0f} s); "
          f"denied: {', '.join(denied)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
