"""Map positions in a model's rendered SQL back to its source file.

Lint finds problems in the SQL Jinja rendered, whose lines and columns move away from the
file's as soon as a loop repeats text, a ``{{ config(...) }}`` spanning lines renders as
nothing, or a macro expands. :class:`SourceMarkers` is a Jinja extension that, while a model
template is tokenized, puts an invisible marker (private-use characters) in front of every
piece of literal text and every ``{{ ... }}`` and ``{% ... %}`` tag, naming where it starts in
the file. :func:`strip_markers` removes them from the rendered text and keeps a
:class:`SourceMap`, which turns a rendered position into the file's line and column: exact
inside literal text, the tag's own position inside what an expression or statement printed
(a macro's expansion is reported at its call, with the macro's file and line).

Text a template captures as a value (``{% set x %}...{% endset %}``, macro bodies, ``call``
and ``filter`` blocks) carries no markers, so values the template computes are unchanged.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from jinja2 import Environment
from jinja2.ext import Extension
from jinja2.lexer import Lexer, Token, TokenStream

__all__ = ["Origin", "SourceMap", "SourceMarkers", "strip_markers"]

_OPEN, _CLOSE = "\ue000", "\ue001"
_MARKER = re.compile(f"{_OPEN}(\\d+){_CLOSE}")
_CAPTURING = {"macro": "endmacro", "call": "endcall", "filter": "endfilter", "set": "endset"}
#: Tags that print text of their own (not the file's literal text at their place).
_PRINTING = frozenset({"call", "filter", "include", "block"})


@dataclass
class Origin:
    """Where a piece of rendered text comes from: a file position, and whether the text is
    the file's own (``literal``) or printed by the tag there (names: the names it uses)."""

    path: str
    line: int
    column: int
    literal: bool
    names: list[str] = field(default_factory=list)


class SourceMarkers(Extension):
    """Marks the model templates named in ``environment.marked_templates`` (a set)."""

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        environment.extend(marked_templates=set(), source_origins=[])
        self._sources: dict[str, str] = {}

    def preprocess(self, source: str, name: str | None, filename: str | None = None) -> str:  # noqa: ARG002 - Jinja extension hook signature
        if name and name in self.environment.marked_templates and _OPEN not in source:  # type: ignore[attr-defined]
            self._sources[name] = source
        return source

    def filter_stream(self, stream: TokenStream) -> TokenStream | Iterable[Token]:
        source = self._sources.pop(stream.name or "", None)
        if source is None:
            return stream
        return _Marker(source, stream.name or "", self.environment.source_origins).tokens(  # type: ignore[attr-defined]
            self.environment.lexer)


class _Marker:
    """Re-tokenizes one template, recording where each raw token starts in the source."""

    def __init__(self, source: str, name: str, origins: list[Origin]) -> None:
        self.source = source
        self.name = name
        self.origins = origins
        self.offset = 0
        self._cursor = 0
        self._starts = [0] + [i + 1 for i, c in enumerate(source) if c == "\n"]

    def _raw(self, raw: Iterable[tuple[int, str, str]]) -> Iterator[tuple[int, str, str]]:
        for lineno, kind, value in raw:
            found = self.source.find(value, self._cursor)
            self.offset = found if found >= 0 else self._cursor
            self._cursor = self.offset + len(value) if found >= 0 else self._cursor
            yield lineno, kind, value

    def _marker(self, literal: bool, offset: int | None = None) -> tuple[str, Origin]:
        """A marker for the text at ``offset`` (default: the raw token just read)."""
        offset = self.offset if offset is None else offset
        line = bisect.bisect_right(self._starts, offset)
        origin = Origin(self.name, line, offset - self._starts[line - 1] + 1, literal)
        self.origins.append(origin)
        return f"{_OPEN}{len(self.origins) - 1}{_CLOSE}", origin

    def tokens(self, lexer: Lexer) -> Iterator[Token]:
        depth = 0  # inside text the template captures as a value: no markers
        tag: list[Token] = []
        tag_offset = 0
        expression: Origin | None = None
        for token in lexer.wrap(self._raw(lexer.tokeniter(self.source, self.name)), self.name):
            if tag:  # a {% ... %} tag, held until its end to know what it opens or closes
                tag.append(token)
                if token.type != "block_end":
                    continue
                words = [t.value for t in tag if t.type == "name"]
                kind = words[0] if words else ""
                if depth == 0 and kind in _PRINTING:  # what the tag prints is its own
                    marker, _ = self._marker(literal=False, offset=tag_offset)
                    yield Token(tag[0].lineno, "data", marker)
                opens = kind in _CAPTURING and not (
                    kind == "set" and any(t.type == "assign" for t in tag))
                depth += 1 if opens else -1 if kind in _CAPTURING.values() else 0
                yield from tag
                tag = []
                continue
            if token.type == "block_begin":
                tag, tag_offset = [token], self.offset
            elif token.type == "data" and depth == 0:
                marker, _ = self._marker(literal=True)
                yield Token(token.lineno, "data", marker + token.value)
            elif token.type == "variable_begin" and depth == 0:
                marker, expression = self._marker(literal=False)
                yield Token(token.lineno, "data", marker)
                yield token
            else:
                if token.type == "variable_end":
                    expression = None
                elif token.type == "name" and expression is not None:
                    expression.names.append(token.value)
                yield token


