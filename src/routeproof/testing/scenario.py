"""What :func:`~routeproof.testing.check_provider` puts a provider in: the :class:`Scenario`s, the
:class:`Subject` a factory builds for one, and the :data:`Factory` type. Shared by the check
(``conformance``) and the wire scenarios (``wire``)."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from routeproof.providers.protocol import Provider

__all__ = ["Factory", "Scenario", "Subject"]


class Scenario(enum.Enum):
    """A situation :func:`check_provider` asks the factory to put a provider in."""

    ANSWER = "answer"  # the upstream answers well (both a plain and a streamed call)
    SERVER_ERROR = "server_error"  # the upstream answers 503
    AUTH_ERROR_ECHOING_KEY = "auth_error_echoing_key"  # 401, and the error body quotes the key sent
    HANG = "hang"  # the upstream never answers
    STALL_AFTER_FIRST_EVENT = "stall_after_first_event"  # a stream sends its first event, then nothing


@dataclass(frozen=True, slots=True, kw_only=True)
class Subject:
    """A provider in one scenario, with what the check needs to know about it.

    ``secret`` is what must never show (the API key; None when the provider has none);
    ``released()`` says whether the scenario's upstream response (or stream) has been closed.
    """

    provider: Provider
    secret: str | None = None
    released: Callable[[], bool] = lambda: True
    model: str = "test-model"


Factory = Callable[[Scenario], Subject | None]
"""Builds a fresh Subject for a scenario; None when the provider cannot be put in it (reported)."""
