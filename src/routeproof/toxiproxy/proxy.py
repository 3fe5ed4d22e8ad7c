"""The data path: a proxy's listener, its connections, and the toxics applied to each direction.

Each accepted client gets an upstream dial and two links (``upstream``: client -> server,
``downstream``: server -> client). A link reads chunks (one ``read()`` each, at most 32 KiB,
stamped with the loop time they were read) into a buffer, and one task walks every chunk through
the *current* chain of its direction in insertion order, so toxics added, updated or removed apply
to live connections at the next chunk. When either link ends, the whole connection is closed (no
half-close), with RST instead of FIN when a ``reset_peer`` toxic was present at accept.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from routeproof.toxiproxy.model import ApiError, Toxic, go_json_string

__all__ = ["Connection", "Proxy", "parse_listen"]

READ_SIZE = 32 * 1024
DIAL_TIMEOUT_S = 10.0
_BUFFERED_CHUNKS = 1024


def parse_listen(listen: str, *, for_update: bool = False) -> tuple[str, int]:
    """``host:port`` -> (host as given, port); Go's error text for a missing port (500)."""
    host, sep, port_text = listen.rpartition(":")
    if not sep:
        prefix = "" if for_update else "listen tcp: "
        raise ApiError(500, f"{prefix}address {listen}: missing port in address")
    if not port_text.isdigit() or int(port_text) > 65535:
        raise ApiError(500, f"{'' if for_update else 'listen tcp: '}lookup tcp/{port_text}: unknown port")
    return host.strip("[]"), int(port_text)


def resolved(listen: str) -> str:
    """What Go's ``ResolveTCPAddr(listen).String()`` gives for a loopback address."""
    host, port = parse_listen(listen, for_update=True)
    if host == "localhost":
        host = "127.0.0.1"
    return f"{host}:{port}" if ":" not in host else f"[{host}]:{port}"


@dataclass(eq=False, slots=True)
class _Chunk:
    data: bytes
    stamp: float  # loop time the chunk was read


