"""own_json: a same-protocol caller's answer is the provider's JSON text as written when it is a UTF-8
JSON object, and an encoding of the parsed body otherwise (a BOM, UTF-16): never text a client misreads."""

from __future__ import annotations

import json

import pytest

from routeproof.providers._http import HttpReply, own_json

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
