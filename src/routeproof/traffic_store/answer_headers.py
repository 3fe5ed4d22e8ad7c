"""What each provider answer's headers said about its rate limits, carried from the HTTP layer to
the traffic port without threading them through every provider.

The driver opens a :class:`HeaderSink` around one attempt (:func:`collecting`); the providers' HTTP
exchange (``providers/_http.py``, ``providers/_stream.py``) hands the answer's headers to
:func:`capture` as soon as they arrive, a success or an error alike. Only the headers
:mod:`routeproof.core.ratelimit_headers` reads are kept. Outside an attempt (no sink) it does nothing.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Mapping

from routeproof.core.ratelimit_headers import HEADER_NAMES

__all__ = ["HeaderSink", "capture", "collecting"]


class HeaderSink:
    """The rate-limit headers of the answers one attempt received (the last answer wins). It is its
    own block (:func:`collecting`): entered, it is the current attempt's sink (one object and one
    ContextVar set per attempt, not a block object and a sink; issue 25)."""

    __slots__ = ("_token", "headers")

    def __init__(self) -> None:
        self.headers: dict[str, str] = {}
        self._token: contextvars.Token[HeaderSink | None] | None = None

    def __enter__(self) -> HeaderSink:
        self._token = _SINK.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._token is not None  # set on entry
        _SINK.reset(self._token)


_SINK: contextvars.ContextVar[HeaderSink | None] = contextvars.ContextVar("routeproof_answer_headers", default=None)


def capture(headers: Mapping[str, str]) -> None:
    """Keep an answer's rate-limit headers in the current attempt's sink, if there is one."""
    sink = _SINK.get()
    if sink is None:
        return
    sink.headers = {name: v for k, v in headers.items() if (name := k.lower()) in HEADER_NAMES}


def collecting() -> contextlib.AbstractContextManager[HeaderSink]:
    """A sink for the answers of the attempt run inside the block."""
    return HeaderSink()
