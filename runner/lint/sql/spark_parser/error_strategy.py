"""How Spark's parser reports a syntax error, for :mod:`.recognizers`' parser to do the same:
Spark's error strategies (``SparkParserErrorStrategy`` and, for the SLL stage,
``SparkParserBailErrorStrategy``) with Spark's error listener, which throws on the first error
reported: here :class:`Refused`, worded as Spark words it, at the offending token.

Its own module because what Spark says and where is one concept, apart from running the
grammar; the lazily imported parser and the package's entry points both read :class:`Refused`
from here.
"""

from __future__ import annotations

from antlr4 import Parser, Token
from antlr4.error.Errors import (
    FailedPredicateException,
    InputMismatchException,
    ParseCancellationException,
    RecognitionException,
)
from antlr4.error.ErrorStrategy import DefaultErrorStrategy

__all__ = ["Refused", "SparkBail", "SparkErrors"]


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


class SparkErrors(DefaultErrorStrategy):  # type: ignore[misc]  # untyped runtime
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


class SparkBail(SparkErrors):
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
