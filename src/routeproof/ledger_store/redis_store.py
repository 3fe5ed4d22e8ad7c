"""The Redis store: one ledger shared by many gateway processes and machines.

Every operation is **one server-side Lua script** (``EVALSHA``), so a reservation's check and its
booking happen in one atomic step inside Redis: no other client can run between them, no matter how
many processes reserve against the same budget. The script also rolls the periods and applies the
crash rule first (see :mod:`routeproof.ledger_store.protocol`), exactly as the pure ledger would.

Keys (one hash tag per namespace, so the same script also runs on a Redis Cluster slot):
``routeproof:ledger:{NS}:meta`` (day, month, monthly spent/reserved, overrun, id sequence), per-scope
hashes ``sessions:spent|reserved`` and ``provider_daily:spent|reserved`` (field = session id /
provider), the open reservations (``res:*`` hashes keyed by id) and ``leases`` (a sorted set of
lease ends in Unix ms). Money is kept as Redis integers (``HINCRBY``, exact to 2^63 pico-USD); the
script compares sums in two base-10^9 limbs, because Lua numbers are doubles and lose whole
pico-USD past 2^53 (about $9,007).

Redis is the source of truth, so its durability is the ledger's: run it with ``appendonly yes``
(``appendfsync everysec`` loses at most a second of settlements; ``always`` loses none). Commands are
never retried by the client: a reservation script whose reply was lost might have run, and running
it twice would hold the worst case twice. An unreachable Redis fails the call closed
(:class:`~routeproof.ledger_store.protocol.LedgerUnavailable`); a settlement that cannot be written
is queued and written before the store's next operation (or, if the process dies first, the lease
books the worst case).
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlsplit

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from routeproof.core.identity import parse_provider
from routeproof.core.ledger import Account, BudgetLimits, BudgetRefusal, BudgetScope, Reservation, periods_at
from routeproof.core.types import ProviderId
from routeproof.ledger_store.protocol import (
    DEFAULT_LEASE_MS,
    LedgerTotals,
    LedgerUnavailable,
    Settled,
    finish_even_if_cancelled,
)

__all__ = ["RedisLedgerStore"]

_KEY_NAMES = (
    "meta",
    "sessions:spent",
    "sessions:reserved",
    "provider_daily:spent",
    "provider_daily:reserved",
    "res:session",
    "res:provider",
    "res:amount",
    "res:warning",
    "leases",
)

_SCRIPT = """
local meta, sspent, sres, dspent, dres = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local rsess, rprov, ramt, rwarn, leases = KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local op, now, day, month = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])

-- a non-negative integer string as two base-1e9 limbs (exact: Lua numbers are doubles)
local function limbs(s)
  local n = #s
  if n <= 9 then return 0, tonumber(s) end
  return tonumber(string.sub(s, 1, n - 9)), tonumber(string.sub(s, n - 8))
end

-- the pure ledger's fits(): spent + reserved + amount <= limit ('' = no limit)
local function fits(spent, reserved, amount, limit)
  if limit == '' then return true end
  local h1, l1 = limbs(spent)
  local h2, l2 = limbs(reserved)
  local h3, l3 = limbs(amount)
  local hl, ll = limbs(limit)
  local lo = l1 + l2 + l3
  local hi = h1 + h2 + h3 + math.floor(lo / 1000000000)
  lo = lo % 1000000000
  return hi < hl or (hi == hl and lo <= ll)
end

local function get(key, field)
  return redis.call('HGET', key, field) or '0'
end

local function roll()
  if day > tonumber(get(meta, 'day')) then
    redis.call('HSET', meta, 'day', ARGV[3])
    redis.call('DEL', dspent)
  end
  if month > tonumber(get(meta, 'month')) then
    redis.call('HSET', meta, 'month', ARGV[4], 'monthly_spent', '0')
  end
end

