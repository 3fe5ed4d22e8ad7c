"""Issue 27's bad inputs over a real socket: each gets a structured 4xx in the client's API shape."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.gateway.conftest import GATEWAY_KEY, Stack

pytestmark = pytest.mark.asyncio
AUTH = {"authorization": f"Bearer {GATEWAY_KEY}"}
BODY = {"model": "chat", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}
PATHS = ("/v1/chat/completions", "/v1/messages")


def _shape_ok(path: str, answer: httpx.Response) -> bool:
    """The error body is the API's documented shape: OpenAI's ``error.type`` or Anthropic's ``type: error``."""
    body = answer.json()
    if path == "/v1/messages":
        return body["type"] == "error" and isinstance(body["error"]["message"], str)
    return isinstance(body["error"]["type"], str) and isinstance(body["error"]["message"], str)


@pytest.mark.parametrize("path", PATHS)
async def test_json_nested_30000_deep_is_a_400(stack: Stack, path: str) -> None:
    """A body nested 30,000 deep (under this stack's 64 KiB limit) is a 400, was a plain-text 500."""
    deep = b'{"model":"chat","max_tokens":1,"messages":' + b"[" * 30_000 + b"]" * 30_000 + b"}"
    async with httpx.AsyncClient(base_url=stack.url, timeout=10) as client:
        answer = await client.post(path, content=deep, headers={**AUTH, "content-type": "application/json"})
    assert answer.status_code == 400, answer.text
    assert _shape_ok(path, answer)
    assert "deeper than 64" in answer.text
    assert stack.provider_requests() == 0


@pytest.mark.parametrize("value", ["²", "9" * 5_000, "0", "-5", "1e3", "٣"])
async def test_bad_deadline_header_is_a_400(stack: Stack, value: str) -> None:
    """A deadline of ``²``, 5,000 digits, zero, a sign, an exponent or an Arabic-Indic digit is a 400."""
    headers = [("authorization", AUTH["authorization"]), ("x-routeproof-deadline-ms", value)]
    raw = [(k.encode(), v.encode("latin-1" if v.isascii() or v == "²" else "utf-8")) for k, v in headers]
    async with httpx.AsyncClient(base_url=stack.url, timeout=10) as client:
        answer = await client.post("/v1/chat/completions", json=BODY, headers=raw)
    assert answer.status_code == 400, answer.text
    assert "x-routeproof-deadline-ms" in answer.json()["error"]["message"]
    assert stack.provider_requests() == 0


@pytest.mark.parametrize("path", PATHS)
async def test_lone_surrogate_is_a_400_not_all_providers_failed(stack: Stack, path: str) -> None:
    """A lone ``\\ud800`` in a message is the caller's error (400), not a 502 "all providers failed"."""
    raw = json.dumps({**BODY, "messages": [{"role": "user", "content": "a\ud800b"}]}).encode()
    async with httpx.AsyncClient(base_url=stack.url, timeout=10) as client:
        answer = await client.post(path, content=raw, headers={**AUTH, "content-type": "application/json"})
    assert answer.status_code == 400, answer.text
    assert _shape_ok(path, answer)
    assert "surrogate" in answer.text
    assert stack.provider_requests() == 0


async def test_wrong_content_type_is_a_415(stack: Stack) -> None:
    """A text/plain or multipart body is a 415 naming the type; curl's form default is still read as JSON."""
    async with httpx.AsyncClient(base_url=stack.url, timeout=10) as client:
        plain = await client.post(
            "/v1/messages", content=json.dumps(BODY), headers={**AUTH, "content-type": "text/plain"}
        )
        curl = await client.post(
            "/v1/chat/completions",
            content=json.dumps(BODY),
            headers={**AUTH, "content-type": "application/x-www-form-urlencoded"},
        )
    assert plain.status_code == 415
    assert plain.json()["type"] == "error"
    assert "text/plain" in plain.json()["error"]["message"]
    assert curl.status_code == 200


async def test_numbers_json_does_not_know_are_a_400(stack: Stack) -> None:
    """NaN and an integer of 5,000 digits are 400s (the second was a ValueError past the JSON handler)."""
    async with httpx.AsyncClient(base_url=stack.url, timeout=10) as client:
        nan = await client.post("/v1/chat/completions", content=b'{"model":"chat","max_tokens":NaN}', headers=AUTH)
        huge = b'{"model":"chat","max_tokens":' + b"9" * 5_000 + b"}"
        digits = await client.post("/v1/chat/completions", content=huge, headers=AUTH)
    assert nan.status_code == 400
    assert digits.status_code == 400


async def test_a_second_gateway_key_header_is_a_400(stack: Stack) -> None:
    """Two Authorization headers are ambiguous (which tenant?): a 400, not the last one silently."""
    raw = [(b"authorization", b"Bearer a"), (b"authorization", f"Bearer {GATEWAY_KEY}".encode())]
    async with httpx.AsyncClient(base_url=stack.url, timeout=10) as client:
        answer = await client.post("/v1/chat/completions", json=BODY, headers=raw)
    assert answer.status_code == 400
    assert "authorization" in answer.json()["error"]["message"]
