"""FALSIFY-MPA-005 and the H0 row "translation loses information in >= 1 % of messages".

100,000 message trees from a seeded ``random.Random`` generator (fast, reproducible) go through
Anthropic -> OpenAI -> Anthropic; any difference is a mutation. Prediction: zero mutations.

The trees cover the whole content model. Every other tree is "carriable": only what OpenAI carries
too (images by base64 and URL, titled base64 PDFs, strict tools, structured output, thinking budgets
from the effort table, ``metadata.user_id``, ``disable_parallel_tool_use``, system block lists) and
takes the cross-protocol trip. The others add what only Anthropic carries (thinking and redacted
thinking blocks with signatures, cache markers with ttl on system, message blocks and tools, text and
URL documents with context and citations, ``top_k``, adaptive thinking, effort next to thinking) and
take the same-protocol trip Anthropic -> neutral -> Anthropic, byte-exact. Both count as mutations.

Every tree takes the full round trip (parse, print, parse, print) and is compared as JSON text.
The trees are made in ``CHUNKS`` independently seeded chunks, checked in ``WORKERS`` processes
(the run is CPU-bound: 100,000 trees take about 35 s of CPU). In each chunk the first
``CONTRACT_SAMPLE`` trees go through the icontract-decorated public functions, so their
postconditions run too; the rest call the undecorated implementations those functions wrap (the
same code path minus the contract checks).
"""

from __future__ import annotations

import json
import multiprocessing
import random
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pytest

from falsification.report import record_verdict
from falsification.seeds import base
from routeproof.core.formats.translate import (
    anthropic_request_to_openai,
    openai_request_to_anthropic,
    parse_anthropic_request,
    request_to_anthropic,
)
from routeproof.core.formats.translate_emit import _to_anthropic, _to_openai
from routeproof.core.formats.translate_parse import _parse_anthropic_request, _parse_openai_request
from routeproof.core.options import EFFORT_BUDGET_TOKENS

TREES = 100_000
CHUNKS = 4
WORKERS = 2
CONTRACT_SAMPLE = 1_000  # per chunk: trees that also go through the decorated public API
SEED = base(5)
_ALPHABET = 'abcXYZ 09_-"\\/\n\t\u00e9\u4e2d\U0001f30d\u200b\x00{}[]:,'
_TOOL_NAMES = ("read_file", "search", "get_weather")
_MODELS = ("claude-sonnet-4-5", "o3")


def _text(rng: random.Random) -> str:
    return "".join(rng.choices(_ALPHABET, k=rng.randrange(12)))


