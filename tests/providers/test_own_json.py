"""own_json: a same-protocol caller's answer is the provider's JSON text as written when it is a UTF-8
JSON object, and an encoding of the parsed body otherwise (a BOM, UTF-16): never text a client misreads."""

from __future__ import annotations

import json

import pytest

from routeproof.core.formats.normalize import normalize_openai
from routeproof.core.types import ProviderKind
from routeproof.providers._http import HttpReply, own_json, stamp

OBJECT = {"id": "x", "text": "caf\u00e9"}


@pytest.mark.parametrize(
    ("raw", "kept"),
    [
        (b' {"id": "x",  "text": "caf\xc3\xa9"}\n', True),
        (json.dumps(OBJECT).encode("utf-8-sig"), False),
        (json.dumps(OBJECT).encode("utf-16"), False),
        (b"", False),
    ],
    ids=["utf-8 as written", "utf-8 with a BOM", "utf-16", "no raw bytes kept"],
)
def test_own_json_keeps_utf8_objects_and_re_encodes_the_rest(raw: bytes, kept: bool) -> None:
    text = own_json(HttpReply(status=200, headers={}, body=OBJECT, raw=raw))
    assert json.loads(text) == OBJECT
    assert (text == raw.decode("utf-8", errors="replace")) is kept


def test_stamp_sets_what_the_body_left_unsaid_in_one_copy_at_most() -> None:
    """stamp: the provider always, the requested model when the body named none (an OpenAI-compatible
    server may answer ``"model": ""``), the provider's own text and the dropped parameters when given;
    the normaliser's own object when nothing changes."""
    answer = {
        "id": "c1", "model": "", "choices": [{"message": {"content": "4"}, "finish_reason": "stop"}], "usage": None,
    }  # fmt: skip
    bare = normalize_openai(answer, provider=ProviderKind.OLLAMA)
    stamped = stamp(bare, ProviderKind.OLLAMA, "llama3", wire_body_json='{"id":"c1"}', dropped=("seed",))
    assert (stamped.provider, stamped.model) == (ProviderKind.OLLAMA, "llama3")
    assert (stamped.wire_body_json, stamped.dropped_parameters) == ('{"id":"c1"}', ("seed",))
    named = normalize_openai({**answer, "model": "llama3:8b"}, provider=ProviderKind.OLLAMA)
    assert stamp(named, ProviderKind.OLLAMA, "llama3") is named
    assert stamp(named, ProviderKind.OLLAMA, "llama3", dropped=("seed",)).model == "llama3:8b"