@dataclass(frozen=True)
class SourceMap:
    """Rendered SQL positions -> source positions for one model.

    Attributes:
        path: the model's file.
        sql: the rendered SQL (markers removed).
        segments: ``(offset in sql, origin)`` in order; each origin holds until the next.
        macros: macro name -> ``(file, line, body)`` of the project's macros.
    """

    path: str
    sql: str
    segments: tuple[tuple[int, Origin], ...]
    macros: Mapping[str, tuple[str, int, str]] = field(default_factory=dict)

    def locate(self, line: int | None, column: int | None, text: str | None = None
               ) -> tuple[int | None, int | None, str]:
        """The source ``(line, column, note)`` of rendered ``(line, column)``.

        ``note`` is empty, or names the macro whose expansion holds the position (its file
        and line; the line in its body where ``text`` is, when ``text`` is given and there).
        """
        if line is None or not self.segments:
            return line, column, ""
        starts = [0] + [i + 1 for i, c in enumerate(self.sql) if c == "\n"]
        if line > len(starts):
            return line, column, ""
        offset = starts[line - 1] + max((column or 1) - 1, 0)
        index = bisect.bisect_right([s for s, _ in self.segments], offset) - 1
        if index < 0:
            return line, column, ""
        start, origin = self.segments[index]
        if origin.path != self.path:
            return line, column, ""
        if not origin.literal:
            return origin.line, origin.column, self._macro_note(origin, text)
        between = self.sql[start:offset]
        if "\n" not in between:
            return origin.line, origin.column + len(between), ""
        return origin.line + between.count("\n"), len(between) - between.rfind("\n"), ""

    def _macro_note(self, origin: Origin, text: str | None) -> str:
        name = next((n for n in origin.names if n in self.macros), None)
        if name is None:
            return ""
        path, line, body = self.macros[name]
        if text:
            lines = body.splitlines()
            hit = next((i for i, s in enumerate(lines) if text.lower() in s.lower()), None)
            line = line + hit if hit is not None else line
        return f" (in macro {name}, {path}:{line}, called at line {origin.line})"


def strip_markers(rendered: str, origins: list[Origin], *, path: str,
                  macros: Mapping[str, tuple[str, int, str]] | None = None
                  ) -> tuple[str, SourceMap | None]:
    """The rendered text without markers, and its source map (None when nothing was marked)."""
    if _OPEN not in rendered:
        return rendered, None
    pieces: list[str] = []
    segments: list[tuple[int, Origin]] = []
    size = last = 0
    for match in _MARKER.finditer(rendered):
        piece = rendered[last:match.start()]
        pieces.append(piece)
        size += len(piece)
        segments.append((size, origins[int(match.group(1))]))
        last = match.end()
    pieces.append(rendered[last:])
    sql = "".join(pieces)
    return sql, SourceMap(path, sql, tuple(segments), macros or {})