-- book `booked` as spent and free the reservation's amount in every scope; 0 if it is not open
local function settle(id, booked, excess)
  local amount = redis.call('HGET', ramt, id)
  if not amount then return 0 end
  local s = redis.call('HGET', rsess, id)
  local p = redis.call('HGET', rprov, id)
  if amount ~= '0' then
    redis.call('HINCRBY', meta, 'monthly_reserved', '-' .. amount)
    redis.call('HINCRBY', sres, s, '-' .. amount)
    redis.call('HINCRBY', dres, p, '-' .. amount)
  end
  redis.call('HINCRBY', meta, 'monthly_spent', booked)
  redis.call('HINCRBY', sspent, s, booked)
  redis.call('HINCRBY', dspent, p, booked)
  redis.call('HINCRBY', meta, 'overrun', excess)
  redis.call('HDEL', ramt, id)
  redis.call('HDEL', rsess, id)
  redis.call('HDEL', rprov, id)
  redis.call('HDEL', rwarn, id)
  redis.call('ZREM', leases, id)
  return 1
end

-- the crash rule: a reservation whose lease ended books its worst case
local function expire()
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', leases, '-inf', now)) do
    settle(id, redis.call('HGET', ramt, id), '0')
  end
end

roll()
expire()

if op == 'reserve' then
  local s, p, amount = ARGV[5], ARGV[6], ARGV[7]
  local checks = {
    {'session', sspent, sres, s, ARGV[9]},
    {'monthly', meta, meta, nil, ARGV[10]},
    {'provider_daily', dspent, dres, p, ARGV[11]},
  }
  for _, c in ipairs(checks) do
    local spent, reserved
    if c[4] == nil then
      spent, reserved = get(meta, 'monthly_spent'), get(meta, 'monthly_reserved')
    else
      spent, reserved = get(c[2], c[4]), get(c[3], c[4])
    end
    if not fits(spent, reserved, amount, c[5]) then
      return {'refused', c[1], c[5], spent, reserved}
    end
  end
  local id = tostring(redis.call('HINCRBY', meta, 'seq', 1))
  redis.call('HINCRBY', meta, 'monthly_reserved', amount)
  redis.call('HINCRBY', sres, s, amount)
  redis.call('HINCRBY', dres, p, amount)
  redis.call('HSET', ramt, id, amount)
  redis.call('HSET', rsess, id, s)
  redis.call('HSET', rprov, id, p)
  redis.call('HSET', rwarn, id, ARGV[12])
  redis.call('ZADD', leases, ARGV[8], id)
  return {'ok', id}
elseif op == 'settle' then
  return settle(ARGV[5], ARGV[6], ARGV[7])
elseif op == 'renew' then
  if redis.call('HEXISTS', ramt, ARGV[5]) == 1 then
    redis.call('ZADD', leases, 'XX', ARGV[6], ARGV[5])
    return 1
  end
  return 0
elseif op == 'totals' then
  local opened = {}
  for _, id in ipairs(redis.call('HKEYS', ramt)) do
    table.insert(opened, {id, redis.call('HGET', rsess, id), redis.call('HGET', rprov, id),
      redis.call('HGET', ramt, id), redis.call('HGET', rwarn, id)})
  end
  return {
    {get(meta, 'day'), get(meta, 'month'), get(meta, 'monthly_spent'), get(meta, 'monthly_reserved'),
     get(meta, 'overrun')},
    redis.call('HGETALL', sspent), redis.call('HGETALL', sres),
    redis.call('HGETALL', dspent), redis.call('HGETALL', dres), opened,
  }
end
return 0
"""


def _safe_url(url: str) -> str:
    """The URL without its user and password (for messages)."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def _limit(value: int | None) -> str:
    return "" if value is None else str(value)


def _pairs(flat: list[str]) -> dict[str, int]:
    return {flat[i]: int(flat[i + 1]) for i in range(0, len(flat), 2)}


