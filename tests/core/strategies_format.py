"""Hypothesis strategies for the format layer: JSON values and canonical wire message trees.

"Canonical" wire bodies are the ones the translators print: strictly alternating turns, Anthropic
content as block lists, OpenAI user content as one string, tool arguments as compact JSON text.
On them the round trip is exact dict equality, which is stronger than the contract's per-field
equality.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from routeproof.core.formats.wire import compact_json

texts = st.text(max_size=40)  # any unicode, including "" and surrogate-free astral characters
tool_ids = st.from_regex(r"[A-Za-z0-9_-]{1,24}", fullmatch=True)
tool_names = st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,20}", fullmatch=True)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts
)
json_values: st.SearchStrategy[Any] = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=12,
)
json_objects: st.SearchStrategy[dict[str, Any]] = st.dictionaries(texts, json_values, max_size=5)


@st.composite
def anthropic_requests(draw: st.DrawFn) -> dict[str, Any]:
    """A canonical Anthropic Messages request with parallel tool calls and their results in order."""
    turns = draw(st.integers(min_value=1, max_value=8))
    messages: list[dict[str, Any]] = []
    pending: list[str] = []  # ids of the last assistant turn's tool calls
    used: set[str] = set()
    for turn in range(turns):
        if turn % 2 == 0:
            blocks: list[dict[str, Any]] = [
                {"type": "tool_result", "tool_use_id": tool_id, "content": draw(texts)} for tool_id in pending
            ]
            for block in blocks:  # an error result travels to OpenAI too (IS_ERROR_MARKER) and comes back
                if draw(st.booleans()):
                    block["is_error"] = True
            blocks += [
                {"type": "text", "text": t} for t in draw(st.lists(texts, min_size=0 if blocks else 1, max_size=3))
            ]
            messages.append({"role": "user", "content": blocks})
            pending = []
        else:
            blocks = [{"type": "text", "text": t} for t in draw(st.lists(texts, max_size=2))]
            for _ in range(draw(st.integers(min_value=0 if blocks else 1, max_value=4))):
                tool_id = draw(tool_ids.filter(lambda i: i not in used))
                used.add(tool_id)
                pending.append(tool_id)
                blocks.append(
                    {"type": "tool_use", "id": tool_id, "name": draw(tool_names), "input": draw(json_objects)}
                )
            messages.append({"role": "assistant", "content": blocks})
    body: dict[str, Any] = {"model": draw(st.sampled_from(["claude-sonnet-4-5", "o3-mini", "gpt-4o"]))}
    body["max_tokens"] = draw(st.integers(min_value=1, max_value=200_000))
    body["messages"] = messages
    if draw(st.booleans()):
        body["system"] = draw(texts)
    tools = draw(st.lists(tool_names, max_size=6, unique=True))
    if tools:
        body["tools"] = [
            {"name": n, "description": draw(texts.filter(bool)), "input_schema": draw(json_objects)} for n in tools
        ]
    if draw(st.booleans()):
        body["temperature"] = draw(st.floats(min_value=0, max_value=1))
    if draw(st.booleans()):
        body["stop_sequences"] = draw(st.lists(texts, min_size=1, max_size=3))
    return body


@st.composite
def openai_requests(draw: st.DrawFn) -> dict[str, Any]:
    """A canonical OpenAI Chat Completions request: tool messages answer the previous tool_calls in order."""
    model = draw(st.sampled_from(["gpt-4o", "gpt-4.1-mini", "o3-mini", "openai/o4-mini"]))
    messages: list[dict[str, Any]] = []
    if draw(st.booleans()):
        reasoning = model.rsplit("/", 1)[-1].startswith("o")
        messages.append({"role": "developer" if reasoning else "system", "content": draw(texts)})
    pending: list[str] = []
    used: set[str] = set()
    for turn in range(draw(st.integers(min_value=1, max_value=8))):
        if turn % 2 == 0:
            messages += [{"role": "tool", "tool_call_id": i, "content": draw(texts)} for i in pending]
            pending = []
            if not messages or messages[-1]["role"] != "tool" or draw(st.booleans()):
                messages.append({"role": "user", "content": draw(texts)})
        else:
            content = draw(st.none() | texts)
            calls = []
            for _ in range(draw(st.integers(min_value=1 if content is None else 0, max_value=4))):
                tool_id = draw(tool_ids.filter(lambda i: i not in used))
                used.add(tool_id)
                pending.append(tool_id)
                function = {"name": draw(tool_names), "arguments": compact_json(draw(json_objects))}
                calls.append({"id": tool_id, "type": "function", "function": function})
            message: dict[str, Any] = {"role": "assistant", "content": content}
            if calls:
                message["tool_calls"] = calls
            messages.append(message)
    reasoning_model = model.rsplit("/", 1)[-1].startswith("o")
    body: dict[str, Any] = {"model": model, "messages": messages}
    del reasoning_model  # OpenAI's canonical max-tokens field is max_completion_tokens for every model
    body["max_completion_tokens"] = draw(st.integers(1, 100_000))
    return body


# --- the whole content model (issue 31): blocks, cache markers, options ------------------------------

base64_texts = st.from_regex(r"([A-Za-z0-9+/]{4}){1,6}(|[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)", fullmatch=True)
cache_markers = st.sampled_from(
    [{"type": "ephemeral"}, {"type": "ephemeral", "ttl": "5m"}, {"type": "ephemeral", "ttl": "1h"}]
)
urls = tool_ids.map(lambda s: f"https://x.test/{s}")


def _marked(block: dict[str, Any], marker: dict[str, str] | None) -> dict[str, Any]:
    return block if marker is None else {**block, "cache_control": marker}


@st.composite
def image_blocks(draw: st.DrawFn, *, cached: bool = True) -> dict[str, Any]:
    """An Anthropic image block: base64 (jpeg/png/gif/webp) or a URL, maybe with a cache marker."""
    if draw(st.booleans()):
        media = draw(st.sampled_from(["image/jpeg", "image/png", "image/gif", "image/webp"]))
        source: dict[str, str] = {"type": "base64", "media_type": media, "data": draw(base64_texts)}
    else:
        source = {"type": "url", "url": draw(urls)}
    return _marked({"type": "image", "source": source}, draw(st.none() | cache_markers) if cached else None)


@st.composite
def document_blocks(draw: st.DrawFn, *, carriable: bool = False) -> dict[str, Any]:
    """An Anthropic document block. ``carriable``: a titled base64 PDF only (what OpenAI carries too)."""
    pdf = {"type": "base64", "media_type": "application/pdf", "data": draw(base64_texts)}
    if carriable:
        return {"type": "document", "source": pdf, "title": draw(texts)}
    text = {"type": "text", "media_type": "text/plain", "data": draw(texts)}
    block: dict[str, Any] = {
        "type": "document",
        "source": draw(st.sampled_from([pdf, text, {"type": "url", "url": draw(urls)}])),
    }
    for key in ("title", "context"):
        if draw(st.booleans()):
            block[key] = draw(texts)
    if draw(st.booleans()):
        block["citations"] = {"enabled": draw(st.booleans())}
    return _marked(block, draw(st.none() | cache_markers))


thinking_blocks = st.one_of(
    st.builds(lambda t, s: {"type": "thinking", "thinking": t, "signature": s}, texts, base64_texts),
    st.builds(lambda d: {"type": "redacted_thinking", "data": d}, base64_texts),
)


@st.composite
def anthropic_full_requests(draw: st.DrawFn) -> dict[str, Any]:
    """A canonical Anthropic request over the whole content model: images, documents, signed thinking,
    cache markers on system blocks, message blocks and tools, thinking and effort, top_k, options.
    Keys in the order the emitter prints them (the same-protocol round trip is exact)."""
    body = draw(anthropic_requests())
    for message in body["messages"]:
        if message["role"] == "user":
            extra = draw(st.lists(image_blocks() | document_blocks(), max_size=2))
            message["content"] = [_marked(b, draw(st.none() | cache_markers)) for b in message["content"]] + extra
        else:
            message["content"] = draw(st.lists(thinking_blocks, max_size=2)) + message["content"]
    if draw(st.booleans()):
        body["system"] = [_marked({"type": "text", "text": t}, draw(st.none() | cache_markers))
                          for t in draw(st.lists(texts, min_size=2, max_size=3))]  # fmt: skip
    for tool in body.get("tools", []):
        if draw(st.booleans()):
            tool["strict"] = draw(st.booleans())
        marker = draw(st.none() | cache_markers)
        if marker is not None:
            tool["cache_control"] = marker
    options: dict[str, Any] = {}
    if draw(st.booleans()):
        options["top_k"] = draw(st.integers(1, 500))
    if "tools" in body and draw(st.booleans()):
        choice: dict[str, Any] = draw(st.sampled_from([{"type": "auto"}, {"type": "any"}, {"type": "none"}]))
        options["tool_choice"] = {**choice, "disable_parallel_tool_use": draw(st.booleans())}
    if draw(st.booleans()):
        options["metadata"] = {"user_id": draw(texts)}
    if body["max_tokens"] > 1024 and draw(st.booleans()):
        options["thinking"] = {"type": "enabled", "budget_tokens": draw(st.integers(1024, body["max_tokens"] - 1))}
        if draw(st.booleans()):
            options["output_config"] = {"effort": draw(st.sampled_from(["low", "medium", "high", "xhigh", "max"]))}
    elif draw(st.booleans()):
        options["thinking"] = {"type": draw(st.sampled_from(["adaptive", "disabled"]))}
    if draw(st.booleans()):
        options["service_tier"] = draw(st.sampled_from(["auto", "standard_only"]))
    order = ("model", "max_tokens", "messages", "system", "tools", "temperature", "top_p", "top_k", "stop_sequences",
             "stream", "tool_choice", "metadata", "thinking", "output_config", "service_tier")  # fmt: skip
    merged = body | options
    return {key: merged[key] for key in order if key in merged}
