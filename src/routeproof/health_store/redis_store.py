"""The Redis health store: each replica's health effects shared with every replica on one Redis.

**On the call path nothing waits for Redis.** :meth:`RedisHealthStore.apply` changes this process's
health at once through the pure model (``record_failure`` / ``record_success``) and queues the effect;
a background publisher sends it, and a background subscriber applies the other replicas' effects
through the same pure functions. So a provider that one replica saw failing is demoted by all,
about one Redis round trip later.

**Keys** (``{namespace}`` is a hash tag, so a cluster keeps them on one slot):

* ``routeproof:health:{ns}:effects``, a stream of ``(replica, provider, effect, wall_ms)`` entries
  (capped near :data:`STREAM_MAXLEN`): what every replica applies as it arrives;
* ``routeproof:health:{ns}:state``, a hash with, per provider, the newest publisher's resulting
  record (``failures``, ``cooldown_until_wall_ms``, ``at_wall_ms``): what a replica that starts
  later (or comes back after an outage) adopts. One Lua script appends the entry and updates the
  record, and it keeps a record only if it is newer than the one there, so a queued effect sent late
  cannot overwrite a newer view. The stream's last id and the hash are read in one ``MULTI``, so an
  adopted record and the entries applied after it never count one effect twice.

**Clocks.** Entries carry Unix milliseconds (replicas need NTP-synchronised clocks, as the ledger's
periods do); each replica converts them to its own loop clock, the clock its cooldown ends are on.
Only effects that change something are sent: a success on a provider that is already healthy is
not (otherwise every successful call would be a Redis write).

**Redis unreachable** (down, restarted, partitioned): calls go on with this replica's own health,
which is what a single process has today; this is safe because health is advisory (see
:mod:`routeproof.health_store.protocol`), unlike a budget, which fails closed. Effects queue (at
most :data:`MAX_QUEUED_EFFECTS`, the oldest dropped and counted beyond that) and are sent when Redis
returns; the subscriber reconnects with a capped backoff and re-reads the shared records.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from routeproof.clock import loop_ms
from routeproof.core.classify import HealthEffect
from routeproof.core.health import HealthConfig, HealthState, ProviderHealth, new_health, record_failure, record_success
from routeproof.core.identity import parse_provider
from routeproof.core.types import ProviderId
from routeproof.health_store.protocol import apply_effect

__all__ = ["MAX_QUEUED_EFFECTS", "STREAM_MAXLEN", "RedisHealthStore"]

_log = logging.getLogger(__name__)

MAX_QUEUED_EFFECTS = 10_000
"""Effects kept while Redis is unreachable; beyond that the oldest are dropped (and counted)."""
STREAM_MAXLEN = 10_000
"""About how many entries the effects stream keeps (``XADD MAXLEN ~``); late starters read the hash."""
_MIN_DELAY_S = 0.05
_MAX_DELAY_S = 1.0

_PUBLISH = """
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*',
  'replica', ARGV[2], 'provider', ARGV[3], 'effect', ARGV[4], 'wall_ms', ARGV[5])
local current = redis.call('HGET', KEYS[2], ARGV[3])
if (not current) or tonumber(cjson.decode(current)['at_wall_ms']) <= tonumber(ARGV[5]) then
  redis.call('HSET', KEYS[2], ARGV[3], ARGV[6])
end
return id
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Effect:
    """One effect waiting to be published, with the provider's record it produced here."""

    provider: ProviderId
    effect: HealthEffect
    wall_ms: int
    record: str  # JSON: failures, cooldown_until_wall_ms, at_wall_ms, replica


def _safe_url(url: str) -> str:
    """The URL without its user and password (for messages)."""
    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname or '?'}{port}{parts.path}"


def _health_of(state: HealthState, provider: ProviderId) -> ProviderHealth:
    return next((h for kind, h in state.providers if kind == provider), ProviderHealth())


