"""What a finished attempt means for its provider's cross-request health (seed 003 failover triggers).

``HEALTH_TABLE`` is data: every :class:`AttemptStatus` and its :class:`HealthEffect`, so an impatient
caller (its deadline, the 30 s budget) or a bad request never cools a provider.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType

import icontract

from routeproof.core.types import AttemptStatus

__all__ = ["HEALTH_TABLE", "HealthEffect", "health_effect"]


class HealthEffect(enum.Enum):
    """What one finished attempt means for its provider's cross-request health."""

    SUCCESS = "success"  # resets the consecutive-failure count
    FAILURE = "failure"  # the provider's fault: counts toward its cooldown
    NEUTRAL = "neutral"  # not the provider's fault (bad request, bad credentials, the caller's limits)


HEALTH_TABLE: Mapping[AttemptStatus, HealthEffect] = MappingProxyType(
    {
        AttemptStatus.SUCCEEDED: HealthEffect.SUCCESS,
        AttemptStatus.RETRIED_AFTER_5XX: HealthEffect.FAILURE,
        AttemptStatus.RETRIED_AFTER_429: HealthEffect.FAILURE,
        AttemptStatus.RETRIED_AFTER_TIMEOUT: HealthEffect.FAILURE,
        AttemptStatus.RETRIED_AFTER_CONN_RESET: HealthEffect.FAILURE,
        AttemptStatus.FAILED_OVER: HealthEffect.FAILURE,
        AttemptStatus.TERMINAL_400: HealthEffect.NEUTRAL,
        AttemptStatus.TERMINAL_404: HealthEffect.NEUTRAL,
        AttemptStatus.TERMINAL_AUTH: HealthEffect.NEUTRAL,  # a config error: failing over would mask it
        AttemptStatus.TIMEOUT_BEFORE_FIRST_TOKEN: HealthEffect.NEUTRAL,  # cut by the call's 30 s budget
        AttemptStatus.DEADLINE_EXCEEDED_MID_CALL: HealthEffect.NEUTRAL,  # cut by the caller's deadline
        AttemptStatus.HEDGE_CANCELLED: HealthEffect.NEUTRAL,  # cut by the router: the other deployment won
    }
)
"""Every attempt status and its effect on provider health (an impatient caller never cools a provider)."""


@icontract.ensure(lambda status, result: result is HEALTH_TABLE[status])
@icontract.ensure(lambda status, result: (result is HealthEffect.SUCCESS) == (status is AttemptStatus.SUCCEEDED))
def health_effect(status: AttemptStatus) -> HealthEffect:
    """The health effect of an attempt that ended with ``status``."""
    return HEALTH_TABLE[status]
