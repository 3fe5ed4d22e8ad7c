"""Streaming calls (issue 7): failover before the first token, committed after it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from routeproof.core.types import ChatRequest, ResolvedModel, StreamEvent, TenantPolicy
from routeproof.errors import RouterError

if TYPE_CHECKING:
    from routeproof.router import Router

__all__ = ["StreamingNotImplemented", "stream_call"]


class StreamingNotImplemented(RouterError):
    """Streaming is not wired yet in this build."""


async def stream_call(
    router: Router,
    req: ChatRequest,
    resolved: ResolvedModel,
    deadline: float,
    policy: TenantPolicy,
    *,
    session_id: str = "default",
) -> AsyncIterator[StreamEvent]:
    """Stream one call's events."""
    del router, req, resolved, deadline, policy, session_id
    raise StreamingNotImplemented("call_provider_streaming is not implemented yet")
    yield  # pragma: no cover - makes this an async generator
