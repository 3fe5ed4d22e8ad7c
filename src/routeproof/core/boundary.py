"""The attempt boundary as data: what an exception raised during one attempt means for the call.

Everything an attempt does (price it, build the request, send it, read and decode the answer) runs
inside the shell's attempt boundary (``Call.boundary``). The budget reservation is outside it: a
ledger store that cannot book fails the whole call closed (``LedgerUnavailable``), never one
provider. Whatever escapes the provider's own mapping to ``ProviderCallFailed`` is looked up here,
first matching row wins:

===============================  ======================================================  ==========================
exception                        meaning                                                 outcome
===============================  ======================================================  ==========================
``UnsupportedParameters``        strict mode: the model rejects a parameter the caller   skip ``unsupported_parameter``
                                 set (see ``core/capabilities.py``)
``TranslationError``             the request has no equivalent on this provider          skip ``untranslatable``
``LocalCongestion``              no local connection slot came within the attempt's      skip ``local_congestion``
                                 time (httpx ``PoolTimeout``): nothing was sent
``ConfigError``                  this provider cannot be used as configured (unpriced    skip ``misconfigured``
                                 model, an API key no HTTP header can carry, a bad URL)
``InvalidResponse``              the answer did not have the documented shape            failure ``INVALID_RESPONSE``
``RecursionError``               an answer nested deeper than Python can decode          failure ``INVALID_RESPONSE``
any other ``Exception``          a provider client's bug or an undocumented answer       failure ``INVALID_RESPONSE``
===============================  ======================================================  ==========================

A skip never sent anything billable: the call goes on down the chain and the entry is reported as a
``SkipRecord``. A skip for an exception that names the fields it could not carry
(``TranslationError.fields``: a refused field, a parameter the model rejects) names them in the
record's reason (:func:`skip_reason_of`): ``untranslatable: audio``, ``unsupported_parameter:
temperature``, as a capability skip says ``capability: images``. A failure is one more
``AttemptRecord``, retried or failed over by the kernel's tables (``INVALID_RESPONSE`` fails over).
A ``BaseException`` that is not an ``Exception`` (``CancelledError``, ``KeyboardInterrupt``,
``SystemExit``) is not in the table and passes through.
"""

from __future__ import annotations

from dataclasses import dataclass

import icontract

from routeproof.core.errors import ConfigError, InvalidResponse, LocalCongestion, TranslationError
from routeproof.core.types import AttemptFailure, AttemptFailureKind

__all__ = [
    "ATTEMPT_EXCEPTION_TABLE",
    "MAX_DETAIL_CHARS",
    "BoundaryOutcome",
    "UnsupportedParameters",
    "classify_exception",
    "skip_reason_of",
]

MAX_DETAIL_CHARS = 300
"""How much of an exception's text an AttemptFailure message keeps."""


class UnsupportedParameters(TranslationError):
    """Strict mode: the model does not accept ``parameters``, so this provider is skipped."""

    def __init__(self, model: str, parameters: tuple[str, ...]) -> None:
        super().__init__(f"model {model!r} does not accept {', '.join(parameters)}", fields=parameters)
        self.model = model
        self.parameters = parameters


@dataclass(frozen=True, slots=True, kw_only=True)
class BoundaryOutcome:
    """Either a skip of the provider (``skip_reason``) or a failed attempt (``failure``), never both."""

    skip_reason: str | None = None
    failure_kind: AttemptFailureKind | None = None


_SKIP_UNSUPPORTED = BoundaryOutcome(skip_reason="unsupported_parameter")
_SKIP_UNTRANSLATABLE = BoundaryOutcome(skip_reason="untranslatable")
_SKIP_MISCONFIGURED = BoundaryOutcome(skip_reason="misconfigured")
_SKIP_CONGESTED = BoundaryOutcome(skip_reason="local_congestion")
_INVALID = BoundaryOutcome(failure_kind=AttemptFailureKind.INVALID_RESPONSE)

ATTEMPT_EXCEPTION_TABLE: tuple[tuple[type[Exception], BoundaryOutcome], ...] = (
    (UnsupportedParameters, _SKIP_UNSUPPORTED),
    (TranslationError, _SKIP_UNTRANSLATABLE),
    (LocalCongestion, _SKIP_CONGESTED),
    (ConfigError, _SKIP_MISCONFIGURED),
    (InvalidResponse, _INVALID),
    (RecursionError, _INVALID),
    (Exception, _INVALID),
)
"""Exception type -> outcome, first match wins (a subclass row comes before its base)."""


def _classify(exc: BaseException) -> tuple[BoundaryOutcome | None, AttemptFailure | None]:
    for exc_type, outcome in ATTEMPT_EXCEPTION_TABLE:
        if isinstance(exc, exc_type):
            if outcome.failure_kind is None:
                return outcome, None
            detail = f"{type(exc).__name__}: {str(exc)[:MAX_DETAIL_CHARS]}".rstrip(": ")
            return outcome, AttemptFailure(kind=outcome.failure_kind, message=detail)
    return None, None


@icontract.ensure(lambda exc, result: (result[0] is None) == (not isinstance(exc, Exception)))
@icontract.ensure(lambda result: result[0] is None or (result[0].skip_reason is None) != (result[1] is None))
@icontract.ensure(
    lambda exc, result: not isinstance(exc, TranslationError | ConfigError | LocalCongestion) or result[1] is None
)
def classify_exception(exc: BaseException) -> tuple[BoundaryOutcome | None, AttemptFailure | None]:
    """The outcome of ``exc`` escaping an attempt and, for a failure, the AttemptFailure to report.

    ``(None, None)`` means "not ours": the exception (``CancelledError`` and friends) propagates.
    """
    return _classify(exc)


def _skip_reason_of(skip_reason: str, exc: BaseException) -> str:
    fields = exc.fields if isinstance(exc, TranslationError) else ()
    return f"{skip_reason}: {', '.join(fields)}" if fields else skip_reason


@icontract.require(lambda skip_reason: skip_reason != "")
@icontract.ensure(lambda skip_reason, result: result == skip_reason or result.startswith(skip_reason + ": "))
@icontract.ensure(
    lambda exc, result: not isinstance(exc, TranslationError) or all(field in result for field in exc.fields)
)
def skip_reason_of(skip_reason: str, exc: BaseException) -> str:
    """The ``SkipRecord.reason`` of a provider skipped for ``exc``: the table's ``skip_reason``, naming
    the fields ``exc`` could not carry when it knows them (``untranslatable: audio``)."""
    return _skip_reason_of(skip_reason, exc)