class RedisLedgerStore:
    """The ledger in Redis, every operation one atomic Lua script."""

    def __init__(
        self,
        url: str,
        limits: BudgetLimits,
        *,
        namespace: str = "default",
        lease_ms: int = DEFAULT_LEASE_MS,
        timeout_s: float = 2.0,
    ) -> None:
        if lease_ms <= 0:
            raise ValueError(f"lease_ms must be > 0, got {lease_ms!r}")
        if not namespace or any(ch in namespace for ch in "{}"):
            raise ValueError(f"namespace must be non-empty without braces, got {namespace!r}")
        self._url = _safe_url(url)
        self._limits = limits
        self._lease_ms = lease_ms
        self._keys = [f"routeproof:ledger:{{{namespace}}}:{name}" for name in _KEY_NAMES]
        self._redis: aioredis.Redis = aioredis.Redis.from_url(
            url,
            decode_responses=True,
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
            retry=Retry(NoBackoff(), 0),  # never re-send: a lost reply may hide a script that ran
        )
        self._script = self._redis.register_script(_SCRIPT)
        self._pending: list[tuple[Reservation, int]] = []  # settlements Redis did not take yet
        self._flush_lock = asyncio.Lock()  # one flusher: see _flush
        self._background: set[asyncio.Task[object]] = set()

    @property
    def limits(self) -> BudgetLimits:
        """The limits this store enforces."""
        return self._limits

    @property
    def description(self) -> str:
        """``redis://host:port/db`` (no password)."""
        return self._url

    async def _eval(self, now_ms: int, *args: str) -> Any:
        day, month = periods_at(max(0, now_ms))
        try:
            return await self._script(keys=self._keys, args=[args[0], str(now_ms), str(day), str(month), *args[1:]])
        except RedisError as exc:
            raise LedgerUnavailable(
                f"ledger store {self._url} unreachable ({type(exc).__name__}: {exc}); "
                "no call is sent while its budget cannot be booked"
            ) from exc

    async def _flush(self, now_ms: int) -> None:
        """Write the queued settlements, in order, one flusher at a time.

        Unlocked, two operations flushing at once both settled the head (harmless: a settlement of a
        closed reservation is a no-op) and then both popped it: the second pop removed a settlement
        never written (a lost commit, later booked at its worst case) or raised ``IndexError`` from an
        empty queue (a plain-text 500). Under the lock only the flusher pops, and only what it wrote;
        a settlement queued meanwhile is appended behind and written in the same pass.
        """
        if not self._pending:
            return  # the fast path: nothing queued, no lock taken
        async with self._flush_lock:
            while self._pending:
                reservation, booked = self._pending[0]
                await self._settle_now(reservation, booked, now_ms)  # LedgerUnavailable: it stays queued
                self._pending.pop(0)

    async def _settle_now(self, reservation: Reservation, booked_pico_usd: int, now_ms: int) -> Settled:
        excess = max(0, booked_pico_usd - reservation.amount_pico_usd)
        done = await self._eval(now_ms, "settle", str(reservation.reservation_id), str(booked_pico_usd), str(excess))
        return Settled.BOOKED if int(done) == 1 else Settled.EXPIRED

    # --- the port --------------------------------------------------------------------------------

    async def try_reserve(
        self, *, session_id: str, provider: ProviderId, amount_pico_usd: int, now_ms: int
    ) -> Reservation | BudgetRefusal:
        """Book ``amount_pico_usd`` in every scope, or say which scope refuses."""
        limits = self._limits
        warn = limits.turn_warning_pico_usd is not None and amount_pico_usd > limits.turn_warning_pico_usd

        async def reserve() -> Reservation | BudgetRefusal:
            await self._flush(now_ms)
            reply = await self._eval(
                now_ms,
                "reserve",
                session_id,
                provider.value,
                str(amount_pico_usd),
                str(now_ms + self._lease_ms),
                _limit(limits.session_limit_pico_usd),
                _limit(limits.monthly_limit_pico_usd),
                _limit(limits.provider_limit(provider)),
                "1" if warn else "0",
            )
            if reply[0] == "refused":
                return BudgetRefusal(
                    scope=BudgetScope(reply[1]),
                    limit_pico_usd=int(reply[2]),
                    requested_pico_usd=amount_pico_usd,
                    spent_pico_usd=int(reply[3]),
                    reserved_pico_usd=int(reply[4]),
                )
            return Reservation(
                reservation_id=int(reply[1]),
                session_id=session_id,
                provider=provider,
                amount_pico_usd=amount_pico_usd,
                turn_warning=warn,
            )

        async def undo(outcome: Reservation | BudgetRefusal) -> object:
            return await self.release(outcome, 0, now_ms=now_ms) if isinstance(outcome, Reservation) else None

        return await finish_even_if_cancelled(reserve, self._background, on_cancelled=undo)

    async def _settle(self, reservation: Reservation, booked_pico_usd: int, now_ms: int) -> Settled:
        async def settle() -> Settled:
            try:
                await self._flush(now_ms)
                return await self._settle_now(reservation, booked_pico_usd, now_ms)
            except LedgerUnavailable:
                self._pending.append((reservation, booked_pico_usd))  # written before the next operation
                return Settled.QUEUED

        return await finish_even_if_cancelled(settle, self._background)

    async def commit(self, reservation: Reservation, actual_pico_usd: int, *, now_ms: int) -> Settled:
        """Book a finished call's real cost and free the rest of its reservation."""
        return await self._settle(reservation, actual_pico_usd, now_ms)

    async def release(self, reservation: Reservation, billed_pico_usd: int = 0, *, now_ms: int) -> Settled:
        """End a failed attempt: free its reservation and book what was billed for it."""
        return await self._settle(reservation, billed_pico_usd, now_ms)

    async def renew(self, reservation: Reservation, *, now_ms: int) -> bool:
        """Extend an open reservation's lease, in one script; False when it is not open."""

        async def renew() -> bool:
            await self._flush(now_ms)
            until = str(now_ms + self._lease_ms)
            return int(await self._eval(now_ms, "renew", str(reservation.reservation_id), until)) == 1

        return await finish_even_if_cancelled(renew, self._background)

    async def roll_over(self, *, now_ms: int) -> None:
        """Roll the periods and expire lapsed leases."""
        await self._flush(now_ms)
        await self._eval(now_ms, "roll")

    async def totals(self, *, now_ms: int) -> LedgerTotals:
        """Roll, expire, and return the counters."""
        await self._flush(now_ms)
        meta, s_spent, s_reserved, d_spent, d_reserved, opened = await self._eval(now_ms, "totals")
        day, month, m_spent, m_reserved, overrun = (int(v) for v in meta)

        def accounts(spent: dict[str, int], reserved: dict[str, int]) -> list[tuple[str, Account]]:
            out = []
            for key in sorted(set(spent) | set(reserved)):
                account = Account(spent_pico_usd=spent.get(key, 0), reserved_pico_usd=reserved.get(key, 0))
                if account.spent_pico_usd or account.reserved_pico_usd:
                    out.append((key, account))
            return out

        return LedgerTotals(
            limits=self._limits,
            day_index=day,
            month_index=month,
            monthly=Account(spent_pico_usd=m_spent, reserved_pico_usd=m_reserved),
            sessions=tuple(accounts(_pairs(s_spent), _pairs(s_reserved))),
            provider_daily=tuple(
                (parse_provider(p), a)
                for p, a in sorted(accounts(_pairs(d_spent), _pairs(d_reserved)), key=lambda pair: pair[0])
            ),
            open_reservations=tuple(
                sorted(
                    (
                        Reservation(
                            reservation_id=int(rid),
                            session_id=sid,
                            provider=parse_provider(p),
                            amount_pico_usd=int(amount),
                            turn_warning=warn == "1",
                        )
                        for rid, sid, p, amount, warn in opened
                    ),
                    key=lambda r: r.reservation_id,
                )
            ),
            overrun_pico_usd=overrun,
        )

    async def aclose(self) -> None:
        """Wait for settlements still running and close the connections (queued ones are left to the lease)."""
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)
        await self._redis.aclose()
