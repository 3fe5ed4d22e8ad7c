"""The HTTP control API under /_mock/ and the JSON form of steps."""

from __future__ import annotations

import httpx
import pytest

from routeproof.mock import CutMode, MockProviderServer, MockScriptError, Scripted, Shape, step_from_json, step_to_json
from tests.mock.helpers import PATHS, TIMEOUT_S, auth_headers, request_body

OPENAI = Shape.OPENAI


@pytest.mark.asyncio
async def test_script_over_http_queues_steps_in_order() -> None:
    """POST /_mock/script queues steps that the next provider requests use, in order."""
    steps = [{"status": 429, "headers": {"Retry-After": "1"}}, {"status": 200, "body": {"ok": True}}]
    async with MockProviderServer(OPENAI) as srv, httpx.AsyncClient(base_url=srv.base_url, timeout=TIMEOUT_S) as client:
        queued = await client.post("/_mock/script", json=steps)
        first = await client.post(PATHS[OPENAI], json={}, headers=auth_headers(OPENAI))
        second = await client.post(PATHS[OPENAI], json={}, headers=auth_headers(OPENAI))
    assert queued.json() == {"queued": 2}
    assert (first.status_code, first.headers["retry-after"]) == (429, "1")
    assert second.json() == {"ok": True}


@pytest.mark.asyncio
async def test_default_over_http_applies_when_the_queue_is_empty() -> None:
    """POST /_mock/default sets the step used for every unscripted request."""
    async with MockProviderServer(OPENAI) as srv, httpx.AsyncClient(base_url=srv.base_url, timeout=TIMEOUT_S) as client:
        await client.post("/_mock/default", json={"status": 500})
        resp = await client.post(PATHS[OPENAI], json={}, headers=auth_headers(OPENAI))
        state = (await client.get("/_mock/state")).json()
    assert resp.status_code == 500
    assert state["default"]["status"] == 500
    assert state["pending"] == 0
    assert srv.default == Scripted(status=500)


@pytest.mark.asyncio
async def test_journal_and_reset_over_http() -> None:
    """GET /_mock/journal lists provider requests (not control ones); POST /_mock/reset clears it all."""
    async with MockProviderServer(OPENAI) as srv, httpx.AsyncClient(base_url=srv.base_url, timeout=TIMEOUT_S) as client:
        await client.post("/_mock/script", json=[{"status": 502}])
        await client.post(
            PATHS[OPENAI], json=request_body(OPENAI), headers={**auth_headers(OPENAI), "traceparent": "00-abc-def-01"}
        )
        journal = (await client.get("/_mock/journal")).json()
        await client.post("/_mock/script", json=[{"status": 502}])
        await client.post("/_mock/reset")
        after = (await client.get("/_mock/journal")).json()
        resp = await client.post(PATHS[OPENAI], json={}, headers=auth_headers(OPENAI))
    assert [e["path"] for e in journal["entries"]] == [PATHS[OPENAI]]
    assert journal["entries"][0]["traceparent"] == "00-abc-def-01"
    assert journal["entries"][0]["auth_present"] is True
    assert journal["entries"][0]["body"]["model"] == "mock-model"
    assert journal["connections_accepted"] == 1
    assert after["entries"] == []
    assert resp.status_code == 200


@pytest.mark.asyncio
async def test_bad_control_requests_say_what_was_wrong() -> None:
    """Unknown step keys are 400 naming the key; unknown routes 404; wrong methods 405."""
    async with MockProviderServer(OPENAI) as srv, httpx.AsyncClient(base_url=srv.base_url, timeout=TIMEOUT_S) as client:
        bad_key = await client.post("/_mock/script", json=[{"stauts": 500}])
        not_list = await client.post("/_mock/script", content=b"{not json")
        unknown = await client.get("/_mock/nope")
        wrong = await client.get("/_mock/script")
        assert srv.pending == 0
    assert bad_key.status_code == 400
    assert "stauts" in bad_key.json()["error"]
    assert not_list.status_code == 400
    assert (unknown.status_code, wrong.status_code) == (404, 405)


def test_step_json_round_trip_keeps_every_field() -> None:
    """step_to_json then step_from_json gives back an equal step, bytes bodies included."""
    steps = [
        Scripted(
            status=503,
            headers=(("Retry-After", "3"),),
            body={"a": [1, 2]},
            delay_before_headers_s=0.5,
            stream_events=("data: x\n\n", b"\xff", {"event": "ping", "data": {}}),
            delay_between_chunks_s=0.1,
            cut_after_bytes=12,
            cut_mode=CutMode.CLOSE,
            malformed_body=True,
            hang_after_headers=True,
            close_connection=True,
        ),
        Scripted(body=b"\x00raw"),
        Scripted(hang=True, body="text"),
        Scripted(status=429, on_responses=Scripted(body={"object": "response"}, cut_after_items=2)),
    ]
    for step in steps:
        assert step_from_json(step_to_json(step)) == step


@pytest.mark.parametrize(
    "data",
    [
        {"status": 99},
        {"status": "200"},
        {"cut_after_bytes": -1},
        {"delay_before_headers_s": -0.1},
        {"hang": "yes"},
        {"cut_mode": "explode"},
        {"headers": {"X": "a\r\nb"}},
        [],
    ],
)
def test_invalid_steps_are_rejected_with_the_value(data: object) -> None:
    """step_from_json rejects invalid values with a MockScriptError."""
    with pytest.raises(MockScriptError):
        step_from_json(data)


@pytest.mark.asyncio
async def test_a_responses_request_gets_the_steps_responses_form() -> None:
    """A step with ``on_responses``: the Chat route answers the step's own body, ``POST /v1/responses``
    the ``on_responses`` one (each from the queue in turn, then the default)."""
    step = Scripted(body={"object": "chat.completion"}, on_responses=Scripted(body={"object": "response"}))
    async with (
        MockProviderServer(OPENAI, default=step) as srv,
        httpx.AsyncClient(base_url=srv.base_url, timeout=TIMEOUT_S) as client,
    ):
        chat = await client.post(PATHS[OPENAI], json={}, headers=auth_headers(OPENAI))
        responses = await client.post("/v1/responses", json={"model": "m", "input": "hi"}, headers=auth_headers(OPENAI))
    assert chat.json() == {"object": "chat.completion"}
    assert responses.json() == {"object": "response"}
