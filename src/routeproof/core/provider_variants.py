"""What the OpenAI-protocol variants (Azure OpenAI, Google Gemini's OpenAI-compatible endpoint) say
about waiting and failing, read into the one Retry-After value the kernel takes.

A throttled answer may say how long to wait in several places; :func:`wait_hint_ms` reads them in
this order and the first usable one wins:

1. ``retry-after-ms`` (Azure OpenAI and OpenAI): integer milliseconds;
2. ``retry-after`` (RFC 9110: delay-seconds or an HTTP-date), through :func:`parse_retry_after_ms`;
3. Google's ``google.rpc.RetryInfo`` detail in the error body (``"retryDelay": "37s"``), also
   inside Gemini's list-wrapped error body (``[{"error": {...}}]``);
4. ``x-ratelimit-reset-requests`` / ``x-ratelimit-reset-tokens`` (OpenAI-style durations such as
   ``1s``, ``6m0s``, ``20ms``), only for a limit whose ``x-ratelimit-remaining-*`` says 0.

The kernel decides what to do with the value (honour it if it fits the budget and the deadline,
else fail over); nothing here sleeps or reads a clock. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import icontract

from routeproof.core.retry_after import MAX_RETRY_AFTER_MS, parse_retry_after_ms

__all__ = ["azure_chat_url", "counted_output_tokens", "error_object", "parse_duration_ms", "wait_hint_ms"]

_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+)ms)?$")
_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
_MAX_DIGITS = len(str(MAX_RETRY_AFTER_MS))


def _parse_duration_ms(text: str | None) -> int | None:
    if text is None:
        return None
    match = _DURATION.match(text.strip())
    if match is None or not any(match.groups()):
        return None
    hours, minutes, seconds, millis = match.groups()
    total = int(hours or 0) * 3_600_000 + int(minutes or 0) * 60_000 + int(millis or 0)
    total += round(float(seconds or 0) * 1000)
    return total if total <= MAX_RETRY_AFTER_MS else None


@icontract.ensure(lambda result: result is None or 0 <= result <= MAX_RETRY_AFTER_MS)
def parse_duration_ms(text: str | None) -> int | None:
    """A Go-style duration (``37s``, ``6m0s``, ``1.5s``, ``20ms``, ``1h``) in milliseconds; None when not one."""
    return _parse_duration_ms(text)


def _error_object(body: object) -> dict[str, object] | None:
    if isinstance(body, list):  # Gemini's OpenAI-compatible endpoint wraps it in a list
        items = list(body)  # a plain copy: a list subclass's len() and [] need not agree
        body = items[0] if len(items) == 1 else None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        error: dict[str, object] = body["error"]
        return error
    return None


@icontract.ensure(lambda result: result is None or isinstance(result, dict))
def error_object(body: object) -> dict[str, object] | None:
    """The ``error`` object of an error body, plain (``{"error": {...}}``) or list-wrapped; else None."""
    return _error_object(body)


def _google_retry_delay_ms(body: object) -> int | None:
    error = _error_object(body)
    details = error.get("details") if error is not None else None
    if not isinstance(details, list):
        return None
    for detail in details:
        if isinstance(detail, dict) and detail.get("@type") == _RETRY_INFO:
            delay = detail.get("retryDelay")
            return _parse_duration_ms(delay) if isinstance(delay, str) else None
    return None


def _wait_hint_ms(headers: Mapping[str, str], body: object, now_epoch_ms: int) -> int | None:
    raw_ms = headers.get("retry-after-ms")
    # the length bound keeps int() off absurd digit strings: more digits than the bound has is over it
    digits = raw_ms is not None and raw_ms.isascii() and raw_ms.isdigit() and len(raw_ms) <= _MAX_DIGITS
    if digits and raw_ms is not None and int(raw_ms) <= MAX_RETRY_AFTER_MS:
        return int(raw_ms)
    seconds = parse_retry_after_ms(headers.get("retry-after"), now_epoch_ms)
    if seconds is not None:
        return seconds
    google = _google_retry_delay_ms(body)
    if google is not None:
        return google
    resets = [
        _parse_duration_ms(headers.get(f"x-ratelimit-reset-{limit}"))
        for limit in ("requests", "tokens")
        if headers.get(f"x-ratelimit-remaining-{limit}") == "0"
    ]
    known = [reset for reset in resets if reset is not None]
    return max(known) if known else None


@icontract.require(lambda now_epoch_ms: now_epoch_ms >= 0)
@icontract.ensure(lambda result: result is None or 0 <= result <= MAX_RETRY_AFTER_MS)
@icontract.ensure(
    lambda headers, result: (
        not (headers.get("retry-after-ms", "").isascii() and headers.get("retry-after-ms", "").isdigit())
        or int(headers["retry-after-ms"]) > MAX_RETRY_AFTER_MS
        or len(headers["retry-after-ms"]) > _MAX_DIGITS
        or result == int(headers["retry-after-ms"])
    )
)
def wait_hint_ms(headers: Mapping[str, str], body: object, now_epoch_ms: int) -> int | None:
    """How long a throttled answer asks the caller to wait, in ms (see the module doc); None: it does not say.

    ``headers`` are looked up by lower-case name (``httpx.Headers`` is case-insensitive).
    """
    return _wait_hint_ms(headers, body, now_epoch_ms)


_PATH_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _quoted(segment: str) -> str:
    """``segment`` percent-encoded as one URL path segment (UTF-8; RFC 3986 unreserved kept)."""
    return "".join(c if c in _PATH_SAFE else "".join(f"%{b:02X}" for b in c.encode()) for c in segment)


def _azure_chat_url(endpoint: str, deployment: str, api_version: str) -> str:
    base = endpoint.rstrip("/")
    if api_version == "v1":  # the v1 API: no deployment in the path, no api-version query
        return f"{base}/openai/v1/chat/completions"
    return f"{base}/openai/deployments/{_quoted(deployment)}/chat/completions?api-version={api_version}"


@icontract.ensure(lambda result: "/chat/completions" in result)
@icontract.ensure(lambda deployment, result: "?" not in deployment or "/openai/v1/" in result or "%3F" in result)
def azure_chat_url(endpoint: str, deployment: str, api_version: str) -> str:
    """Azure OpenAI's Chat Completions URL for one deployment, percent-encoded as a path segment
    (``api_version`` ``"v1"``: the v1 API, which takes the deployment in the body's ``model``)."""
    return _azure_chat_url(endpoint, deployment, api_version)


def _counted_output(usage: Mapping[str, object]) -> int | None:
    prompt, completion, total = (usage.get(k) for k in ("prompt_tokens", "completion_tokens", "total_tokens"))
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (prompt, completion, total)):
        return None
    assert isinstance(prompt, int)
    assert isinstance(completion, int)
    assert isinstance(total, int)
    return max(completion, total - prompt)


@icontract.ensure(
    lambda usage, result: (
        result is None or (isinstance(usage.get("completion_tokens"), int) and result >= usage["completion_tokens"])
    )
)
def counted_output_tokens(usage: Mapping[str, object]) -> int | None:
    """The output tokens an OpenAI-shaped ``usage`` bills: ``completion_tokens``, or ``total_tokens -
    prompt_tokens`` when that is larger (Gemini's OpenAI-compatible endpoint has answered with the
    thinking tokens in ``total_tokens`` but not in ``completion_tokens``); None when the counts are
    not non-negative integers (the normaliser then names the bad field)."""
    return _counted_output(usage)
