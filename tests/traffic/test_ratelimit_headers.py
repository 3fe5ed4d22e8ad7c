"""Providers' rate-limit headers (core/ratelimit_headers.py): parsed exactly, a limit at 0 blocks
its deployment until its reset, and blocks only grow."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from routeproof.core.ratelimit_headers import (
    MAX_BLOCK_MS,
    HeaderBlock,
    HeaderLimit,
    block_from,
    header_limits,
    is_blocked,
    merge_blocks,
    parse_duration_ms,
    parse_rfc3339_ms,
)
from routeproof.mock.rate_headers import openai_duration

NOW = 1_800_000_000_000


def test_openai_durations() -> None:
    """The forms OpenAI and Azure send, and a bare number of seconds (Groq, Together)."""
    assert parse_duration_ms("6m0s") == 360_000
    assert parse_duration_ms("1s") == 1_000
    assert parse_duration_ms("20ms") == 20
    assert parse_duration_ms("1h2m3.5s") == 3_723_500
    assert parse_duration_ms("0.5s") == 500
    assert parse_duration_ms("2") == 2_000
    assert parse_duration_ms("1.0004s") == 1_001  # rounded up: never unblock early
    for bad in ("", "s", "-1s", "1x", "1s2", "inf", "nan", "1e3", "1_000", "5m 2s"):
        assert parse_duration_ms(bad) is None, bad


def test_rfc3339_instants() -> None:
    """Anthropic's resets: with a zone; a local time without one is not an instant."""
    assert parse_rfc3339_ms("2027-01-15T08:00:00Z") == int(datetime(2027, 1, 15, 8, tzinfo=UTC).timestamp() * 1000)
    assert parse_rfc3339_ms("2027-01-15T09:00:00+01:00") == parse_rfc3339_ms("2027-01-15T08:00:00Z")
    assert parse_rfc3339_ms("2027-01-15T08:00:00") is None
    assert parse_rfc3339_ms("tomorrow") is None


@given(st.integers(min_value=0, max_value=10 * MAX_BLOCK_MS))
def test_the_mocks_durations_read_back(ms: int) -> None:
    """What the mock writes (OpenAI's form) reads back to the same instant, or at most 1 ms later."""
    parsed = parse_duration_ms(openai_duration(ms / 1000))
    assert parsed is not None
    assert ms <= parsed <= ms + 1


def test_every_family_is_read() -> None:
    """OpenAI/Azure requests and tokens; Anthropic requests, tokens, input and output tokens."""
    reset = datetime.fromtimestamp((NOW + 30_000) / 1000, UTC).isoformat().replace("+00:00", "Z")
    headers = {
        "X-RateLimit-Remaining-Requests": "0",
        "x-ratelimit-reset-requests": "1s",
        "x-ratelimit-remaining-tokens": "1500",
        "x-ratelimit-reset-tokens": "6m0s",
        **{f"anthropic-ratelimit-{k}-remaining": "7" for k in ("requests", "tokens", "input-tokens", "output-tokens")},
        **{f"anthropic-ratelimit-{k}-reset": reset for k in ("requests", "tokens", "input-tokens", "output-tokens")},
    }
    found = {limit.header: limit for limit in header_limits(headers, NOW)}
    assert found["x-ratelimit-remaining-requests"] == HeaderLimit(
        header="x-ratelimit-remaining-requests", remaining=0, reset_at_ms=NOW + 1_000
    )
    assert found["x-ratelimit-remaining-tokens"].reset_at_ms == NOW + 360_000
    assert found["anthropic-ratelimit-output-tokens-remaining"].reset_at_ms == NOW + 30_000
    assert len(found) == 6


def test_a_limit_at_zero_blocks_until_its_reset() -> None:
    """0 remaining with a reset in 1 s: blocked for that second, naming the header; room left: no block."""
    headers = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1s"}
    block = block_from(header_limits(headers, NOW), NOW)
    assert block == HeaderBlock(header="x-ratelimit-remaining-requests", until_ms=NOW + 1_000)
    assert is_blocked(block, NOW + 999)
    assert not is_blocked(block, NOW + 1_000)
    assert block_from(header_limits({**headers, "x-ratelimit-remaining-requests": "1"}, NOW), NOW) is None


def test_no_reset_no_block_and_a_far_reset_is_capped() -> None:
    """An exhausted limit without a readable reset blocks nothing; a reset a day away holds 1 h."""
    assert block_from(header_limits({"x-ratelimit-remaining-tokens": "0"}, NOW), NOW) is None
    assert (
        block_from(header_limits({"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "soon"}, NOW), NOW)
        is None
    )
    far = block_from(header_limits({"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "24h"}, NOW), NOW)
    assert far is not None
    assert far.until_ms == NOW + MAX_BLOCK_MS


_limits = st.lists(
    st.builds(
        HeaderLimit,
        header=st.sampled_from(
            ["x-ratelimit-remaining-requests", "x-ratelimit-remaining-tokens", "anthropic-ratelimit-tokens-remaining"]
        ),
        remaining=st.integers(min_value=0, max_value=3),
        reset_at_ms=st.one_of(st.none(), st.integers(min_value=NOW - 5_000, max_value=NOW + 2 * MAX_BLOCK_MS)),
    ),
    max_size=4,
    unique_by=lambda limit: limit.header,
).map(tuple)


@given(_limits)
def test_the_block_is_the_latest_reset_of_the_exhausted(limits: tuple[HeaderLimit, ...]) -> None:
    """The block ends at the latest future reset among the limits at 0 (capped), or there is none."""
    resets = [min(lim.reset_at_ms, NOW + MAX_BLOCK_MS) for lim in limits
              if lim.remaining == 0 and lim.reset_at_ms is not None and lim.reset_at_ms > NOW]  # fmt: skip
    block = block_from(limits, NOW)
    assert (block.until_ms if block is not None else None) == (max(resets) if resets else None)


_blocks = st.one_of(st.none(), st.builds(HeaderBlock, header=st.just("h"), until_ms=st.integers(0, 10**6)))


@given(_blocks, _blocks)
def test_blocks_only_grow(current: HeaderBlock | None, new: HeaderBlock | None) -> None:
    """Merging keeps the later block: a stale answer reporting room never lifts a block."""
    merged = merge_blocks(current, new)
    ends = [b.until_ms for b in (current, new) if b is not None]
    assert (merged.until_ms if merged is not None else None) == (max(ends) if ends else None)


@given(st.dictionaries(st.text(max_size=40), st.text(max_size=40), max_size=6), st.integers(0, 2**42))
def test_any_headers_parse_without_raising(headers: dict[str, str], now_ms: int) -> None:
    """Whatever a provider sends, parsing never raises; unknown names are ignored."""
    block_from(header_limits(headers, now_ms), now_ms)


@given(st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)))
def test_rfc3339_agrees_with_the_standard_library(when: datetime) -> None:
    """Core's own RFC 3339 reader (core may not import datetime) agrees with datetime, to the ms rounded up."""
    text = when.isoformat().replace("+00:00", "Z")
    micros = (when - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)  # exact, not a float
    assert parse_rfc3339_ms(text) == -(-micros // 1000)
