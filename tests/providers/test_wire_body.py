"""The bodies a provider sends and reads: ``encode_json`` writes what core's one encoder writes (orjson
where it writes the same, ``compact_json`` for the rest), a same-protocol body starts from the gateway's
own parse of the caller's body (``WireOrigin.parsed``) instead of decoding its text again, and an answer
is read as ``json.loads`` reads it (``json_bytes.loads``: orjson where it reads the same)."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routeproof import json_bytes
from routeproof.core.capabilities import FittedRequest, ModelCapabilities
from routeproof.core.formats.translate import parse_openai_request
from routeproof.core.formats.wire import compact_json
from routeproof.core.messages import WireFormat, WireOrigin
from routeproof.gateway.app import _parse
from routeproof.gateway.failures import Api
from routeproof.providers._http import encode_json
from routeproof.providers._passthrough import outgoing_body

_TEXT = st.text(st.characters(codec="utf-8"))  # a lone surrogate is no UTF-8: tested apart
_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | _TEXT
_JSON = st.recursive(
    _SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4), max_leaves=30
)


@given(_JSON)
def test_encode_json_writes_the_value_compact_json_writes(value: Any) -> None:
    """Any JSON value (ints of any size, every character): the same value, and the same bytes unless a
    float is spelled otherwise (``1e-07`` / ``1e-7``)."""
    sent = encode_json({"v": value})
    canonical = compact_json({"v": value}).encode("utf-8")
    assert json.loads(sent) == json.loads(canonical)
    if "e-" not in canonical.decode() and "e+" not in canonical.decode():
        assert sent == canonical


class _Tier(enum.StrEnum):
    FLEX = "flex"


@dataclasses.dataclass
class _NotJson:
    x: int = 1


@pytest.mark.parametrize(
    "body",
    [
        {"seed": 2**64},  # past orjson's 64 bits
        {"service_tier": _Tier.FLEX},  # a str subclass
        {1: "a", None: "b"},  # keys that are not str
        {"v": [[[[]]]] * 2, "deep": json.loads("[" * 300 + "]" * 300)},  # past orjson's 254 levels
    ],
    ids=["int past 64 bits", "StrEnum", "non-str keys", "deep nesting"],
)
def test_what_orjson_would_write_otherwise_is_written_by_compact_json(body: dict[Any, Any]) -> None:
    assert encode_json(body) == compact_json(body).encode("utf-8")


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({"x": _NotJson()}, TypeError),
        ({"at": datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)}, TypeError),
        ({"text": "\ud800"}, UnicodeEncodeError),
    ],
    ids=["dataclass", "datetime", "lone surrogate"],
)
def test_what_is_no_json_is_refused_as_before(body: dict[str, Any], error: type[Exception]) -> None:
    """A dataclass or a date (orjson would write them) and a lone surrogate are refused as before."""
    with pytest.raises(error):
        compact_json(body).encode("utf-8")
    with pytest.raises(error):
        encode_json(body)


_CALLER = {"model": "chat", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}], "user": "u-1"}


def _origin(parsed: dict[str, Any] | None) -> WireOrigin:
    return WireOrigin(protocol=WireFormat.OPENAI_CHAT, body_json=json.dumps(_CALLER), parsed=parsed)


def _sent(origin: WireOrigin) -> dict[str, Any]:
    req, extras = parse_openai_request(_CALLER)
    req = dataclasses.replace(req, origin=origin)
    fitted = FittedRequest(request=req, extras=extras, dropped=())
    out = outgoing_body(req, fitted, ModelCapabilities(), target=WireFormat.OPENAI_CHAT, model="gpt-4o", stream=False)
    assert out.body is not None
    return out.body


def test_a_same_protocol_body_starts_from_the_kept_parse() -> None:
    """The kept parse is what is sent (router fields set on a copy); without one the text is decoded."""
    kept = {**_CALLER, "user": "from-the-parse"}
    assert _sent(_origin(kept))["user"] == "from-the-parse"
    assert kept["model"] == "chat"  # the parse itself is not changed
    assert _sent(_origin(None))["user"] == "u-1"
    assert _sent(_origin(kept))["model"] == _sent(_origin(None))["model"] == "gpt-4o"


def test_the_kept_parse_is_read_only_and_no_part_of_the_origin_value() -> None:
    origin = _origin(dict(_CALLER))
    assert origin == _origin(None)
    assert hash(origin) == hash(_origin(None))
    assert "parsed" not in repr(origin)
    assert origin.parsed is not None
    with pytest.raises(TypeError):
        origin.parsed["user"] = "changed"  # type: ignore[index]
    with pytest.raises(TypeError, match=r"WireOrigin\.parsed"):
        WireOrigin(protocol=WireFormat.OPENAI_CHAT, body_json="{}", parsed=[])  # type: ignore[arg-type]


@pytest.mark.parametrize("api", [Api.OPENAI, Api.ANTHROPIC])
def test_the_gateway_keeps_its_parse_of_the_caller_body(api: Api) -> None:
    body = json.dumps(_CALLER).encode()
    req, *_ = _parse(api, body, (), lambda alias: 1024)
    assert req.origin is not None
    assert req.origin.parsed == json.loads(body)


_ANSWER_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**63 - 4, max_value=2**64 + 4).map(lambda n: n if n % 2 else -n)  # the 64-bit edges
    | st.floats()  # NaN and the infinities too: json.loads reads them
    | st.text(st.sampled_from(["a", "\u00e9", "\U0001f600", "\ud800", "\udc00", "\\", '"', "7"]), max_size=25),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3),
)


def _read(loads: Callable[[bytes], object], text: bytes) -> str:
    try:
        return repr(loads(text))  # exact: 1, 1.0 and 2**64 read as a float all differ
    except (ValueError, RecursionError) as exc:
        return f"{type(exc).__name__}: {exc}"


@given(value=_ANSWER_JSON, ascii_only=st.booleans())
def test_json_bytes_loads_is_json_loads(value: object, ascii_only: bool) -> None:
    """A provider's answer is read as ``json.loads`` reads it: same types, same error."""
    text = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", errors="surrogatepass")
    assert _read(json_bytes.loads, text) == _read(json.loads, text)


@pytest.mark.parametrize(
    "text",
    [
        b'{"usage": {"prompt_tokens": 18446744073709551616}}',
        b"[-9223372036854775809]",
        b"[1e400, NaN, -Infinity]",
        b'"\\udc00"',
        b"\xef\xbb\xbf{}",
        json.dumps({"x": 1}).encode("utf-16"),
        b"[" * 2000 + b"]" * 2000,
        b"",
        b"{,}",
    ],
)
def test_json_bytes_reads_the_edges_as_json_loads(text: bytes) -> None:
    assert _read(json_bytes.loads, text) == _read(json.loads, text)
