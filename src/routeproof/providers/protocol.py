"""The :class:`Provider` protocol: what the router needs from a provider client.

A provider performs one attempt and nothing more: no retries, no sleeping, no budget arithmetic
(the kernel decides those). It reports failure only by raising
``ProviderCallFailed(AttemptFailure(...))`` and lets ``asyncio.CancelledError`` through untouched.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from routeproof.core.types import ChatRequest, ProviderKind, ProviderResponse, StreamEvent

__all__ = ["Provider"]


@runtime_checkable
class Provider(Protocol):
    """One provider client. ``timeout_at`` is an absolute time on the running loop's clock
    (``asyncio.get_running_loop().time()``); no call waits past it."""

    @property
    def kind(self) -> ProviderKind:
        """The provider family (also the metric label, via ``as_metric_label()``)."""
        ...

    @property
    def name(self) -> str:
        """The configured name (the ``[driver.providers.NAME]`` key)."""
        ...

    @property
    def base_url(self) -> str | None:
        """Where requests go; None for an in-process provider (Local)."""
        ...

    async def complete(self, request: ChatRequest, model: str, *, timeout_at: float) -> ProviderResponse:
        """One attempt: the normalised response, or ``ProviderCallFailed`` with the failure."""
        ...

    def stream(
        self, request: ChatRequest, model: str, *, timeout_at: float, idle_timeout_s: float | None = None
    ) -> AsyncIterator[StreamEvent]:
        """One streaming attempt as provider-neutral events (an async generator).

        ``timeout_at`` bounds everything up to and including the first event; until then every
        failure raises ``ProviderCallFailed`` (an in-band error or malformed data as the first event is
        ``STREAM_ERROR``). After the first event nothing is raised but ``CancelledError``: the events
        end with exactly one ``MessageStop`` or one ``StreamError("stream interrupted: ...")``, and no
        overall timeout applies (the caller bounds it and closes the generator); ``idle_timeout_s``
        (None: unbounded) bounds each read.
        """
        ...

    async def aclose(self) -> None:
        """Release what the provider owns (never a client the router handed it)."""
        ...
