"""build_post (the per-call request builder) makes exactly the request httpx's build_request makes."""

from __future__ import annotations

import httpx
import pytest

from routeproof.providers._http import build_post

URL = "http://127.0.0.1:9/v1/chat/completions"
BODY = b'{"model":"gpt-4o"}'
TIMEOUT = httpx.Timeout(12.5, pool=12.3)


def _same(a: httpx.Request, b: httpx.Request) -> None:
    assert (a.method, a.url, a.content, a.extensions) == (b.method, b.url, b.content, b.extensions)
    assert sorted(a.headers.multi_items()) == sorted(b.headers.multi_items())


@pytest.mark.parametrize(
    ("client_headers", "call_headers"),
    [
        ({}, {"authorization": "Bearer sk-x", "content-type": "application/json"}),
        ({"User-Agent": "mine/1", "X-Team": "a"}, {"user-agent": "call/2", "x-api-key": "k"}),  # the call's win
        (
            {"accept": "text/plain"},
            {"Accept": "application/json", "traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01"},
        ),
    ],
)
def test_build_post_equals_build_request(client_headers: dict[str, str], call_headers: dict[str, str]) -> None:
    """Same method, URL, body, timeout and header set as build_request, a call header replacing the
    client's of the same name whatever its case."""
    client = httpx.AsyncClient(headers=client_headers)
    built = build_post(client, URL, content=BODY, headers=call_headers, timeout=TIMEOUT)
    _same(built, client.build_request("POST", URL, content=BODY, headers=call_headers, timeout=TIMEOUT))


@pytest.mark.parametrize(
    "client",
    [httpx.AsyncClient(cookies={"session": "s1"}), httpx.AsyncClient(base_url="http://127.0.0.1:9/v1/")],
    ids=["cookies", "base_url"],
)
def test_build_post_keeps_cookie_and_base_url_merging(client: httpx.AsyncClient) -> None:
    """A client with cookies or a base URL gets build_request's own merging (cookie header, joined URL)."""
    url = "chat/completions" if not client.base_url.is_relative_url else URL
    built = build_post(client, url, content=BODY, headers={"x-api-key": "k"}, timeout=TIMEOUT)
    _same(built, client.build_request("POST", url, content=BODY, headers={"x-api-key": "k"}, timeout=TIMEOUT))
