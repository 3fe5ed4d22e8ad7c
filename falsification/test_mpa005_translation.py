"""FALSIFY-MPA-005 and the H0 row "translation loses information in >= 1 % of messages".

100,000 message trees from a seeded ``random.Random`` generator (fast, reproducible) go through
Anthropic -> OpenAI -> Anthropic; any difference is a mutation. Prediction: zero mutations.

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
from routeproof.core.translate import anthropic_request_to_openai, openai_request_to_anthropic
from routeproof.core.translate_emit import _to_anthropic, _to_openai
from routeproof.core.translate_parse import _parse_anthropic_request, _parse_openai_request

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


def message_tree(rng: random.Random, serial: int) -> dict[str, Any]:
    """A canonical Anthropic request: alternating turns, parallel tool calls answered in order."""
    messages: list[dict[str, Any]] = []
    pending: list[str] = []
    for turn in range(rng.randrange(1, 7)):
        blocks: list[dict[str, Any]]
        if turn % 2 == 0:
            blocks = [{"type": "tool_result", "tool_use_id": i, "content": _text(rng)} for i in pending]
            blocks += [{"type": "text", "text": _text(rng)} for _ in range(rng.randrange(0 if blocks else 1, 3))]
            messages.append({"role": "user", "content": blocks})
            pending = []
        else:
            blocks = [{"type": "text", "text": _text(rng)} for _ in range(rng.randrange(2))]
            for k in range(rng.randrange(0 if blocks else 1, 4)):
                pending.append(f"toolu_{serial}_{turn}_{k}")
                args = {_text(rng): _json(rng) for _ in range(rng.randrange(4))}
                blocks.append({"type": "tool_use", "id": pending[-1], "name": rng.choice(_TOOL_NAMES), "input": args})
            messages.append({"role": "assistant", "content": blocks})
    body: dict[str, Any] = {"model": rng.choice(_MODELS), "max_tokens": rng.randrange(1, 10**5)}
    body["messages"] = messages
    if rng.random() < 0.5:
        body["system"] = _text(rng)
    return body


def _round_trip_checked(tree: dict[str, Any]) -> dict[str, Any]:
    return openai_request_to_anthropic(anthropic_request_to_openai(tree))


def _round_trip_impl(tree: dict[str, Any]) -> dict[str, Any]:
    return _to_anthropic(*_parse_openai_request(_to_openai(*_parse_anthropic_request(tree))))


def _mutations(chunk: int, size: int) -> tuple[int, str]:
    """Round-trip chunk ``chunk`` (``size`` trees from its own seed): the mutation count and the first one."""
    rng = random.Random(SEED * 1_000_003 + chunk)
    mutations, first = 0, ""
    for index in range(size):
        tree = message_tree(rng, chunk * size + index)
        round_trip = _round_trip_checked if index < CONTRACT_SAMPLE else _round_trip_impl
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