class RedisHealthStore:
    """Provider health applied locally at once and shared through one Redis (see the module doc)."""

    def __init__(
        self,
        url: str,
        config: HealthConfig | None = None,
        *,
        namespace: str = "default",
        wall_clock: Callable[[], float] = time.time,
        timeout_s: float = 2.0,
        block_ms: int = 1_000,
        replica_id: str | None = None,
    ) -> None:
        if not namespace or any(ch in namespace for ch in "{}"):
            raise ValueError(f"namespace must be non-empty without braces, got {namespace!r}")
        if not 0 < timeout_s <= 60 or not 0 < block_ms <= 60_000:
            raise ValueError(f"timeout_s in (0, 60] and block_ms in (0, 60000], got {timeout_s!r}, {block_ms!r}")
        self._state = new_health(config or HealthConfig())
        self._url = _safe_url(url)
        prefix = f"routeproof:health:{{{namespace}}}:"
        self._keys = [prefix + "effects", prefix + "state"]
        options: dict[str, Any] = {
            "decode_responses": True,
            "socket_connect_timeout": timeout_s,
            "retry": Retry(NoBackoff(), 0),  # our own loops reconnect, with a backoff
        }
        self._redis: aioredis.Redis = aioredis.Redis.from_url(url, socket_timeout=timeout_s, **options)
        # the subscriber's own connection: XREAD BLOCK holds it for up to block_ms
        self._reader: aioredis.Redis = aioredis.Redis.from_url(
            url, socket_timeout=timeout_s + block_ms / 1000, **options
        )
        self._script = self._redis.register_script(_PUBLISH)
        self._wall_clock = wall_clock
        self._timeout_s = timeout_s
        self._block_ms = block_ms
        self._replica = replica_id or uuid.uuid4().hex
        self._queue: collections.deque[_Effect] = collections.deque()
        self._changed_at_wall_ms: dict[ProviderId, int] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._wake: asyncio.Event | None = None
        self._drained: asyncio.Event | None = None
        self._synced: asyncio.Event | None = None
        self._back: asyncio.Event | None = None  # set by the subscriber each time Redis answers again
        self._closed = False
        self._connected = False
        self.dropped_effects = 0
        """Effects dropped because more than MAX_QUEUED_EFFECTS waited for Redis."""
        self.remote_effects = 0
        """Other replicas' effects applied here (stream entries, and records adopted)."""

    # --- the port ------------------------------------------------------------------------------

    @property
    def description(self) -> str:
        """``redis://host:port/db`` (no password)."""
        return self._url

    def apply(self, provider: ProviderId, effect: HealthEffect, *, now_ms: int) -> None:
        """Apply ``effect`` here at once; queue it for the other replicas when it changed anything."""
        before = self._state
        self._state = apply_effect(before, provider, effect, now_ms)
        health = _health_of(self._state, provider)
        if effect is HealthEffect.NEUTRAL or health == _health_of(before, provider):
            return  # a success on a healthy provider: nothing for the others to learn
        offset_ms = self._offset_ms()
        wall_ms = now_ms + offset_ms
        self._changed_at_wall_ms[provider] = wall_ms
        until = health.cooldown_until_ms
        record = {
            "failures": health.consecutive_failures,
            "cooldown_until_wall_ms": None if until is None else until + offset_ms,
            "at_wall_ms": wall_ms,
            "replica": self._replica,
        }
        if len(self._queue) >= MAX_QUEUED_EFFECTS:
            self._queue.popleft()
            self.dropped_effects += 1
        self._queue.append(_Effect(provider=provider, effect=effect, wall_ms=wall_ms, record=json.dumps(record)))
        self._ensure_started()
        if self._wake is not None:
            self._wake.set()

    def snapshot(self) -> HealthState:
        """Provider health as this replica knows it (its own effects and those received)."""
        with contextlib.suppress(RuntimeError):  # no running loop (a read outside async code): nothing to start
            self._ensure_started()
        return self._state

    async def start(self) -> None:
        """Start sharing and wait (at most about ``timeout_s``) for the shared records to be adopted."""
        self._ensure_started()
        assert self._synced is not None
        with contextlib.suppress(TimeoutError):  # advisory: calls go on with local health meanwhile
            await asyncio.wait_for(self._synced.wait(), timeout=2 * self._timeout_s)

    async def aclose(self) -> None:
        """Send what is queued (if Redis answers within ``timeout_s``), stop, close the connections."""
        if self._closed:
            return
        if self._tasks and self._queue and self._connected and self._drained is not None:
            self._drained.clear()
            if self._wake is not None:
                self._wake.set()
            try:
                await asyncio.wait_for(self._drained.wait(), timeout=self._timeout_s)
            except TimeoutError:
                _log.warning("health store %s: %d effects not sent at close", self._url, len(self._queue))
        self._closed = True  # the loops also stop on this: a cancel a library turns into an error is not lost
        for event in (self._wake, self._back):
            if event is not None:
                event.set()
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=2 * self._timeout_s)
        await self._redis.aclose()
        await self._reader.aclose()

    # --- what tests and operators can read -----------------------------------------------------

    @property
    def connected(self) -> bool:
        """Whether the subscriber is reading the shared stream now."""
        return self._connected

    @property
    def queued_effects(self) -> int:
        """Effects applied here and not yet sent."""
        return len(self._queue)

    @property
    def replica_id(self) -> str:
        """This replica's id in the stream (its own entries are not applied twice)."""
        return self._replica

    # --- the background --------------------------------------------------------------------------

    def _offset_ms(self) -> int:
        """Unix ms minus loop ms, now (a running loop is required)."""
        return round(self._wall_clock() * 1000) - loop_ms(asyncio.get_running_loop().time())

    def _ensure_started(self) -> None:
        if self._tasks or self._closed:
            return
        loop = asyncio.get_running_loop()
        self._wake, self._drained, self._synced, self._back = (asyncio.Event() for _ in range(4))
        self._tasks = [loop.create_task(self._subscribe()), loop.create_task(self._publish())]

    def _apply_remote(self, fields: Mapping[str, str]) -> None:
        """Apply one stream entry of another replica through the pure model, on this loop's clock."""
        if fields.get("replica") == self._replica:
            return
        try:
            provider = parse_provider(fields["provider"])
            effect = HealthEffect(fields["effect"])
            wall_ms = int(fields["wall_ms"])
        except (KeyError, ValueError) as exc:  # another version's provider, or a damaged entry: skip it
            _log.warning("health store %s: skipped entry %r (%s)", self._url, dict(fields), exc)
            return
        self._state = apply_effect(self._state, provider, effect, wall_ms - self._offset_ms())
        self._changed_at_wall_ms[provider] = max(self._changed_at_wall_ms.get(provider, wall_ms), wall_ms)
        self.remote_effects += 1

    def _adopt(self, field: str, raw: str) -> None:
        """Adopt a provider's shared record when it is newer than what this replica last saw of it.

        Rebuilt through the pure model: a success (clean record), then ``failures`` failures at the
        instant that makes the cooldown end where the record says (same cooldown_ms on every replica)."""
        try:
            provider = parse_provider(field)
            record = json.loads(raw)
            at_wall_ms = int(record["at_wall_ms"])
            failures = int(record["failures"])
            until_wall = record["cooldown_until_wall_ms"]
            until_wall_ms = None if until_wall is None else int(until_wall)
        except (KeyError, TypeError, ValueError) as exc:
            _log.warning("health store %s: skipped record %r=%r (%s)", self._url, field, raw, exc)
            return
        if record.get("replica") == self._replica or at_wall_ms <= self._changed_at_wall_ms.get(provider, -1):
            return
        offset_ms = self._offset_ms()
        cooldown_ms = self._state.config.cooldown_ms
        failed_at_ms = at_wall_ms - offset_ms if until_wall_ms is None else until_wall_ms - offset_ms - cooldown_ms
        state = record_success(self._state, provider)
        for _ in range(failures):
            state = record_failure(state, provider, failed_at_ms)
        self._state = state
        self._changed_at_wall_ms[provider] = at_wall_ms
        self.remote_effects += 1

    async def _sync(self) -> str:
        """Adopt the shared records; the stream id they are current to (read in one MULTI)."""
        pipe = self._reader.pipeline(transaction=True)
        pipe.xrevrange(self._keys[0], count=1)
        pipe.hgetall(self._keys[1])
        last, records = await pipe.execute()
        for field, raw in records.items():
            self._adopt(field, raw)
        return str(last[0][0]) if last else "0-0"

    async def _subscribe(self) -> None:
        assert self._synced is not None
        delay_s = _MIN_DELAY_S
        last_id: str | None = None
        while not self._closed:
            try:
                if last_id is None:
                    last_id = await self._sync()
                    if not self._connected:
                        _log.info("health store %s: sharing provider health", self._url)
                    self._connected, delay_s = True, _MIN_DELAY_S
                    self._synced.set()
                    if self._back is not None:
                        self._back.set()  # the publisher may be waiting out a backoff: try now
                replies: Any = await self._reader.xread({self._keys[0]: last_id}, block=self._block_ms, count=256)
                streams = replies.items() if isinstance(replies, dict) else (replies or ())  # RESP3 / RESP2
                for _name, entries in streams:
                    for entry_id, fields in entries:
                        last_id = str(entry_id)
                        self._apply_remote(fields)
            except RedisError as exc:
                if self._closed:
                    return
                if self._connected:
                    _log.warning(
                        "health store %s unreachable (%s: %s): routing on this replica's own health until it returns",
                        self._url,
                        type(exc).__name__,
                        exc,
                    )
                self._connected, last_id = False, None
                self._synced.set()  # start() waits no longer: local health it is, for now
                await asyncio.sleep(delay_s)
                delay_s = min(_MAX_DELAY_S, 2 * delay_s)

    async def _publish(self) -> None:
        assert self._wake is not None
        assert self._drained is not None
        assert self._back is not None
        delay_s = _MIN_DELAY_S
        while not self._closed:
            if not self._queue:
                self._drained.set()
                await self._wake.wait()
            self._wake.clear()
            while self._queue and not self._closed:
                item = self._queue.popleft()
                try:
                    await self._script(
                        keys=self._keys,
                        args=[
                            str(STREAM_MAXLEN),
                            self._replica,
                            item.provider.value,
                            item.effect.value,
                            str(item.wall_ms),
                            item.record,
                        ],
                    )
                except RedisError:
                    self._queue.appendleft(item)  # kept in order; the subscriber logs the outage
                    self._back.clear()
                    with contextlib.suppress(TimeoutError):  # the backoff, or until the subscriber sees Redis
                        await asyncio.wait_for(self._back.wait(), timeout=delay_s)
                    delay_s = min(_MAX_DELAY_S, 2 * delay_s)
                    continue
                delay_s = _MIN_DELAY_S
