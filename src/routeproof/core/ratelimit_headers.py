"""Providers' own rate-limit headers: a limit the config does not know, reported on each answer.

Every answer (a success or a 429) may say how much of a provider-side limit is left and when it
resets:

* OpenAI and Azure OpenAI: ``x-ratelimit-remaining-requests`` / ``-tokens`` with
  ``x-ratelimit-reset-requests`` / ``-tokens``, a duration from now (``6m0s``, ``1s``, ``20ms``,
  ``1h2m3.5s``; a bare number is seconds, as Groq and Together send);
* Anthropic: ``anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-remaining`` with
  ``...-reset``, an RFC 3339 instant;
* Gemini (the Generative Language API) sends no such headers; its 429 carries ``RetryInfo``, which
  :mod:`routeproof.core.provider_variants` already reads.

A limit reported at 0 remaining blocks its deployment until the reset (the latest reset among the
exhausted limits): the deployment is skipped, its ``SkipRecord`` naming the header, even when no
``rpm``/``tpm`` is declared. Choices where the providers are silent:

* an exhausted limit whose reset is missing or unreadable blocks nothing (no instant to hold to;
  the provider's own 429 and its ``Retry-After`` still apply);
* a block lasts at most :data:`MAX_BLOCK_MS` (a wrong clock or a daily limit cannot park a
  deployment for longer; the next answer after it says again);
* blocks only grow: a later answer that still reports room does not lift an earlier block (answers
  arrive out of order under concurrency, and the block's reset is the provider's own word).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import icontract

__all__ = [
    "HEADER_NAMES",
    "MAX_BLOCK_MS",
    "HeaderBlock",
    "HeaderLimit",
    "block_from",
    "header_limits",
    "is_blocked",
    "merge_blocks",
    "parse_duration_ms",
    "parse_rfc3339_ms",
]

MAX_BLOCK_MS = 3_600_000
"""The longest a header can hold a deployment back (1 h)."""

# (remaining header, reset header, whether the reset is a duration from now (else an RFC 3339 instant))
_FAMILIES: tuple[tuple[str, str, bool], ...] = (
    ("x-ratelimit-remaining-requests", "x-ratelimit-reset-requests", True),
    ("x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens", True),
    *(
        (f"anthropic-ratelimit-{kind}-remaining", f"anthropic-ratelimit-{kind}-reset", False)
        for kind in ("requests", "tokens", "input-tokens", "output-tokens")
    ),
)

HEADER_NAMES: frozenset[str] = frozenset(name for family in _FAMILIES for name in family[:2])
"""Every header this module reads (the shell keeps only these from an answer)."""

_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT_MS = {"h": 3_600_000, "m": 60_000, "s": 1_000, "ms": 1}
_MAX_TEXT = 64


@dataclass(frozen=True, slots=True, kw_only=True)
class HeaderLimit:
    """One provider-side limit an answer reported: the remaining header's name, what is left, and
    when it resets (Unix ms; None: not said, or unreadable)."""

    header: str
    remaining: int
    reset_at_ms: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class HeaderBlock:
    """A deployment held back until ``until_ms`` (Unix ms) because ``header`` reported 0 left."""

    header: str
    until_ms: int


def _duration_ms(text: str) -> int | None:
    text = text.strip()
    if not text or len(text) > _MAX_TEXT:
        return None
    if _NUMBER.fullmatch(text):  # a bare number: seconds
        return int(-(-float(text) * 1000 // 1))
    parts = _PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    total = sum(float(n) * _UNIT_MS[u] for n, u in parts)
    return int(-(-total // 1))


@icontract.ensure(lambda result: result is None or result >= 0)
def parse_duration_ms(text: str) -> int | None:
    """An OpenAI/Azure reset duration (``6m0s``, ``1s``, ``20ms``, ``0.5s``, ``2``) in whole ms,
    rounded up; None when it is not one."""
    return _duration_ms(text)


_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))"
)


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm; no datetime in core)."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146_097 + doe - 719_468


def _rfc3339_ms(text: str) -> int | None:
    match = _RFC3339.fullmatch(text.strip())
    if match is None:
        return None  # also an instant without a zone: not RFC 3339
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    fraction, zulu, sign, off_h, off_m = match.groups()[6:]
    if not (1 <= month <= 12 and 1 <= day <= 31 and hour <= 23 and minute <= 59 and second <= 60):
        return None
    offset_min = 0 if zulu else (int(off_h) * 60 + int(off_m)) * (1 if sign == "+" else -1)
    seconds = _days_from_civil(year, month, day) * 86_400 + hour * 3_600 + minute * 60 + second - offset_min * 60
    frac_ms = 0 if fraction is None else -(-int(fraction.ljust(9, "0")) // 1_000_000)  # rounded up
    return seconds * 1000 + frac_ms


def parse_rfc3339_ms(text: str) -> int | None:
    """An RFC 3339 instant (``2026-12-02T15:04:05Z``) in Unix ms, rounded up; None when it is not one."""
    return _rfc3339_ms(text)


def _remaining(text: str) -> int | None:
    text = text.strip()
    if not text.isdigit() or len(text) > _MAX_TEXT:  # isdigit: no sign, no fraction
        return None
    return int(text)


def _header_limits(headers: Mapping[str, str], now_ms: int) -> tuple[HeaderLimit, ...]:
    lowered = {k.lower(): v for k, v in headers.items()}
    found: list[HeaderLimit] = []
    for remaining_name, reset_name, relative in _FAMILIES:
        remaining = _remaining(lowered.get(remaining_name, ""))
        if remaining is None:
            continue
        reset_text = lowered.get(reset_name)
        reset_at: int | None = None
        if reset_text is not None:
            if relative:
                duration = _duration_ms(reset_text)
                reset_at = None if duration is None else now_ms + duration
            else:
                reset_at = _rfc3339_ms(reset_text)
        found.append(HeaderLimit(header=remaining_name, remaining=remaining, reset_at_ms=reset_at))
    return tuple(found)


@icontract.ensure(lambda result: all(limit.remaining >= 0 for limit in result))
@icontract.ensure(lambda result: len({limit.header for limit in result}) == len(result), "one entry per limit")
def header_limits(headers: Mapping[str, str], now_ms: int) -> tuple[HeaderLimit, ...]:
    """The provider-side limits an answer's headers report (names matched case-insensitively);
    a limit whose remaining count is not a whole number is left out."""
    return _header_limits(headers, now_ms)


def _block_from(limits: tuple[HeaderLimit, ...], now_ms: int) -> HeaderBlock | None:
    block: HeaderBlock | None = None
    for limit in limits:
        if limit.remaining > 0 or limit.reset_at_ms is None or limit.reset_at_ms <= now_ms:
            continue
        until = min(limit.reset_at_ms, now_ms + MAX_BLOCK_MS)
        if block is None or until > block.until_ms:
            block = HeaderBlock(header=limit.header, until_ms=until)
    return block


@icontract.require(
    lambda limits: all(limit.remaining >= 0 for limit in limits), "a remaining count is a whole number (header_limits)"
)
@icontract.ensure(
    lambda now_ms, result: result is None or now_ms < result.until_ms <= now_ms + MAX_BLOCK_MS,
    "a block starts now and lasts at most MAX_BLOCK_MS",
)
@icontract.ensure(
    lambda limits, result: (
        result is None or any(limit.header == result.header and limit.remaining == 0 for limit in limits)
    ),
    "a block names a limit reported at 0",
)
@icontract.ensure(
    lambda limits, now_ms, result: (
        result is not None
        or not any(
            limit.remaining == 0 and limit.reset_at_ms is not None and limit.reset_at_ms > now_ms for limit in limits
        )
    ),
    "an exhausted limit with a future reset always blocks",
)
def block_from(limits: tuple[HeaderLimit, ...], now_ms: int) -> HeaderBlock | None:
    """The block the reported limits impose: until the latest reset of those at 0 (capped), or None."""
    return _block_from(limits, now_ms)


def _merge(current: HeaderBlock | None, new: HeaderBlock | None) -> HeaderBlock | None:
    if current is None:
        return new
    if new is None or new.until_ms <= current.until_ms:
        return current
    return new


@icontract.ensure(
    lambda current, new, result: all(b is None or (result is not None and result.until_ms >= b.until_ms)
                                     for b in (current, new)),
    "blocks only grow",
)  # fmt: skip
@icontract.ensure(lambda current, new, result: result is None or result in (current, new))
def merge_blocks(current: HeaderBlock | None, new: HeaderBlock | None) -> HeaderBlock | None:
    """The block that holds after a new answer: the later of the two."""
    return _merge(current, new)


@icontract.ensure(lambda block, now_ms, result: result == (block is not None and now_ms < block.until_ms))
def is_blocked(block: HeaderBlock | None, now_ms: int) -> bool:
    """Whether the block still holds at ``now_ms`` (it ends at the reset instant)."""
    return block is not None and now_ms < block.until_ms
