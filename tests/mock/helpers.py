"""Shared helpers for the mock-server tests: paths, credentials and an SSE splitter."""

from __future__ import annotations

import json

from routeproof.mock import Shape

PATHS = {
    Shape.ANTHROPIC: "/v1/messages",
    Shape.OPENAI: "/v1/chat/completions",
    Shape.BEDROCK: "/model/anthropic.claude-3-haiku/converse",
    Shape.AZURE: "/openai/deployments/gpt-4o-mini/chat/completions?api-version=2024-10-21",
    Shape.GEMINI: "/v1beta/openai/chat/completions",
}
STREAM_PATHS = {**PATHS, Shape.BEDROCK: "/model/anthropic.claude-3-haiku/converse-stream"}
SECRET = "sk-test-SECRET-value-123"
TIMEOUT_S = 5.0  # bounds every request of these tests


def auth_headers(shape: Shape) -> dict[str, str]:
    """The credentials headers a real client of ``shape`` sends."""
    if shape is Shape.ANTHROPIC:
        return {"x-api-key": SECRET, "anthropic-version": "2023-06-01"}
    if shape in (Shape.OPENAI, Shape.GEMINI):
        return {"authorization": f"Bearer {SECRET}"}
    if shape is Shape.AZURE:
        return {"api-key": SECRET}
    scope = "AKIDEXAMPLE/20250101/us-east-1/bedrock/aws4_request"
    return {"authorization": f"AWS4-HMAC-SHA256 Credential={scope}, SignedHeaders=host, Signature={SECRET}"}


def request_body(shape: Shape, *, stream: bool = False, tool: str | None = None) -> dict[str, object]:
    """A minimal well-formed request body for ``shape``."""
    if shape is Shape.BEDROCK:
        body: dict[str, object] = {"messages": [{"role": "user", "content": [{"text": "hi"}]}]}
        if tool:
            body["toolConfig"] = {"tools": [{"toolSpec": {"name": tool, "inputSchema": {"json": {}}}}]}
        return body
    body = {"model": "mock-model", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
    if stream:
        body["stream"] = True
    if tool and shape is Shape.ANTHROPIC:
        body["tools"] = [{"name": tool, "input_schema": {"type": "object"}}]
    if tool and shape in (Shape.OPENAI, Shape.AZURE, Shape.GEMINI):
        body["tools"] = [{"type": "function", "function": {"name": tool, "parameters": {"type": "object"}}}]
    return body


def parse_sse(text: str) -> list[tuple[str | None, str]]:
    """Split an SSE body into (event name, data) pairs, per the WHATWG event-stream rules we need."""
    events: list[tuple[str | None, str]] = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        name: str | None = None
        data: list[str] = []
        for line in block.split("\n"):
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
        events.append((name, "\n".join(data)))
    return events


def sse_json(text: str) -> list[dict[str, object]]:
    """The JSON data of every SSE event except OpenAI's ``[DONE]``."""
    return [json.loads(d) for _, d in parse_sse(text) if d != "[DONE]"]
