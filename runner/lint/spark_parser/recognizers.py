"""Spark's lexer and parser on the ANTLR Python runtime, at Spark 4.2's default settings.

:mod:`.generated` holds Spark's grammar as its build compiled it (the ATNs, names, and the
Java text of each predicate and action); this module is the rest of what Spark's own
``SqlBaseLexer``/``SqlBaseParser`` and ``AbstractParser`` add around it:

- the lexer reads an upper-cased view of the text (Spark's ``UpperCaseCharStream``: keywords
  are case-insensitive, token text keeps its case);
- each predicate and action of the grammar, as the Java says, with the parser's flags at
  Spark 4.2's defaults (:data:`FLAGS`);
- the parser runs Spark's two stages: SLL prediction with a bail-out strategy, then, where that
  gave up, full LL with Spark's error strategy; the first error reported is the answer (Spark's
  error listener throws on it), worded as Spark words it;
- the parse listeners Spark adds (``PostProcessor``: an identifier like ``a-b`` and a non-ASCII
  unquoted identifier are refused; ``UnclosedCommentProcessor``: an unclosed ``/*`` is refused
  when the statement ends).

The ATN is run by :class:`SparkParser`'s own loop (the runtime's ``ParserInterpreter`` reads it
the same way; its Python port does not run as shipped). The loop does what ANTLR's generated
rule methods do: predict at each decision, match tokens, enter and leave rules.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from types import ModuleType
from typing import Any

from antlr4 import CommonTokenStream, InputStream, Lexer, Parser, Token
from antlr4.atn.ATN import ATN
from antlr4.atn.ATNDeserializer import ATNDeserializer
from antlr4.atn.ATNState import ATNState, LoopEndState, StarLoopEntryState
from antlr4.atn.LexerATNSimulator import LexerATNSimulator
from antlr4.atn.ParserATNSimulator import ParserATNSimulator
from antlr4.atn.PredictionMode import PredictionMode
from antlr4.atn.Transition import Transition
from antlr4.dfa.DFA import DFA
from antlr4.error.Errors import (
    FailedPredicateException,
    InputMismatchException,
    ParseCancellationException,
    RecognitionException,
)
from antlr4.error.ErrorStrategy import DefaultErrorStrategy
from antlr4.ParserRuleContext import InterpreterRuleContext, ParserRuleContext
from antlr4.tree.Tree import ParseTreeListener, TerminalNode

from runner.lint.spark_parser import generated

__all__ = ["FLAGS", "Refused", "check_generated", "parse"]

#: The parser's flags as Spark 4.2 sets them by default (``AbstractParser.configureParser``):
#: each is the value of a session setting, and a model is parsed as a default session would.
FLAGS: dict[str, bool] = {
    # spark.sql.legacy.setopsPrecedence.enabled (false): INTERSECT binds tighter than UNION
    "legacy_setops_precedence_enabled": False,
    # spark.sql.legacy.exponentLiteralAsDecimal.enabled (false): 1E2 is a DOUBLE
    "legacy_exponent_literal_as_decimal_enabled": False,
    # spark.sql.ansi.enabled (true) and spark.sql.ansi.enforceReservedKeywords (false): ANSI's
    # reserved words stay usable as names
    "SQL_standard_keyword_behavior": False,
    # spark.sql.ansi.doubleQuotedIdentifiers (false): "x" is a string, not a name
    "double_quoted_identifiers": False,
    # spark.sql.legacy.parameterSubstitution.constantsOnly (false): markers anywhere a literal is
    "parameter_substitution_enabled": True,
    # spark.sql.legacy.identifierClause (false): IDENTIFIER('name') is resolved when parsing
    "legacy_identifier_clause_only": False,
    # spark.sql.parser.singleCharacterPipeOperator.enabled (true): `|` may start a pipe operator
    "single_character_pipe_operator_enabled": True,
}

_PRECPRED = re.compile(r"precpred\(_ctx, (\d+)\)")


def _deserialize(atn: str) -> ATN:
    """An ATN from its serialized numbers (space-separated, as the generator writes them)."""
    return ATNDeserializer().deserialize([int(x) for x in atn.split()])


_LEXER_ATN = _deserialize(generated.LEXER_ATN)
_PARSER_ATN = _deserialize(generated.PARSER_ATN)
_RULE = {name: i for i, name in enumerate(generated.PARSER_RULE_NAMES)}
_TOKEN = {name: i for i, name in enumerate(generated.SYMBOLIC_NAMES) if name}


class _UpperCaseStream(InputStream):  # type: ignore[misc]  # untyped runtime
    """The text as Spark's lexer sees it: each character upper-cased (a character whose upper
    case is longer, like ``ß``, is kept); ``getText`` still gives the original."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.data = [ord(u) if len(u := c.upper()) == 1 else ord(c) for c in text]


