"""An answer's head and the body written after it reach the client's socket in one system call.

uvicorn writes an answer's status line and headers, then its body, as two ``transport.write`` calls
in the same step of the same task; each is a ``send`` on the socket (TCP_NODELAY is on, so two
segments), and on loopback a ``send`` is the costliest thing the gateway does for a small answer:
the two writes were 17 % of its CPU per call (py-spy, ``serve --optimize``, 1 in flight).
:class:`BatchedWrites` holds a head (a write ending in the blank line) until the next write, which
goes out with it at once, or until the loop's next iteration (``call_soon``) when no body follows in
the same step (a stream waiting for its first event). Every other write goes out at once, so a
stream's events are never delayed.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["BatchedWrites"]

_HEAD_END = b"\r\n\r\n"


class BatchedWrites:
    """``transport`` with an answer's head held for the write that follows it; the rest passes through.

    ``close`` and ``write_eof`` send what is held first; ``abort`` drops it (as the transport drops
    its own buffer); what is still held when the transport is already closing is dropped, as the
    transport itself drops writes after ``close``.
    """

    __slots__ = ("_held", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: list[bytes | bytearray | memoryview] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Hold a head (the flush is scheduled); send anything else at once, with a held head."""
        if not data:
            return
        if self._held:
            self._held.append(data)
            self.flush()
        elif data[-4:] == _HEAD_END:
            self._held.append(data)
            self._loop.call_soon(self.flush)
        else:
            self._transport.write(data)

    def writelines(self, list_of_data: Any) -> None:
        """Write each piece, in order."""
        for data in list_of_data:
            self.write(data)

    def flush(self) -> None:
        """Send what is held, in one write."""
        held = self._held
        if not held:
            return
        self._held = []
        if self._transport.is_closing():
            return
        self._transport.write(held[0] if len(held) == 1 else b"".join(held))

    def get_write_buffer_size(self) -> int:
        """The transport's buffer and what is held here."""
        return self._transport.get_write_buffer_size() + sum(len(data) for data in self._held)

    def close(self) -> None:
        """Send what is held, then close."""
        self.flush()
        self._transport.close()

    def write_eof(self) -> None:
        """Send what is held, then half-close."""
        self.flush()
        self._transport.write_eof()

    def abort(self) -> None:
        """Drop what is held and abort."""
        self._held = []
        self._transport.abort()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)
