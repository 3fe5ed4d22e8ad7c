"""When an Azure OpenAI provider gets a new Entra ID token, as pure rules (the shell asks the credential).

An Entra ID access token has an expiry (``expires_on``, Unix seconds). The provider keeps the
token it was given and asks its credential for a new one:

- before a request, when the kept token expires within :data:`REFRESH_MARGIN_S` (or there is none);
- once after a 401 from Azure (the token was revoked or rotated early): the same request is sent
  once more with a fresh token; a second 401 is the answer (an ``AuthError``, never charged).

The resend after a 401 is not a retry of the router's: nothing was accepted, the request is the
same attempt re-authenticated, and it happens at most once per attempt.
"""

from __future__ import annotations

import icontract

__all__ = ["REFRESH_MARGIN_S", "resend_after_auth_failure", "token_refresh_due"]

REFRESH_MARGIN_S = 300
"""A token expiring within this many seconds is replaced before it is used (Azure SDKs use 300 s)."""


def _due(expires_on_s: int | None, now_s: int) -> bool:
    return expires_on_s is None or expires_on_s - now_s <= REFRESH_MARGIN_S


@icontract.ensure(lambda expires_on_s, result: expires_on_s is not None or result)
@icontract.ensure(lambda expires_on_s, now_s, result: expires_on_s is None or result == (expires_on_s <= now_s + 300))
def token_refresh_due(expires_on_s: int | None, now_s: int) -> bool:
    """Whether the kept token (expiring at ``expires_on_s``; None: no token yet) must be replaced at ``now_s``."""
    return _due(expires_on_s, now_s)


def _resend(http_status: int | None, refreshable: bool, resent: bool) -> bool:
    return refreshable and not resent and http_status == 401


@icontract.ensure(lambda resent, result: not (resent and result), "at most one resend per attempt")
@icontract.ensure(lambda http_status, result: not result or http_status == 401)
def resend_after_auth_failure(*, http_status: int | None, refreshable: bool, resent: bool) -> bool:
    """Whether a failed attempt is sent once more with a fresh token: a 401, a credential that can
    refresh (``refreshable``), and no resend yet (``resent``)."""
    return _resend(http_status, refreshable, resent)
