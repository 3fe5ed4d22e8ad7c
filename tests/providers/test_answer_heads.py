"""The default (aiohttp) transport reads every answer head httpx's own transport reads, to the same
outcome: a long header line, many headers, a value that is not UTF-8. aiohttp's own bounds (8,190
bytes a line, 128 headers) turned such an answer, a 4xx included, into a reset connection, which the
kernel retries; httpx's transport (and every SDK on it) read it whole."""

from __future__ import annotations

import asyncio

import pytest

from routeproof.core.errors import AuthError
from routeproof.core.routing import resolve
from routeproof.core.types import AttemptFailure, ChatRequest, Message, ProviderKind, TenantPolicy
from routeproof.providers.openai import OpenAIProvider
from routeproof.router import Router
from routeproof.transport import HEAD_FIELDS, HEAD_LINE_BYTES, Transport, make_client
from tests.providers.direct_calls import _canned, _outcome, _response

pytestmark = pytest.mark.asyncio
ANSWER = b'{"id": "x", "choices": []}'
REFUSED = b'{"error": {"message": "blocked by policy"}}'
REQUEST = ChatRequest(messages=(Message.user("hi"),), max_tokens=4, alias="a")
TENANT = TenantPolicy(primary={"a": (ProviderKind.OPENAI, "gpt-4o")})

HEADS = {
    "a 10 KB header line": _response("200 OK", ANSWER, "x-request-id: r", "x-trace: " + "a" * 10_000),
    "a 90 KB header line": _response("200 OK", ANSWER, "x-request-id: r", "x-trace: " + "a" * 90_000),
    "200 headers": _response("200 OK", ANSWER, "x-request-id: r", *(f"x-h{i}: {i}" for i in range(200))),
    "a 403 with a 12 KB policy header": _response(
        "403 Forbidden", REFUSED, "content-security-policy: " + "default-src 'self'; " * 600
    ),
    "a 429 after 150 headers": _response(
        "429 Too Many Requests", REFUSED, *(f"x-h{i}: {i}" for i in range(150)), "retry-after: 2"
    ),
    "a UTF-8 header value": _response("200 OK", ANSWER, "x-request-id: café"),
    "a Latin-1 header value": _response("200 OK", ANSWER).replace(b"\r\n\r\n", b"\r\nx-request-id: caf\xe9\r\n\r\n", 1),
}


@pytest.mark.parametrize("head", list(HEADS))
async def test_the_default_transport_reads_what_httpxs_reads(head: str) -> None:
    outcomes = []
    for transport in (Transport.AIOHTTP, Transport.HTTPX):
        client = make_client(transport)
        async with _canned(HEADS[head]) as (url, _):
            outcomes.append(await _outcome(client, url))
        await client.aclose()
    assert outcomes[0] == outcomes[1]
    assert not isinstance(outcomes[0], AttemptFailure) or outcomes[0].http_status is not None


async def test_a_head_past_both_bounds_is_refused_by_both_as_the_same_kind() -> None:
    """The bounds stay bounds: a header line past what httpx reads (100 KiB and one 64 KiB read) and
    past :data:`HEAD_LINE_BYTES` is refused by both transports, as the same failure kind."""
    too_long = _response("200 OK", ANSWER, "x-trace: " + "a" * 200 * 1024)
    kinds = []
    for transport in (Transport.AIOHTTP, Transport.HTTPX):
        client = make_client(transport)
        async with _canned(too_long) as (url, _):
            outcome = await _outcome(client, url)
        await client.aclose()
        assert isinstance(outcome, AttemptFailure)
        kinds.append(outcome.kind)
    assert kinds[0] == kinds[1]


def _head(values: int, fields: int) -> bytes:
    """An answer whose ``x-trace`` value is ``values`` bytes long, in ``fields`` header lines."""
    return _response("200 OK", ANSWER, "x-trace: " + "a" * values, *(f"x-h{i}: {i}" for i in range(fields - 3)))


@pytest.mark.parametrize(
    ("head", "read"),
    [
        (_head(HEAD_LINE_BYTES, 3), True),
        (_head(HEAD_LINE_BYTES + 1, 3), False),
        (_head(1, HEAD_FIELDS), True),
        (_head(1, HEAD_FIELDS + 1), False),
    ],
    ids=["the longest value", "one byte longer", "the most headers", "one header more"],
)
async def test_the_default_transports_bounds_are_its_constants(head: bytes, read: bool) -> None:
    client = make_client(Transport.AIOHTTP)
    async with _canned(head) as (url, _):
        outcome = await _outcome(client, url)
    await client.aclose()
    assert isinstance(outcome, AttemptFailure) is not read


async def test_a_403_with_a_long_header_ends_the_call_after_one_request() -> None:
    """A provider's 403 is terminal: one request, an AuthError, on the default transport too. Under
    aiohttp's own bounds its 12 KB policy header made it a reset, retried twice with backoff."""
    async with _canned(HEADS["a 403 with a 12 KB policy header"]) as (url, seen):
        provider = OpenAIProvider(api_key="sk-1", base_url=url.removesuffix("/chat/completions"))
        router = Router([provider])
        resolved = resolve("a", TENANT)
        assert resolved is not None
        with pytest.raises(AuthError):
            await router.call_provider(REQUEST, resolved, asyncio.get_running_loop().time() + 10, TENANT)
        await router.aclose()
    assert len(seen) == 1
