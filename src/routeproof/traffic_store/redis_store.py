"""The Redis traffic store: replicas anywhere share rate-limit windows and retry buckets.

Every operation is **one server-side Lua script** (``EVALSHA``), so a reservation's check and its
write are one atomic step in Redis, however many gateway processes reserve against one deployment.
The scripts implement :mod:`routeproof.core.rate_limit`'s ``admit`` and
:mod:`routeproof.core.retry_budget`'s bucket exactly (integers only; a differential test pins
them to the pure functions). Keys, one hash tag per namespace: ``routeproof:traffic:{NS}:log:DEP``
(a sorted set: ticket id scored by its instant), ``...:tok:DEP`` (ticket id -> tokens), ``...:seq``
and ``...:bucket`` (provider -> tokens in thousandths). Commands are never retried by the client.
"""

from __future__ import annotations

from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from routeproof.core.rate_limit import DeploymentLimits, LimitKind, RateVerdict
from routeproof.core.retry_budget import RetryBudgetConfig
from routeproof.traffic_store.protocol import RateTicket

__all__ = ["RedisTrafficStore"]

_ADMIT = """
local log, tok, seq = KEYS[1], KEYS[2], KEYS[3]
local now, window, rpm, tpm, tokens, write = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]),
  tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6] == '1'
for _, id in ipairs(redis.call('ZRANGEBYSCORE', log, '-inf', now - window)) do
  redis.call('HDEL', tok, id)
end
redis.call('ZREMRANGEBYSCORE', log, '-inf', now - window)
local live = redis.call('ZRANGE', log, 0, -1, 'WITHSCORES')  -- oldest first
local n = #live / 2
if rpm >= 0 and n >= rpm then
  return {0, 'rpm', tonumber(live[2 * (n - rpm) + 2]) + window}
end
if tpm >= 0 then
  if tokens > tpm then return {0, 'tpm', -1} end
  local held = 0
  for i = 1, n do held = held + tonumber(redis.call('HGET', tok, live[2 * i - 1]) or '0') end
  if held + tokens > tpm then
    for i = 1, n do
      held = held - tonumber(redis.call('HGET', tok, live[2 * i - 1]) or '0')
      if held + tokens <= tpm then return {0, 'tpm', tonumber(live[2 * i]) + window} end
    end
  end
end
if not write then return {1, ''} end
local id = tostring(redis.call('INCR', seq))
redis.call('ZADD', log, now, id)
redis.call('HSET', tok, id, tokens)
redis.call('PEXPIRE', log, window * 2)
redis.call('PEXPIRE', tok, window * 2)
return {1, id}
"""

_SETTLE = """
local log, tok = KEYS[1], KEYS[2]
local id, tokens, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
local at = redis.call('ZSCORE', log, id)
if not at then return 0 end
if tokens == '' then
  redis.call('ZREM', log, id)
  redis.call('HDEL', tok, id)
  return 1
end
redis.call('ZADD', log, math.max(tonumber(at), now), id)
redis.call('HSET', tok, id, tokens)
return 1
"""

_BUCKET = """
local bucket, provider = KEYS[1], ARGV[1]
local capacity, ratio, op = tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local level = math.min(capacity, tonumber(redis.call('HGET', bucket, provider) or capacity))
if op == 'fail' then level = math.max(0, level - 1000)
elseif op == 'ok' then level = math.min(capacity, level + ratio) end
if op ~= 'read' then redis.call('HSET', bucket, provider, level) end
return {level, (level * 2 > capacity) and 1 or 0}
"""


class RedisTrafficStore:
    """Windows and buckets in one Redis, shared by every replica that names the same namespace."""

    def __init__(self, url: str, *, namespace: str = "default", socket_timeout_s: float = 2.0) -> None:
        self._redis: aioredis.Redis = aioredis.Redis.from_url(
            url, socket_timeout=socket_timeout_s, decode_responses=True, retry=Retry(NoBackoff(), 0)
        )
        self._prefix = f"routeproof:traffic:{{{namespace}}}"
        self._admit = self._redis.register_script(_ADMIT)
        self._settle = self._redis.register_script(_SETTLE)
        self._bucket = self._redis.register_script(_BUCKET)

    def _keys(self, deployment: str) -> list[str]:
        return [f"{self._prefix}:log:{deployment}", f"{self._prefix}:tok:{deployment}", f"{self._prefix}:seq"]

    async def _run_admit(
        self, deployment: str, limits: DeploymentLimits, tokens: int, now_ms: int, *, write: bool
    ) -> list[Any]:
        args: list[str | int] = [
            now_ms,
            limits.window_ms,
            _or_none(limits.rpm),
            _or_none(limits.tpm),
            tokens,
            "1" if write else "0",
        ]
        result: list[Any] = await self._admit(keys=self._keys(deployment), args=args)
        return result

    @staticmethod
    def _verdict(result: list[Any]) -> RateVerdict:
        retry_at = int(result[2])
        return RateVerdict(ok=False, limit=LimitKind(result[1]), retry_at_ms=None if retry_at < 0 else retry_at)

    async def try_reserve(
        self, deployment: str, limits: DeploymentLimits, *, tokens: int, now_ms: int
    ) -> RateTicket | RateVerdict:
        """Reserve one request of ``tokens`` if it fits (one script: check and write together)."""
        result = await self._run_admit(deployment, limits, tokens, now_ms, write=True)
        if int(result[0]) != 1:
            return self._verdict(result)
        return RateTicket(deployment=deployment, ticket_id=str(result[1]), at_ms=now_ms, tokens=tokens)

    async def peek(self, deployment: str, limits: DeploymentLimits, *, tokens: int, now_ms: int) -> RateVerdict:
        """The verdict on such a reservation now, without making it."""
        result = await self._run_admit(deployment, limits, tokens, now_ms, write=False)
        return RateVerdict(ok=True) if int(result[0]) == 1 else self._verdict(result)

    async def settle(self, ticket: RateTicket, *, tokens: int, now_ms: int) -> None:
        """The ticket holds ``tokens`` from ``now_ms`` on."""
        await self._settle(keys=self._keys(ticket.deployment)[:2], args=[ticket.ticket_id, max(0, tokens), now_ms])

    async def release(self, ticket: RateTicket) -> None:
        """Remove the ticket."""
        await self._settle(keys=self._keys(ticket.deployment)[:2], args=[ticket.ticket_id, "", 0])

    async def _bucket_op(self, provider: str, config: RetryBudgetConfig, op: str) -> list[Any]:
        args: list[str | int] = [provider, config.capacity_milli, config.token_ratio_milli, op]
        result: list[Any] = await self._bucket(keys=[f"{self._prefix}:bucket"], args=args)
        return result

    async def retry_failure(self, provider: str, config: RetryBudgetConfig) -> bool:
        """One token less; whether a retry is still allowed (one script)."""
        return int((await self._bucket_op(provider, config, "fail"))[1]) == 1

    async def retry_success(self, provider: str, config: RetryBudgetConfig) -> None:
        """The ratio back (one script)."""
        await self._bucket_op(provider, config, "ok")

    async def retry_tokens_milli(self, provider: str, config: RetryBudgetConfig) -> int:
        """The bucket's level."""
        return int((await self._bucket_op(provider, config, "read"))[0])

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._redis.aclose()


def _or_none(limit: int | None) -> int:
    return -1 if limit is None else limit
