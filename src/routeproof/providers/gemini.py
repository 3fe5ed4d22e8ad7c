"""Google Gemini through its OpenAI-compatible endpoint (``https://generativelanguage.googleapis.com/v1beta/openai``).

A configuration of the OpenAI-compatible client: ``POST {base_url}/chat/completions`` with the API
key as ``Authorization: Bearer`` (``GEMINI_API_KEY``). What differs from OpenAI is handled where
the rule lives:

- errors: the body is a list holding one Google error object (``[{"error": {"code": 429,
  "message": ..., "status": "RESOURCE_EXHAUSTED", "details": [...]}}]``); ``providers/_http.py``
  reads its message, and the status classifies it (429 ``RESOURCE_EXHAUSTED`` and 503
  ``UNAVAILABLE`` retryable, 400 ``INVALID_ARGUMENT`` / ``FAILED_PRECONDITION`` terminal, 403
  ``PERMISSION_DENIED`` an auth failure); a ``google.rpc.RetryInfo`` ``retryDelay`` is its
  Retry-After (``core/provider_variants.py``);
- parameters: ``models.toml`` rows (``provider = "gemini"``) say what each model takes;
- usage: ``completion_tokens`` already includes the thinking tokens, and
  ``completion_tokens_details.reasoning_tokens`` names them when Gemini reports them; where an
  answer has them only in ``total_tokens`` they are counted as output, in a plain answer and in a
  stream's last usage chunk alike (:class:`ThinkingCountedDecoder`), for the ledger; a caller of the
  OpenAI shape gets Gemini's own answer whole (plain) or its own frames (streamed, relayed as an
  OpenAI provider's are: ``core/formats/relay.py``), so nothing of it is lost on the way.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from dataclasses import replace
from functools import partial
from typing import Any

import httpx

from routeproof.core.capabilities import CapabilityTable
from routeproof.core.formats.normalize import normalize_openai
from routeproof.core.formats.sse import MAX_LINE_CHARS, StreamDecoder, WireProtocol
from routeproof.core.provider_variants import counted_output_tokens
from routeproof.core.types import ChatRequest, MessageStop, ProviderKind, ProviderResponse, StreamEvent
from routeproof.providers._http import (
    DEFAULT_MAX_RESPONSE_BYTES,
    encode_json,
    normalize_or_fail,
    own_json,
    post_json,
    stamp,
)
from routeproof.providers._stream import stream_events
from routeproof.providers.openai import OpenAIProvider

__all__ = ["GEMINI_BASE_URL", "GeminiProvider", "ThinkingCountedDecoder"]

GEMINI_BASE_URL = "https://generativelanguage.googleapis.com/v1beta/openai"


class GeminiProvider(OpenAIProvider):
    """Gemini's OpenAI-compatible endpoint (or a stand-in at ``base_url``)."""

    __slots__ = ()

    def __init__(
        self,
        *,
        api_key: str | None,
        client: httpx.AsyncClient | None = None,
        base_url: str | None = None,
        name: str | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        capabilities: CapabilityTable | None = None,
    ) -> None:
        super().__init__(
            kind=ProviderKind.GEMINI, api_key=api_key, client=client, base_url=base_url or GEMINI_BASE_URL,
            name=name, max_response_bytes=max_response_bytes, capabilities=capabilities,
        )  # fmt: skip

    def __repr__(self) -> str:
        return f"GeminiProvider(name={self.name!r}, base_url={self.base_url!r})"

    async def complete(self, request: ChatRequest, model: str, *, timeout_at: float) -> ProviderResponse:
        """One Chat Completions call; the usage counts the thinking tokens as output (module doc)."""
        secrets = self._secrets()
        body, out = self._body(request, model, stream=False)
        reply = await post_json(
            self._client, self._chat_url(model), content=encode_json(body), headers=self._headers(out),
            timeout_at=timeout_at, secrets=secrets, max_response_bytes=self._max_response_bytes,
        )  # fmt: skip
        own = reply  # as Gemini wrote it: a caller of the same protocol gets it whole
        if isinstance(reply.body, dict):
            reply = replace(reply, body=_with_thinking_counted(reply.body))
        normalize = partial(normalize_openai, provider=self.kind)
        response = normalize_or_fail(normalize, reply, secrets=secrets)
        # the caller's own OpenAI request: audio, annotations, every field go back
        wire = own_json(own) if out.body is not None else None
        return stamp(response, self.kind, model, wire_body_json=wire, dropped=out.dropped)

    def stream(
        self, request: ChatRequest, model: str, *, timeout_at: float, idle_timeout_s: float | None = None
    ) -> AsyncGenerator[StreamEvent, None]:
        """One streamed Chat Completions call; its usage counts the thinking tokens as output (module doc)."""
        body, out = self._body(request, model, stream=True)
        return stream_events(
            self._client, self._chat_url(model), content=encode_json(body), headers=self._headers(out),
            timeout_at=timeout_at,
            decoder=ThinkingCountedDecoder(max_line_chars=self._max_sse_line_chars, keep_frames=out.relay),
            secrets=self._secrets(), idle_timeout_s=idle_timeout_s, max_error_bytes=self._max_response_bytes,
        )  # fmt: skip


class ThinkingCountedDecoder:
    """OpenAI's SSE decoder, whose ``MessageStop`` usage counts the thinking tokens Gemini reported only
    in a chunk's ``total_tokens`` (``core/provider_variants.counted_output_tokens``) as output."""

    def __init__(self, *, max_line_chars: int | None = MAX_LINE_CHARS, keep_frames: bool = False) -> None:
        self._inner = StreamDecoder(WireProtocol.OPENAI, max_line_chars=max_line_chars, keep_frames=keep_frames)
        self._line = b""
        self._output_tokens: int | None = None

    def _scan(self, chunk: bytes) -> None:
        *lines, self._line = (self._line + chunk).split(b"\n")
        for line in lines:
            if line.startswith(b"data:") and b'"usage"' in line:
                try:
                    usage = json.loads(line[5:]).get("usage")
                except (ValueError, AttributeError):
                    continue  # the inner decoder names a malformed chunk
                counted = counted_output_tokens(usage) if isinstance(usage, dict) else None
                self._output_tokens = counted if counted is not None else self._output_tokens

    def _counted(self, events: list[StreamEvent]) -> list[StreamEvent]:
        output = self._output_tokens
        return [
            replace(e, usage=replace(e.usage, completion_tokens=output))
            if isinstance(e, MessageStop) and output is not None and output > e.usage.completion_tokens
            else e
            for e in events
        ]

    def feed(self, chunk: bytes) -> list[StreamEvent]:
        """The events completed by ``chunk``."""
        self._scan(chunk)
        return self._counted(self._inner.feed(chunk))

    def finish(self) -> list[StreamEvent]:
        """The end of the body."""
        self._scan(b"\n")
        return self._counted(self._inner.finish())


def _with_thinking_counted(body: dict[str, Any]) -> dict[str, Any]:
    usage = body.get("usage")
    output = counted_output_tokens(usage) if isinstance(usage, dict) else None
    if output is None or not isinstance(usage, dict) or output == usage.get("completion_tokens"):
        return body
    return {**body, "usage": {**usage, "completion_tokens": output}}