def _json(rng: random.Random, depth: int = 0) -> Any:
    pick = rng.randrange(8 if depth < 3 else 5)
    if pick == 0:
        return None
    if pick == 1:
        return rng.random() < 0.5
    if pick == 2:
        return rng.choice([0, -1, 2**63, -(2**70), rng.randrange(-(10**9), 10**9)])
    if pick == 3:
        return rng.choice([0.0, -0.0, 1e308, 5e-324, rng.uniform(-1e6, 1e6)])
    if pick == 4:
        return _text(rng)
    if pick == 5:
        return [_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {_text(rng): _json(rng, depth + 1) for _ in range(rng.randrange(4))}


_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
_BUDGETS = tuple(budget for _, budget in EFFORT_BUDGET_TOKENS)


def _b64(rng: random.Random) -> str:
    return "".join(rng.choices(_B64, k=rng.randrange(1, 16) * 4))


def _cache(rng: random.Random, full: bool) -> dict[str, str] | None:
    """A cache marker on about one block in four of a full tree (none on a carriable one)."""
    if not full or rng.random() < 0.75:
        return None
    return rng.choice([{"type": "ephemeral"}, {"type": "ephemeral", "ttl": "5m"}, {"type": "ephemeral", "ttl": "1h"}])


def _marked(block: dict[str, Any], rng: random.Random, full: bool) -> dict[str, Any]:
    marker = _cache(rng, full)
    if marker is not None:
        block["cache_control"] = marker
    return block


def _media_block(rng: random.Random, full: bool) -> dict[str, Any]:
    """An image or a document, in the shapes the tree's trip carries."""
    pick = rng.randrange(5 if full else 3)
    if pick == 0:
        source = {"type": "base64", "media_type": rng.choice(_IMAGE_TYPES), "data": _b64(rng)}
        return _marked({"type": "image", "source": source}, rng, full)
    if pick == 1:
        return _marked(
            {"type": "image", "source": {"type": "url", "url": f"https://x.test/{_b64(rng)}.png"}}, rng, full
        )
    if pick == 2:
        source = {"type": "base64", "media_type": "application/pdf", "data": _b64(rng)}
        return {"type": "document", "source": source, "title": _text(rng)}
    doc: dict[str, Any] = {"type": "document"}
    if pick == 3:
        doc["source"] = {"type": "text", "media_type": "text/plain", "data": _text(rng)}
    else:
        doc["source"] = {"type": "url", "url": f"https://x.test/{_b64(rng)}.pdf"}
    for key in ("title", "context"):
        if rng.random() < 0.5:
            doc[key] = _text(rng)
    if rng.random() < 0.5:
        doc["citations"] = {"enabled": rng.random() < 0.5}
    return _marked(doc, rng, full)


def _thinking_blocks(rng: random.Random) -> list[dict[str, Any]]:
    """Signed thinking and redacted thinking (opaque, byte-exact), as an assistant turn starts with them."""
    blocks: list[dict[str, Any]] = []
    for _ in range(rng.randrange(3)):
        if rng.random() < 0.7:
            signature = _b64(rng) + rng.choice(["", "=", "=="])
            blocks.append({"type": "thinking", "thinking": _text(rng), "signature": signature})
        else:
            blocks.append({"type": "redacted_thinking", "data": _b64(rng)})
    return blocks


def _options(rng: random.Random, body: dict[str, Any], full: bool) -> None:
    """The per-request options, each on about half the trees, in the shapes the trip carries."""
    if rng.random() < 0.5:
        body["metadata"] = {"user_id": _text(rng)}
    if rng.random() < 0.5:
        budgets = [b for b in _BUDGETS if b < body["max_tokens"]]
        choice = rng.randrange(4 if full else 2)
        if choice == 0 and budgets:
            body["thinking"] = {"type": "enabled", "budget_tokens": rng.choice(budgets)}
        elif choice == 1:
            body["thinking"] = {"type": "disabled"}
        elif choice == 2:
            body["thinking"] = {"type": "adaptive"}
        elif choice == 3 and budgets:
            body["thinking"] = {"type": "enabled", "budget_tokens": rng.randrange(1024, body["max_tokens"])}
    output: dict[str, Any] = {}
    if full and "thinking" in body and rng.random() < 0.5:
        output["effort"] = rng.choice(["low", "medium", "high", "xhigh", "max"])
    if rng.random() < 0.3:
        output["format"] = {"type": "json_schema", "schema": {_text(rng): _json(rng) for _ in range(rng.randrange(3))}}
    if output:
        body["output_config"] = output
    if "tools" in body and rng.random() < 0.5:
        tool_choice: dict[str, Any] = rng.choice(
            [{"type": "auto"}, {"type": "any"}, {"type": "none"}, {"type": "tool", "name": "search"}]
        )
        if rng.random() < 0.5:
            tool_choice["disable_parallel_tool_use"] = rng.random() < 0.5
        body["tool_choice"] = tool_choice
    if full and rng.random() < 0.3:
        body["top_k"] = rng.randrange(1, 500)
    if rng.random() < 0.2:
        body["service_tier"] = rng.choice(["auto", "standard_only"] if full else ["auto"])
    if rng.random() < 0.3:
        body["stop_sequences"] = [_text(rng) for _ in range(rng.randrange(1, 3))]


def message_tree(rng: random.Random, serial: int, *, full: bool = False) -> dict[str, Any]:
    """A canonical Anthropic request: alternating turns, parallel tool calls answered in order, images and
    documents in user turns; a ``full`` tree also thinking blocks, cache markers and Anthropic-only options."""
    messages: list[dict[str, Any]] = []
    pending: list[str] = []
    for turn in range(rng.randrange(1, 7)):
        blocks: list[dict[str, Any]]
        if turn % 2 == 0:
            blocks = [
                _marked({"type": "tool_result", "tool_use_id": i, "content": _text(rng)}, rng, full) for i in pending
            ]
            for _ in range(rng.randrange(0 if blocks else 1, 3)):
                if rng.random() < 0.25:
                    blocks.append(_media_block(rng, full))
                else:
                    blocks.append(_marked({"type": "text", "text": _text(rng)}, rng, full))
            messages.append({"role": "user", "content": blocks})
            pending = []
        else:
            blocks = _thinking_blocks(rng) if full else []
            blocks += [_marked({"type": "text", "text": _text(rng)}, rng, full) for _ in range(rng.randrange(2))]
            for k in range(rng.randrange(0 if blocks else 1, 4)):
                pending.append(f"toolu_{serial}_{turn}_{k}")
                args = {_text(rng): _json(rng) for _ in range(rng.randrange(4))}
                block = {"type": "tool_use", "id": pending[-1], "name": rng.choice(_TOOL_NAMES), "input": args}
                blocks.append(_marked(block, rng, full))
            messages.append({"role": "assistant", "content": blocks})
    body: dict[str, Any] = {"model": rng.choice(_MODELS), "max_tokens": rng.randrange(1, 10**5)}
    body["messages"] = messages
    if rng.random() < 0.5:
        body["system"] = _text(rng)
    elif rng.random() < 0.5:  # a list of blocks: two or more (one uncached block is the string form's twin)
        count = rng.randrange(1 if full else 2, 4)
        body["system"] = [_marked({"type": "text", "text": _text(rng)}, rng, full) for _ in range(count)]
        if full and count == 1:
            body["system"][0]["cache_control"] = {"type": "ephemeral"}
    if rng.random() < 0.5:
        tools = []
        for name in rng.sample(_TOOL_NAMES, rng.randrange(1, 4)):
            tool: dict[str, Any] = {"name": name, "input_schema": {"type": "object"}}
            if rng.random() < 0.3:
                tool["strict"] = rng.random() < 0.5
            tools.append(_marked(tool, rng, full))
        body["tools"] = tools
    _options(rng, body, full)
    return {key: body[key] for key in _KEY_ORDER if key in body}


_KEY_ORDER = (
    "model", "max_tokens", "messages", "system", "tools", "temperature", "top_p", "top_k", "stop_sequences",
    "stream", "tool_choice", "metadata", "thinking", "output_config", "service_tier",
)  # fmt: skip
"""The canonical body's key order: the one the emitter prints (the law compares JSON text)."""


def _round_trip_checked(tree: dict[str, Any]) -> dict[str, Any]:
    return openai_request_to_anthropic(anthropic_request_to_openai(tree))


def _round_trip_impl(tree: dict[str, Any]) -> dict[str, Any]:
    return _to_anthropic(*_parse_openai_request(_to_openai(*_parse_anthropic_request(tree))))


def _same_protocol_checked(tree: dict[str, Any]) -> dict[str, Any]:
    req, extras = parse_anthropic_request(tree)
    body = request_to_anthropic(req, extras.model)
    if extras.stream is not None:
        body["stream"] = extras.stream
    return body


def _same_protocol_impl(tree: dict[str, Any]) -> dict[str, Any]:
    return _to_anthropic(*_parse_anthropic_request(tree))


def _mutations(chunk: int, size: int) -> tuple[int, str]:
    """Round-trip chunk ``chunk`` (``size`` trees from its own seed): the mutation count and the first one."""
    rng = random.Random(SEED * 1_000_003 + chunk)
    mutations, first = 0, ""
    for index in range(size):
        full = index % 2 == 1
        tree = message_tree(rng, chunk * size + index, full=full)
        checked = index < CONTRACT_SAMPLE
        if full:
            round_trip = _same_protocol_checked if checked else _same_protocol_impl
        else:
            round_trip = _round_trip_checked if checked else _round_trip_impl
        expected = json.dumps(tree)
        if json.dumps(round_trip(tree)) != expected:  # stricter than ==: key order, 1 vs 1.0 vs true
            mutations += 1
            first = first or expected[:300]
    return mutations, first


@pytest.mark.falsify
def test_falsify_mpa_005_translation_round_trip() -> None:
    """100,000 message trees survive Anthropic -> OpenAI -> Anthropic with zero mutations."""
    size = TREES // CHUNKS
    spawn = multiprocessing.get_context("spawn")  # no fork of a pytest process that may hold threads
    with ProcessPoolExecutor(max_workers=WORKERS, mp_context=spawn) as pool:
        results = list(pool.map(_mutations, range(CHUNKS), [size] * CHUNKS))
    mutations = sum(count for count, _ in results)
    first = next((tree for _, tree in results if tree), "")
    verdict = "survived" if mutations == 0 else "FALSIFIED"
    detail = (
        f"{size * CHUNKS} trees ({CONTRACT_SAMPLE * CHUNKS} through the contract-checked API), {mutations} mutations"
    )
    print(f"FALSIFY-MPA-005 {verdict}: {detail}")
    print(f"H0 'translation loses information in >= 1% of messages' rejected: {mutations / TREES:.4%} lost")
    procedure = "universal claim sampled: every random tree round-trips byte-identically; one mutation falsifies"
    seeds = f"{SEED} ({CHUNKS} chunks, each seeded {SEED} * 1000003 + chunk)"
    record_verdict("FALSIFY-MPA-005", evidence=detail, survived=mutations == 0, procedure=procedure, seeds=seeds)
    lost = f"{detail} ({mutations / TREES:.4%} lost; H0 needs >= 1%)"
    record_verdict("H0-TRANSLATION", evidence=lost, survived=mutations == 0, procedure=procedure, seeds=seeds)
    assert mutations == 0, f"first mutated tree: {first}"


@pytest.mark.falsify
def test_round_trip_impl_is_the_checked_round_trip() -> None:
    """The undecorated hot-loop path gives the same body as the contract-checked public API."""
    rng = random.Random(SEED + 1)
    for serial in range(200):
        tree = message_tree(rng, serial)
        assert _round_trip_impl(tree) == _round_trip_checked(tree) == tree
        full = message_tree(rng, serial, full=True)
        assert _same_protocol_impl(full) == _same_protocol_checked(full) == full