def _is_letter_digit_or_underscore(c: int) -> bool:
    return 65 <= c <= 90 or 48 <= c <= 57 or c == 95


class SparkLexer(Lexer):  # type: ignore[misc]  # untyped runtime
    """``SqlBaseLexer``: its predicates and actions (:data:`LEXER_CODE`)."""

    atn = _LEXER_ATN
    decisionsToDFA = [DFA(s, i) for i, s in enumerate(_LEXER_ATN.decisionToState)]
    ruleNames = list(generated.LEXER_RULE_NAMES)
    literalNames = list(generated.LITERAL_NAMES)
    symbolicNames = list(generated.SYMBOLIC_NAMES)
    modeNames = list(generated.MODE_NAMES)
    channelNames = list(generated.CHANNEL_NAMES)
    grammarFileName = "SqlBaseLexer.g4"

    def __init__(self, text: str) -> None:
        super().__init__(_UpperCaseStream(text))
        self._interp = LexerATNSimulator(self, self.atn, self.decisionsToDFA,
                                         _LEXER_CACHE)
        self.complex_type_level: int = 0
        self.tags: list[str] = []
        self.unclosed_comment = False
        self.removeErrorListeners()  # the grammar's last rule takes any character: no errors

    def sempred(self, localctx: Any, ruleIndex: int, predIndex: int) -> bool:  # noqa: ARG002 - runtime hook
        return bool(_LEXER_PREDICATES[predIndex](self))

    def action(self, localctx: Any, ruleIndex: int, actionIndex: int) -> None:  # noqa: ARG002 - runtime hook
        _LEXER_ACTIONS[actionIndex](self)

    def next_char(self) -> int:
        """The (upper-cased) character after the text matched so far (``_input.LA(1)``)."""
        return int(self._input.LA(1))


def _pop_tag(lexer: SparkLexer) -> None:
    lexer.tags.pop()


#: The lexer's predicates, by their Java text.
LEXER_CODE: dict[str, Callable[[SparkLexer], Any]] = {
    # `>>` is a shift unless it closes ARRAY<...>/MAP<...>/STRUCT<...>
    "isShiftRightOperator()": lambda lx: lx.complex_type_level == 0,
    # `2.` in `2.3`, `1.5` in `1.5x`: not a decimal when a letter, digit or `_` follows
    "isValidDecimal()": lambda lx: not _is_letter_digit_or_underscore(lx.next_char()),
    # `/*+` starts a hint, not a comment
    "!isHint()": lambda lx: lx.next_char() != ord("+"),
    # a $tag$ string ends at the same tag
    "getText().equals(tags.peek())": lambda lx: bool(lx.tags) and lx.text == lx.tags[-1],
    "incComplexTypeLevelCounter()": lambda lx: setattr(
        lx, "complex_type_level", lx.complex_type_level + 1),
    "decComplexTypeLevelCounter()": lambda lx: setattr(
        lx, "complex_type_level", max(lx.complex_type_level - 1, 0)),
    "tags.push(getText())": lambda lx: lx.tags.append(lx.text),
    "tags.pop()": _pop_tag,
    # an unclosed /* ends at the end of the text: refused when the statement ends
    "markUnclosedComment()": lambda lx: setattr(lx, "unclosed_comment", True),
}


class Refused(Exception):
    """Spark's parser refuses the text: ``message`` as Spark words it, at ``token``."""

    def __init__(self, message: str, token: Token) -> None:
        super().__init__(message)
        self.message = message
        self.token = token


def _display(token: Token) -> str:
    """A token as Spark names it in a message: ``'text'``, or ``end of input``."""
    if token.type == Token.EOF:
        return "end of input"
    text = (token.text or "").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    return f"'{text}'"


