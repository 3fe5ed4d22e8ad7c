"""The contract's numbers, defined once. Everything else imports them from here."""

from __future__ import annotations

FAILOVER_BUDGET_MS = 30_000
"""The whole call: every provider, every retry and every sleep (seed 000 §1.5)."""

FAILOVER_BUDGET_S = FAILOVER_BUDGET_MS / 1000
MAX_ATTEMPTS_PER_PROVIDER = 3
"""Attempts per provider in one call; failover does not reset the count (seed 000 §1.3)."""

ATTEMPTS_CAP = 16
"""Records per call; a 17th attempt is a programmer error (seed 000 §1.13)."""

RETRY_DELAYS_MS = (200, 800)
"""Sleep before attempt 2 and before attempt 3 (length = MAX_ATTEMPTS_PER_PROVIDER - 1)."""

JITTER_PERCENT = 20
"""Uniform jitter band around each retry delay, in percent: [0.8x, 1.2x]."""

PROVIDER_DEFAULT_TIMEOUT_MS = 30_000
"""The longest any single attempt may take, whatever budget remains."""

DEADLINE_SLOP_MS = 50
"""DeadlineExceeded must surface within this long after the caller's deadline."""

FULL_JITTER_BASE_MS = 200
FULL_JITTER_CAP_MS = 30_000
FULL_JITTER_MAX_RETRIES = 10
"""Defaults of the contract's full-jitter policy (seed 003 ``[driver.backoff]``)."""

FAILURE_THRESHOLD = 2
"""Consecutive failures after which later calls skip a provider for a cooldown (FALSIFY-MPA-002)."""

CONTRACT_ID = "provider-routing-v1"

STREAM_INTERRUPTED = "stream interrupted"
"""How the ``StreamError`` that ends a committed stream early starts (``"stream interrupted: <why>"``):
providers' streams, the router's stream and the gateway all say it this way, and callers match on it."""
