"""The RouterError hierarchy (pure: no I/O). Every error a call raises carries the attempt records made so far."""

from __future__ import annotations

from routeproof.core.types import AttemptFailure, AttemptRecord, ProviderId, ProviderName

__all__ = [
    "AllProvidersFailed",
    "AuthError",
    "BudgetExhausted",
    "ConfigError",
    "DeadlineExceeded",
    "InvalidResponse",
    "LocalCongestion",
    "NoEligibleProvider",
    "ProviderCallFailed",
    "ProviderHTTPError",
    "RouterError",
    "TerminalProviderError",
    "TranslationError",
    "UnknownAlias",
]


def _named(provider: ProviderId) -> str:
    """How an error names a provider: a named instance by its configured name and its kind
    (``openai-eu (openai)``), so two instances of one kind are told apart; a provider whose
    identity is its kind by the kind's label (``openai``)."""
    if isinstance(provider, ProviderName):
        return str(provider) if provider.kind is None else f"{provider} ({provider.as_metric_label()})"
    return provider.as_metric_label()


class RouterError(Exception):
    """Root of every error routeproof raises on purpose. ``attempts`` is the history so far."""

    def __init__(self, message: str, *, attempts: tuple[AttemptRecord, ...] = ()) -> None:
        super().__init__(message)
        self.attempts: tuple[AttemptRecord, ...] = attempts

    def with_attempts(self, attempts: tuple[AttemptRecord, ...]) -> RouterError:
        """Attach the call's attempt records (used where the error is raised deep in a provider)."""
        self.attempts = attempts
        return self


class DeadlineExceeded(RouterError):
    """The caller's deadline elapsed before the call could finish."""

    def __init__(self, message: str = "caller deadline exceeded", *, attempts: tuple[AttemptRecord, ...] = ()) -> None:
        super().__init__(message, attempts=attempts)


class AllProvidersFailed(RouterError):
    """Every provider in the chain failed, or the 30 s failover budget ran out."""

    def __init__(
        self,
        message: str = "all providers failed",
        *,
        last_error: RouterError | None = None,
        attempts: tuple[AttemptRecord, ...] = (),
    ) -> None:
        super().__init__(message if last_error is None else f"{message}; last error: {last_error}", attempts=attempts)
        self.last_error = last_error


class AuthError(RouterError):
    """401/403: the gateway's credentials are wrong. Terminal, never charged, sev-1."""

    def __init__(self, provider: ProviderId, status: int, *, attempts: tuple[AttemptRecord, ...] = ()) -> None:
        super().__init__(f"{_named(provider)} rejected the credentials (HTTP {status})", attempts=attempts)
        self.provider = provider
        self.status = status


class _ProviderStatusError(RouterError):
    """The shared shape of a provider's HTTP error answer: which provider, which status, what it said.

    Private: the two public kinds below differ only in what the router did with the answer, and
    neither is a subclass of the other (``except TerminalProviderError`` must not catch a 503 that ran out).
    """

    def __init__(
        self,
        provider: ProviderId,
        status: int,
        message: str = "",
        *,
        retry_after_ms: int | None = None,
        attempts: tuple[AttemptRecord, ...] = (),
    ) -> None:
        super().__init__(f"{_named(provider)} answered HTTP {status}: {message!r}", attempts=attempts)
        self.provider = provider
        self.status = status
        self.provider_message = message
        self.retry_after_ms = retry_after_ms


class TerminalProviderError(_ProviderStatusError):
    """A provider answered with an HTTP error (400, 404, or a retryable one that ran out)."""


class ProviderHTTPError(_ProviderStatusError):
    """A provider answered an HTTP error the router retried or failed over from (5xx, 429, ...): how
    ``AllProvidersFailed.last_error`` describes it (a 503 that ran out is not terminal)."""


class InvalidResponse(RouterError):
    """A provider's answer did not have the documented shape, or the router caught its own bug."""

    def __init__(
        self, reason: str, *, provider: ProviderId | None = None, attempts: tuple[AttemptRecord, ...] = ()
    ) -> None:
        where = f"{_named(provider)}: " if provider is not None else ""
        super().__init__(f"invalid response: {where}{reason}", attempts=attempts)
        self.reason = reason
        self.provider = provider


class BudgetExhausted(RouterError):
    """A cost budget refused the call: names the scope, the limit and what was asked."""

    def __init__(
        self,
        scope: str,
        limit: object,
        requested: object,
        *,
        spent: object = None,
        attempts: tuple[AttemptRecord, ...] = (),
    ) -> None:
        super().__init__(
            f"budget exhausted: scope={scope!r} limit={limit!r} requested={requested!r} spent={spent!r}",
            attempts=attempts,
        )
        self.scope = scope
        self.limit = limit
        self.requested = requested
        self.spent = spent


class NoEligibleProvider(RouterError):
    """No provider may take this call (tier, alias, health); ``earliest_at`` says when one returns."""

    def __init__(
        self, reason: str, *, earliest_at: float | None = None, attempts: tuple[AttemptRecord, ...] = ()
    ) -> None:
        suffix = "" if earliest_at is None else f"; earliest provider back at {earliest_at!r}"
        super().__init__(f"no eligible provider: {reason}{suffix}", attempts=attempts)
        self.reason = reason
        self.earliest_at = earliest_at


class TranslationError(RouterError):
    """Content has no equivalent in the target format; names what could not be carried.

    ``fields`` names the request fields (paths such as ``audio`` or ``messages[0].content[1]``) that
    could not be carried, when the raiser knows them: a provider skipped for it is recorded naming
    them (``SkipRecord.reason`` ``untranslatable: audio``, ``core/boundary.py``).
    """

    def __init__(self, message: str, *, fields: tuple[str, ...] = (), attempts: tuple[AttemptRecord, ...] = ()) -> None:
        super().__init__(message, attempts=attempts)
        self.fields: tuple[str, ...] = fields


class ConfigError(RouterError):
    """Configuration is invalid; raised at load time, naming the offending value."""


class LocalCongestion(RouterError):
    """An attempt never got a local resource (a connection from the HTTP client's pool) within its
    time: nothing was sent, so it is not the provider's fault. The attempt boundary
    (``core/boundary.py``) skips the entry with no attempt record and no health effect."""


class ProviderCallFailed(Exception):
    """Internal: a provider client's one way to report a failed attempt to the router.

    Not a RouterError: it never escapes ``Router``; the kernel turns ``failure`` into a decision.
    """

    def __init__(self, failure: AttemptFailure) -> None:
        super().__init__(f"{failure.kind.value}: status={failure.http_status!r} {failure.message}")
        self.failure = failure


class UnknownAlias(RouterError, LookupError):
    """``resolve`` was asked for an alias the tenant's policy does not define."""

    def __init__(self, alias: str, known: tuple[str, ...]) -> None:
        super().__init__(f"unknown model alias {alias!r}; this policy defines {sorted(known)!r}")
        self.alias = alias