def _syntax_error(token: Token) -> Refused:
    """Spark's message, without the ``: extra input 'x'`` or ``: missing 'y'`` it adds in some
    cases: which one depends on how its generated code reaches the error, which this loop does
    not copy (the token and the position are the same)."""
    return Refused(f"[PARSE_SYNTAX_ERROR] Syntax error at or near {_display(token)}", token)


class _SparkErrors(DefaultErrorStrategy):  # type: ignore[misc]  # untyped runtime
    """``SparkParserErrorStrategy`` with Spark's error listener: the first error reported
    ends the parse (:class:`Refused`)."""

    def reportInputMismatch(self, recognizer: Parser, e: InputMismatchException) -> None:  # noqa: ARG002 - runtime hook
        raise _syntax_error(e.offendingToken)

    def reportNoViableAlternative(self, recognizer: Parser, e: RecognitionException) -> None:  # noqa: ARG002 - runtime hook
        raise _syntax_error(e.offendingToken)

    def reportFailedPredicate(self, recognizer: Parser, e: FailedPredicateException) -> None:
        raise _syntax_error(e.offendingToken or recognizer.getCurrentToken())

    def reportUnwantedToken(self, recognizer: Parser) -> None:
        if not self.inErrorRecoveryMode(recognizer):
            raise _syntax_error(recognizer.getCurrentToken())

    def reportMissingToken(self, recognizer: Parser) -> None:
        if not self.inErrorRecoveryMode(recognizer):
            raise _syntax_error(recognizer.getCurrentToken())


class _SparkBail(_SparkErrors):
    """``SparkParserBailErrorStrategy``: the SLL stage gives up (for the LL stage to try)
    instead of recovering. It also gives up where Spark's would report: Spark's generated
    code decides many one-token choices without prediction, and a mismatch there gives up; this
    loop predicts at every choice, and SLL prediction can fail where LL's would not
    (``SELECT 1 UNION SELECT 2``). The LL stage then reports, as Spark's does."""

    def reportError(self, recognizer: Parser, e: RecognitionException) -> None:  # noqa: ARG002 - runtime hook
        raise ParseCancellationException(e)

    def recover(self, recognizer: Parser, e: RecognitionException) -> None:  # noqa: ARG002 - runtime hook
        raise ParseCancellationException(e)

    def recoverInline(self, recognizer: Parser) -> Token:
        raise ParseCancellationException(InputMismatchException(recognizer))

    def sync(self, recognizer: Parser) -> None:
        pass


def _pipe_start(parser: SparkParser) -> bool:
    """``isOperatorPipeStart()``: whether the token after ``|`` starts a pipe operator."""
    return (FLAGS["single_character_pipe_operator_enabled"]
            and parser.getTokenStream().LA(2) in _PIPE_START)


_PIPE_START = frozenset(_TOKEN[name] for name in generated.PIPE_START_TOKENS)


def _parser_code(java: str) -> Callable[[SparkParser], bool]:
    """The parser predicate whose Java text is ``java``."""
    found = _PRECPRED.fullmatch(java)
    if found:
        precedence = int(found.group(1))
        return lambda p: bool(p.precpred(p.getContext(), precedence))
    if java == "isOperatorPipeStart()":
        return _pipe_start
    if java == "!isOperatorPipeStart()":
        return lambda p: not _pipe_start(p)
    negated = java.startswith("!")
    value = FLAGS[java.lstrip("!")]  # KeyError: a predicate this module does not know
    return lambda p: value != negated


class _PostProcessor(ParseTreeListener):  # type: ignore[misc]  # untyped runtime
    """Spark's parse listeners, as far as they refuse: ``PostProcessor`` (invalid
    identifiers) and ``UnclosedCommentProcessor``."""

    _ENDS = frozenset(_RULE[r] for r in ("query", "singleStatement", "compoundOrSingleStatement",
                                         "singleCompoundStatement"))

    def __init__(self, lexer: SparkLexer, tokens: CommonTokenStream) -> None:
        self.lexer = lexer
        self.tokens = tokens

    def exitEveryRule(self, ctx: ParserRuleContext) -> None:
        rule = ctx.ruleIndex  # InterpreterRuleContext: getRuleIndex() is -1
        if rule == _RULE["errorCapturingIdentifierExtra"] and ctx.getChildCount():
            ident = ctx.parentCtx.getText()  # `a-b`: the #errorIdent alternative
            raise Refused(_invalid_identifier(ident), ctx.start)
        if rule == _RULE["strictIdentifier"] and ctx.getChildCount() == 1:
            child = ctx.getChild(0)  # #unquotedIdentifier: an IDENTIFIER token or a keyword
            text = child.getText()
            if isinstance(child, TerminalNode) and not all(
                    c.isascii() and (c.isalnum() or c == "_") for c in text):
                raise Refused(_invalid_identifier(text), ctx.start)
        if rule in self._ENDS and self.lexer.unclosed_comment:
            comment = self.tokens.get(len(self.tokens.tokens) - 2)
            raise Refused("[UNCLOSED_BRACKETED_COMMENT] Found an unclosed bracketed comment. "
                          "Please, append */ at the end of the comment.", comment)


