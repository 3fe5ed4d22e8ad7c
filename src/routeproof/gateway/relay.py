"""The same-protocol stream relay: the provider's own SSE frames to the caller, as the rules say.

What is relayed and what is held back is decided in ``core/formats/relay.py``; this encoder only
writes it. A ``StreamError`` (a cut, an in-band error or the deadline after the first content event)
is written as the shape's own error event (the one the caller's encoder writes), never a silent end.
"""

from __future__ import annotations

from collections.abc import Callable

from routeproof.core.formats.relay import relay_frame, relayed_frames
from routeproof.core.messages import WireFormat
from routeproof.core.types import StreamError, StreamEvent

__all__ = ["FrameRelay"]


class FrameRelay:
    """Writes each event's provider frames (``protocol``'s) as the relay rules keep them; ``cut`` writes
    the shape's error event for a ``StreamError``."""

    def __init__(self, protocol: WireFormat, *, caller_usage: bool, cut: Callable[[StreamEvent], bytes]) -> None:
        self._protocol = protocol
        self._caller_usage = caller_usage
        self._cut = cut

    def encode(self, event: StreamEvent) -> bytes:
        """The bytes for one event: its frames as kept, and for a ``StreamError`` the error event."""
        frames = relayed_frames(event) or ()
        out = "".join(relay_frame(self._protocol, f, caller_usage=self._caller_usage) for f in frames).encode()
        if isinstance(event, StreamError):
            out += self._cut(event)
        return out