class Proxy:
    """One proxy: name, listen address, upstream, enabled flag, toxics, live connections."""

    def __init__(self, name: str, listen: str, upstream: str, *, rng: random.Random) -> None:
        self.name = name
        self.listen = listen
        self.upstream = upstream
        self.enabled = False
        self.toxics: list[Toxic] = []
        self.connections: set[Connection] = set()
        self.changed = asyncio.Event()  # set (and replaced) whenever the toxics change
        self._server: asyncio.Server | None = None
        self.rng = rng

    # -- JSON -----------------------------------------------------------------------------------

    def chain(self, direction: str) -> list[Toxic]:
        """The toxics of one direction, in insertion order."""
        return [t for t in self.toxics if t.direction == direction]

    def ordered_toxics(self) -> list[Toxic]:
        """Upstream toxics first, then downstream, each in insertion order (as GET .../toxics)."""
        return self.chain("upstream") + self.chain("downstream")

    def toxics_json_text(self) -> str:
        """The ``[Toxic, ...]`` list as 2.12.0 writes it."""
        return "[" + ",".join(t.to_json_text() for t in self.ordered_toxics()) + "]"

    def to_json_text(self) -> str:
        """The Proxy object in 2.12.0's field order (``"Logger":{}`` included, as the real server emits it)."""
        return (
            f'{{"name":{go_json_string(self.name)},"listen":{go_json_string(self.listen)},'
            f'"upstream":{go_json_string(self.upstream)},"enabled":{"true" if self.enabled else "false"},'
            f'"Logger":{{}},"toxics":{self.toxics_json_text()}}}'
        )

    # -- listener -------------------------------------------------------------------------------

    async def start(self) -> None:
        """Bind the listener on 127.0.0.1 (whatever host ``listen`` names) and rewrite ``listen``."""
        if self._server is not None:
            return
        _, port = parse_listen(self.listen)
        try:
            self._server = await asyncio.start_server(self._accept, "127.0.0.1", port)
        except OSError as exc:
            reason = "bind: address already in use" if exc.errno == 98 else (exc.strerror or str(exc))
            raise ApiError(500, f"listen tcp 127.0.0.1:{port}: {reason}") from exc
        self.listen = f"127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        self.enabled = True

    async def stop(self) -> None:
        """Stop listening and close every live connection (they see EOF)."""
        self.enabled = False
        server, self._server = self._server, None
        if server is not None:
            server.close()
        await self.close_connections()

    async def close_connections(self) -> None:
        """Close every live connection of this proxy and wait for them to finish."""
        conns = tuple(self.connections)
        for conn in conns:
            conn.close()
        await asyncio.gather(*(c.finished.wait() for c in conns))

    # -- toxics ---------------------------------------------------------------------------------

    def _touch(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()

    def add_toxic(self, toxic: Toxic) -> None:
        """Append to its direction's chain; the toxic before it restarts (re-rolls its draw)."""
        before = self.chain(toxic.direction)
        if before:
            before[-1].generation += 1
        self.toxics.append(toxic)
        self._touch()

    def update_toxic(self, toxic: Toxic) -> None:
        """Its attributes or toxicity changed: it restarts on every live link."""
        toxic.generation += 1
        self._touch()

    async def remove_toxic(self, toxic: Toxic) -> None:
        """Remove it; a ``timeout`` toxic's removal closes every live connection (its Cleanup)."""
        chain = self.chain(toxic.direction)
        index = chain.index(toxic)
        if index > 0:
            chain[index - 1].generation += 1
        self.toxics.remove(toxic)
        toxic.generation += 1
        self._touch()
        if toxic.type == "timeout":
            await self.close_connections()

    def draw(self) -> float:
        """One toxicity draw (the proxy's server-wide generator)."""
        return self.rng.random()

    # -- connections ----------------------------------------------------------------------------

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        linger0 = any(t.type == "reset_peer" for t in self.toxics)
        host, _, port_text = self.upstream.rpartition(":")
        try:
            async with asyncio.timeout(DIAL_TIMEOUT_S):
                up_reader, up_writer = await asyncio.open_connection(host.strip("[]"), int(port_text))
        except (OSError, ValueError, TimeoutError):
            writer.close()  # the client saw connect succeed, then EOF (as 2.12.0)
            with contextlib.suppress(OSError):
                await writer.wait_closed()
            return
        conn = Connection(self, (reader, writer), (up_reader, up_writer), linger0=linger0)
        self.connections.add(conn)
        try:
            await conn.run()
        finally:
            self.connections.discard(conn)


def _set_linger0(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


class _LinkClosed(Exception):
    """A toxic closed the link (limit_data reached, reset_peer fired, timeout expired)."""


class Connection:
    """One client connection through a proxy, with its two links and per-connection toxic state."""

    def __init__(
        self,
        proxy: Proxy,
        client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        *,
        linger0: bool,
    ) -> None:
        self.proxy = proxy
        self._client = client
        self._upstream = upstream
        self._linger0 = linger0
        self._active: dict[Toxic, tuple[int, bool]] = {}  # per link: keyed by toxic (one direction each)
        self._limit_sent: dict[Toxic, int] = {}
        self._bandwidth_owed: dict[Toxic, float] = {}
        self._reset_fired: set[Toxic] = set()
        self._timeout_seen: dict[Toxic, float] = {}  # last time a chunk reached a timeout toxic (or it appeared)
        self._closed = asyncio.Event()
        self.finished = asyncio.Event()

    def close(self) -> None:
        """Ask both links to stop; ``run`` closes the sockets."""
        self._closed.set()

    async def run(self) -> None:
        """Run both links until either ends or ``close`` is called, then close both sockets."""
        upstream_link = asyncio.create_task(self._link("upstream", self._client[0], self._upstream[1]))
        downstream_link = asyncio.create_task(self._link("downstream", self._upstream[0], self._client[1]))
        closing = asyncio.create_task(self._closed.wait())
        links = {upstream_link, downstream_link, closing}
        try:
            done, _ = await asyncio.wait(links, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in links:
                task.cancel()
            await asyncio.gather(*links, return_exceptions=True)
            # the link that ended closes its own destination first; the other side follows (as 2.12.0)
            order = (self._upstream[1], self._client[1])
            if upstream_link not in done:
                order = (self._client[1], self._upstream[1])
            for writer in order:
                await self._close_writer(writer)
            self.finished.set()

    async def _close_writer(self, writer: asyncio.StreamWriter) -> None:
        if self._linger0:
            _set_linger0(writer)
            writer.transport.abort()
            return
        writer.close()
        with contextlib.suppress(OSError, asyncio.CancelledError):
            async with asyncio.timeout(1.0):
                await writer.wait_closed()

    # -- one link -------------------------------------------------------------------------------

    async def _link(self, direction: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        buffer: asyncio.Queue[_Chunk | None] = asyncio.Queue(maxsize=_BUFFERED_CHUNKS)

        async def pump() -> None:
            try:
                while data := await reader.read(READ_SIZE):
                    await buffer.put(_Chunk(data, loop.time()))
            except OSError:
                pass
            await buffer.put(None)

        reading = asyncio.create_task(pump())
        getting: asyncio.Task[_Chunk | None] | None = None
        try:
            for toxic in self.proxy.chain(direction):
                self._timeout_seen.setdefault(toxic, loop.time())
            while True:
                if getting is None:
                    getting = asyncio.create_task(buffer.get())
                changed = asyncio.create_task(self.proxy.changed.wait())
                try:
                    await asyncio.wait(
                        {getting, changed},
                        timeout=self._timeout_wait(direction, loop.time()),
                        return_when=asyncio.FIRST_COMPLETED,
                    )
                finally:
                    changed.cancel()
                for toxic in self.proxy.chain(direction):
                    self._timeout_seen.setdefault(toxic, loop.time())
                if not getting.done():
                    if self._timeout_expired(direction, loop.time()):
                        return
                    continue
                chunk, getting = getting.result(), None
                chain = self.proxy.chain(direction)
                if chunk is None:
                    await self._eof(chain)
                    return
                await self._push(chain, chunk, writer)
        except _LinkClosed:
            return
        finally:
            reading.cancel()
            if getting is not None:
                getting.cancel()

    def _is_active(self, toxic: Toxic) -> bool:
        seen = self._active.get(toxic)
        if seen is None or seen[0] != toxic.generation:
            seen = (toxic.generation, self.proxy.draw() < toxic.toxicity)
            self._active[toxic] = seen
        return seen[1]

    def _timeout_wait(self, direction: str, now: float) -> float | None:
        waits = [
            self._timeout_seen.get(t, now) + t.attributes["timeout"] / 1000 - now
            for t in self.proxy.chain(direction)
            if t.type == "timeout" and t.attributes["timeout"] > 0 and self._is_active(t)
        ]
        return max(0.0, min(waits)) if waits else None

    def _timeout_expired(self, direction: str, now: float) -> bool:
        wait = self._timeout_wait(direction, now)
        return wait is not None and wait <= 0

    async def _eof(self, chain: Sequence[Toxic]) -> None:
        """EOF (or a toxic's close) travels down the rest of the chain: slow_close and reset_peer wait."""
        for toxic in chain:
            if not self._is_active(toxic):
                continue
            if toxic.type == "slow_close":
                await self._sleep(toxic, toxic.attributes["delay"] / 1000)
            elif toxic.type == "reset_peer" and toxic not in self._reset_fired:
                self._reset_fired.add(toxic)
                await asyncio.sleep(max(0, toxic.attributes["timeout"]) / 1000)

    async def _push(self, chain: Sequence[Toxic], chunk: _Chunk, writer: asyncio.StreamWriter) -> None:
        """Walk one chunk through ``chain`` and write what comes out; raise ``_LinkClosed`` on a close."""
        for index, toxic in enumerate(chain):
            if not self._is_active(toxic):
                continue
            rest = chain[index + 1 :]
            attrs = toxic.attributes
            if toxic.type == "latency":
                delay_ms = attrs["latency"]
                if attrs["jitter"] > 0:
                    delay_ms += self.proxy.rng.randrange(2 * attrs["jitter"]) - attrs["jitter"]
                wait = chunk.stamp + delay_ms / 1000 - asyncio.get_running_loop().time()
                await self._sleep(toxic, wait)
            elif toxic.type == "bandwidth":
                await self._bandwidth(toxic, rest, chunk, writer)
                return
            elif toxic.type == "slicer":
                cuts = _slices(self.proxy.rng, attrs["average_size"], attrs["size_variation"], 0, len(chunk.data))
                for start, end in cuts:
                    await self._push(rest, _Chunk(chunk.data[start:end], chunk.stamp), writer)
                    await self._sleep(toxic, attrs["delay"] / 1_000_000)
                return
            elif toxic.type == "limit_data":
                await self._limit(toxic, rest, chunk, writer)
                return
            elif toxic.type == "timeout":
                self._timeout_seen[toxic] = asyncio.get_running_loop().time()
                return  # dropped
            elif toxic.type == "reset_peer":
                self._reset_fired.add(toxic)
                await asyncio.sleep(max(0, attrs["timeout"]) / 1000)  # not interruptible, as 2.12.0
                await self._eof(rest)
                raise _LinkClosed
        writer.write(chunk.data)
        await writer.drain()

    async def _sleep(self, toxic: Toxic, seconds: float) -> None:
        """Sleep, but wake early when the toxic is updated or removed (2.12.0 interrupts its stub and
        forwards the chunk it holds)."""
        if seconds < 0.002:  # slicer's microsecond delays: a plain sleep (an interrupt waits at most this)
            if seconds > 0:
                await asyncio.sleep(seconds)
            return
        loop = asyncio.get_running_loop()
        until = loop.time() + seconds
        generation = toxic.generation
        while toxic.generation == generation and (left := until - loop.time()) > 0:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(left):
                    await self.proxy.changed.wait()

    async def _limit(self, toxic: Toxic, rest: Sequence[Toxic], chunk: _Chunk, writer: asyncio.StreamWriter) -> None:
        limit = max(0, toxic.attributes["bytes"])
        sent = self._limit_sent.get(toxic, 0)
        data = chunk.data[: max(0, limit - sent)]
        if data:
            self._limit_sent[toxic] = sent + len(data)
            await self._push(rest, _Chunk(data, chunk.stamp), writer)
        if self._limit_sent.get(toxic, 0) >= limit:
            await self._eof(rest)
            raise _LinkClosed

    async def _bandwidth(
        self, toxic: Toxic, rest: Sequence[Toxic], chunk: _Chunk, writer: asyncio.StreamWriter
    ) -> None:
        rate = toxic.attributes["rate"]
        if rate <= 0:  # 2.12.0 stalls the stream forever (it loops emitting empty pieces)
            await asyncio.Event().wait()
        loop = asyncio.get_running_loop()
        owed_s = self._bandwidth_owed.get(toxic, 0.0) + len(chunk.data) / rate / 1000
        data = chunk.data
        piece = rate * 100
        while len(data) > piece:
            await self._sleep(toxic, 0.1)
            await self._push(rest, _Chunk(data[:piece], chunk.stamp), writer)
            data = data[piece:]
            owed_s -= 0.1
        start = loop.time()
        await self._sleep(toxic, owed_s)
        self._bandwidth_owed[toxic] = owed_s - (loop.time() - start)  # 2.12.0's drift correction
        await self._push(rest, _Chunk(data, chunk.stamp), writer)


def _slices(rng: random.Random, average: int, variation: int, start: int, end: int) -> list[tuple[int, int]]:
    """2.12.0's SlicerToxic.chunk: split recursively around the middle, +- a random variation."""
    if (end - start) - average <= variation:
        return [(start, end)]
    mid = start + (end - start) // 2
    if variation > 0:
        mid += rng.randrange(variation * 2) - variation
    return _slices(rng, average, variation, start, mid) + _slices(rng, average, variation, mid, end)