def _invalid_identifier(ident: str) -> str:
    return (f"[INVALID_IDENTIFIER] The unquoted identifier {ident} is invalid and must be back "
            f"quoted as: `{ident}`. Unquoted identifiers can only contain ASCII letters, digits "
            "and underbar (_)")


class SparkParser(Parser):  # type: ignore[misc]  # untyped runtime
    """``SqlBaseParser`` run over its ATN (see the module's docstring)."""

    atn = _PARSER_ATN
    decisionsToDFA = [DFA(s, i) for i, s in enumerate(_PARSER_ATN.decisionToState)]
    ruleNames = list(generated.PARSER_RULE_NAMES)
    literalNames = list(generated.LITERAL_NAMES)
    symbolicNames = list(generated.SYMBOLIC_NAMES)
    grammarFileName = "SqlBaseParser.g4"
    state: int  # the ATN state the parse is in (the runtime's attribute)
    _push_states = frozenset(s.stateNumber for s in _PARSER_ATN.states
                             if isinstance(s, StarLoopEntryState) and s.isPrecedenceDecision)

    def __init__(self, lexer: SparkLexer, tokens: CommonTokenStream, *, sll: bool) -> None:
        """A parser of ``tokens`` for one stage: SLL with the bail-out strategy, or LL with
        Spark's error strategy; with Spark's listeners."""
        super().__init__(tokens)
        self._interp = ParserATNSimulator(self, self.atn, self.decisionsToDFA, _PARSER_CACHE)
        self._interp.predictionMode = PredictionMode.SLL if sll else PredictionMode.LL
        self._errHandler = _SparkBail() if sll else _SparkErrors()
        self._parents: list[tuple[ParserRuleContext, int]] = []
        self.removeErrorListeners()
        self.addParseListener(_PostProcessor(lexer, tokens))

    def sempred(self, localctx: Any, ruleIndex: int, predIndex: int) -> bool:  # noqa: ARG002 - runtime hook
        return _PARSER_PREDICATES[predIndex](self)

    def enterRecursionRule(self, localctx: ParserRuleContext, state: int, ruleIndex: int,
                           precedence: int) -> None:
        self._parents.append((self._ctx, localctx.invokingState))
        super().enterRecursionRule(localctx, state, ruleIndex, precedence)

    def run(self, rule: int) -> ParserRuleContext:
        """Parse the whole input as ``rule`` (its start state to its stop state)."""
        atn = self.atn
        self._parents = []
        start = atn.ruleToStartState[rule]
        root = InterpreterRuleContext(None, ATNState.INVALID_STATE_NUMBER, rule)
        if start.isPrecedenceRule:
            self.enterRecursionRule(root, start.stateNumber, rule, 0)
        else:
            self.enterRule(root, start.stateNumber, rule)
        while True:
            p = atn.states[self.state]
            if p.stateType == ATNState.RULE_STOP:
                if self._ctx is root:
                    self.exitRule()
                    return root
                self._leave(p)
                continue
            try:
                self._visit(p)
            except RecognitionException as e:
                self.state = atn.ruleToStopState[p.ruleIndex].stateNumber
                self._ctx.exception = e
                self._errHandler.reportError(self, e)
                self._errHandler.recover(self, e)

    def _visit(self, p: ATNState) -> None:
        if len(p.transitions) > 1:
            self._errHandler.sync(self)
            edge = self._interp.adaptivePredict(self._input, p.decision, self._ctx)
        else:
            edge = 1
        t = p.transitions[edge - 1]
        kind = t.serializationType
        if kind == Transition.EPSILON:
            if p.stateNumber in self._push_states and not isinstance(t.target, LoopEndState):
                parent, invoking = self._parents[-1]
                ctx = InterpreterRuleContext(parent, invoking, self._ctx.ruleIndex)
                self.pushNewRecursionContext(
                    ctx, self.atn.ruleToStartState[p.ruleIndex].stateNumber, self._ctx.ruleIndex)
        elif kind == Transition.ATOM:
            self.match(t.label_)
        elif kind in (Transition.RANGE, Transition.SET, Transition.NOT_SET):
            if not t.matches(self._input.LA(1), Token.MIN_USER_TOKEN_TYPE, 0x10FFFF):
                self._errHandler.recoverInline(self)
            self.matchWildcard()
        elif kind == Transition.WILDCARD:
            self.matchWildcard()
        elif kind == Transition.RULE:
            target = t.target
            ctx = InterpreterRuleContext(self._ctx, p.stateNumber, target.ruleIndex)
            if target.isPrecedenceRule:
                self.enterRecursionRule(ctx, target.stateNumber, target.ruleIndex, t.precedence)
            else:
                self.enterRule(ctx, target.stateNumber, target.ruleIndex)
        elif kind == Transition.PREDICATE:
            if not self.sempred(self._ctx, t.ruleIndex, t.predIndex):
                raise FailedPredicateException(self)
        elif kind == Transition.PRECEDENCE:
            if not self.precpred(self._ctx, t.precedence):
                raise FailedPredicateException(self, f"precpred(_ctx, {t.precedence})")
        self.state = t.target.stateNumber

    def _leave(self, p: ATNState) -> None:
        """Return from the rule whose stop state is ``p`` to the state after its call."""
        if self.atn.ruleToStartState[p.ruleIndex].isPrecedenceRule:
            parent, invoking = self._parents.pop()
            self.unrollRecursionContexts(parent)
            self.state = invoking
        else:
            self.exitRule()
        self.state = self.atn.states[self.state].transitions[0].followState.stateNumber


def check_generated(module: ModuleType) -> None:
    """Every predicate and action of a generated grammar module is one this module knows, and
    its ATNs deserialize (the generator's last step). Raises KeyError or an ATN error."""
    for java in (*module.LEXER_PREDICATES.values(), *module.LEXER_ACTIONS.values()):
        LEXER_CODE[java]
    for java in module.PARSER_PREDICATES.values():
        _parser_code(java)
    for name in module.PIPE_START_TOKENS:
        if name not in module.SYMBOLIC_NAMES:
            raise KeyError(name)
    _deserialize(module.LEXER_ATN)
    _deserialize(module.PARSER_ATN)


_LEXER_PREDICATES = {i: LEXER_CODE[java] for i, java in generated.LEXER_PREDICATES.items()}
_LEXER_ACTIONS = {i: LEXER_CODE[java] for i, java in generated.LEXER_ACTIONS.items()}
_PARSER_PREDICATES = {i: _parser_code(java) for i, java in generated.PARSER_PREDICATES.items()}


def _caches() -> tuple[Any, Any]:
    from antlr4.PredictionContext import PredictionContextCache

    return PredictionContextCache(), PredictionContextCache()


_LEXER_CACHE, _PARSER_CACHE = _caches()


#: What Java's String.trim() removes: every character up to the space.
_JAVA_TRIMMED = "".join(chr(c) for c in range(33))


def parse(sql: str, rule: str = "compoundOrSingleStatement") -> None:
    """Parse ``sql`` as Spark's ``parsePlan`` does (its start rule, both stages, its
    listeners). Raises :class:`Refused` where Spark's parser refuses it."""
    lexer = SparkLexer(sql)
    if not sql.strip(_JAVA_TRIMMED):  # Spark's check before parsing
        raise Refused("[PARSE_EMPTY_STATEMENT] Syntax error, unexpected empty statement",
                      lexer.nextToken())
    tokens = CommonTokenStream(lexer)
    try:
        SparkParser(lexer, tokens, sll=True).run(_RULE[rule])
        return
    except ParseCancellationException:
        pass
    tokens.seek(0)  # a new parser: the runtime's reset() fails with a parse listener installed
    SparkParser(lexer, tokens, sll=False).run(_RULE[rule])
