"""edge.py's readers, without a server: depth, surrogates, deadline digits, content types, duplicates."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routeproof.gateway.edge import (
    MAX_JSON_DEPTH,
    Refused,
    _check_value,
    _read_standard,
    check_content_type,
    deadline_ms,
    read_headers,
    read_json,
)


def test_100000_deep_is_refused_naming_the_limit() -> None:
    """The issue's body, 100,000 arrays deep, is a Refused 400 (the decoder's RecursionError is caught)."""
    with pytest.raises(Refused, match="deeper than 64") as caught:
        read_json(b"[" * 100_000 + b"]" * 100_000)
    assert caught.value.failure.status == 400


def test_depth_limit_is_exact() -> None:
    """64 levels are read; 65 are refused, also below the decoder's own recursion limit."""
    assert read_json(b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH) is not None
    with pytest.raises(Refused):
        read_json(b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1))
    with pytest.raises(Refused):
        read_json(b'{"a":' * 65 + b"1" + b"}" * 65)
    with pytest.raises(Refused, match="deeper than 64"):  # a surrogate-pair escape (orjson reads it)
        read_json(b"[" * 65 + b'"\\ud83d\\ude00"' + b"]" * 65)
    for encoding in ("utf-16", "utf-32-le"):  # left to the standard decoder, walked whole for surrogates
        with pytest.raises(Refused, match="deeper than 64"):
            read_json(("[" * 65 + '"\\ud83d\\ude00"' + "]" * 65).encode(encoding))
        assert read_json(("[" * 64 + '"\\ud83d\\ude00"' + "]" * 64).encode(encoding)) is not None


@pytest.mark.parametrize("pad", [0, 5_000, 100_000])
def test_depth_limit_holds_in_a_large_body(pad: int) -> None:
    """The limit is the same however large the body around the nesting (a large body is walked, a small
    one only when it has more ``[`` and ``{`` than the limit): 64 levels read, 65 refused."""
    padded = b'{"pad": "' + b"x" * pad + b'", "turns": [' + b'{"role": "user"},' * (pad // 500) + b"%s]}"
    assert read_json(padded % (b"[" * (MAX_JSON_DEPTH - 2) + b"]" * (MAX_JSON_DEPTH - 2))) is not None
    with pytest.raises(Refused, match="deeper than 64"):
        read_json(padded % (b"[" * (MAX_JSON_DEPTH - 1) + b"]" * (MAX_JSON_DEPTH - 1)))
    with pytest.raises(Refused, match="deeper than 64"):
        read_json(padded % (b'{"a":' * (MAX_JSON_DEPTH - 1) + b"1" + b"}" * (MAX_JSON_DEPTH - 1)))


@pytest.mark.parametrize("where", [0, 50_000, 99_990])
@pytest.mark.parametrize("surrogate", [b"\\ud800", b"\\uDFFF", b"\xed\xa0\x80"])
def test_a_lone_surrogate_anywhere_in_a_large_body_is_refused(where: int, surrogate: bytes) -> None:
    """A lone surrogate, escaped (either case) or as its UTF-8 bytes, is found wherever it sits in 100 KB."""
    text = b"x" * where + surrogate + b"y" * (100_000 - where)
    with pytest.raises(Refused, match="surrogate"):
        read_json(b'{"messages": [{"role": "user", "content": "' + text + b'"}]}')
    assert read_json(b'{"c": "' + b"x" * where + b"\\ud83d\\ude00 \xed\x9f\xbf" + b'"}') is not None  # a pair, U+D7FF


def test_surrogate_in_a_key_or_value_is_refused() -> None:
    """A lone surrogate escaped in a key or in a nested value is refused; a real astral character is not."""
    with pytest.raises(Refused, match="surrogate"):
        read_json(b'{"\\udc00": 1}')
    with pytest.raises(Refused, match="surrogate"):
        read_json(b'{"m": [{"c": "x\\ud800"}]}')
    assert read_json(b'"\\ud83d\\ude00"') == "\U0001f600"


@pytest.mark.parametrize("raw", ["²", "9" * 5_000, "0", "", "+1", "1_000", "1.5", "0x10", "1234567890"])
def test_deadline_refuses_what_is_not_1_to_9_ascii_digits(raw: str) -> None:
    """Non-ASCII digits, 10+ digits, zero, signs, underscores, decimals and hex are refused, shown short."""
    with pytest.raises(Refused, match="x-deadline") as caught:
        deadline_ms(raw, "x-deadline")
    assert len(caught.value.failure.message) < 200


def test_deadline_reads_plain_digits() -> None:
    """Digits, optionally padded with spaces, are the milliseconds."""
    assert deadline_ms(" 250 ", "h") == 250
    assert deadline_ms("999999999", "h") == 999_999_999


@pytest.mark.parametrize("raw", [None, "application/json", "Application/JSON; charset=utf-8",
                                 "application/vnd.api+json", "application/x-www-form-urlencoded"])  # fmt: skip
def test_json_content_types_pass(raw: str | None) -> None:
    """JSON, a +json type, none at all, and curl's form default are read as JSON."""
    check_content_type(raw)


@pytest.mark.parametrize("raw", ["text/plain", "multipart/form-data; boundary=x", "application/xml", ""])
def test_other_content_types_are_415(raw: str) -> None:
    """Anything else is a 415 naming the type."""
    with pytest.raises(Refused) as caught:
        check_content_type(raw)
    assert caught.value.failure.status == 415


def test_single_valued_header_twice_is_refused() -> None:
    """A second x-api-key is refused; repeated other headers keep the last."""
    with pytest.raises(Refused, match="x-api-key"):
        read_headers([(b"x-api-key", b"a"), (b"X-Api-Key", b"b")])
    assert read_headers([(b"accept", b"a"), (b"accept", b"b")]) == {"accept": "b"}


# ASCII, 2-, 3- and 4-byte characters, the lone surrogates' edges, and what JSON escapes (Hypothesis's
# own characters() all but never draws a surrogate, even with the category allowed)
_TEXT = st.text(
    st.sampled_from(["a", "\u00e9", "\u4e00", "\U0001f600", "\ud800", "\udbff", "\udc00", "\udfff", "\\", '"']),
    max_size=4,
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | _TEXT, lambda c: st.lists(c, max_size=3) | st.dictionaries(_TEXT, c)
)


def _outcome(raw: bytes) -> object:
    try:
        return read_json(raw)
    except Refused as refused:
        return refused.failure.status


def _has_surrogate(value: object) -> bool:
    text = json.dumps(value, ensure_ascii=False)
    return any(0xD800 <= ord(ch) <= 0xDFFF for ch in text)


@given(_JSON)
def test_read_json_is_json_loads_or_a_refusal(value: object) -> None:
    """Any JSON value comes back equal, or (lone surrogate) as a 400 refusal; no other error escapes."""
    raw = json.dumps(value).encode()
    decoded = json.loads(raw)  # a high and a low surrogate escaped side by side decode as one character
    assert _outcome(raw) == (400 if _has_surrogate(decoded) else decoded)


def _walked(body: bytes) -> object:
    """read_json's outcome when every value is walked (the rule, without the byte-level shortcut)."""
    try:
        value = json.loads(body)
        _check_value(value, MAX_JSON_DEPTH)
    except Refused as refused:
        return refused.failure.message
    return value


@given(
    value=_JSON,
    wrap=st.integers(0, 70),
    ascii_only=st.booleans(),
    encoding=st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-32-be"]),
)
def test_the_byte_level_shortcut_refuses_and_reads_what_the_full_walk_does(
    value: object, wrap: int, ascii_only: bool, encoding: str
) -> None:
    """Any value (lone surrogates in keys and strings, up to 70 levels deeper), escaped or not, in any
    encoding json.loads detects: read_json gives what walking every value gives."""
    text = "[" * wrap + json.dumps(value, ensure_ascii=ascii_only) + "]" * wrap
    body = text.encode(encoding, errors="surrogatepass")
    try:
        got: object = read_json(body)
    except Refused as refused:
        got = refused.failure.message
    assert got == _walked(body)


# orjson reads first; the standard decoder reads whatever orjson would read otherwise (edge._read_fast)
_NUMBER = (
    st.integers()
    | st.integers(min_value=2**63 - 4, max_value=2**64 + 4).map(lambda n: n if n % 2 else -n)  # the 64-bit edges
    | st.floats(allow_nan=False, allow_infinity=False)
)
_NUMBERS_JSON = st.recursive(
    st.none() | st.booleans() | _NUMBER | _TEXT, lambda c: st.lists(c, max_size=3) | st.dictionaries(_TEXT, c)
)


def _exact(read: Callable[[bytes, int], object], body: bytes) -> str:
    """What ``read`` gives, exactly (``repr``: 1, 1.0 and a 2**64 read as a float all differ), or its refusal."""
    try:
        return repr(read(body, MAX_JSON_DEPTH))
    except Refused as refused:
        return f"refused: {refused.failure.message}"


@given(value=_NUMBERS_JSON, large=st.booleans())
def test_read_json_reads_what_the_standard_decoder_reads(value: object, large: bool) -> None:
    """Any value (ints of any size, floats, lone surrogates), in a small body or one past 4 KB: the
    same value, of the same types, or the same refusal."""
    text = json.dumps(value)
    body = (f'{{"pad": "{"x" * 5000}", "v": {text}}}' if large else text).encode()
    assert _exact(lambda b, depth: read_json(b, max_depth=depth), body) == _exact(_read_standard, body)


_EDGES = [
    b'{"seed": 18446744073709551616}',  # 2**64: past orjson's unsigned 64 bits
    b"[-9223372036854775809]",  # -2**63 - 1: past its signed 64 bits (19 digits)
    b'{"n": 123456789012345678901234567890}',
    b'{"n": 1e19, "m": -9.3e18, "k": 18446744073709551615}',
    b'{"text": "1234567890123456789012"}',  # a run of digits in a string: read again, the same value
    b"[1e400]",
    b"[NaN]",
    b'{"a": 1, "b": 2, "a": 3}',
    b'"\\udc00"',
    b"\xef\xbb\xbf{}",
    b"",
]


@pytest.mark.parametrize("large", [False, True], ids=["small", "past 4 KB"])
@pytest.mark.parametrize("body", _EDGES)
def test_the_edges_of_orjson_are_read_as_the_standard_decoder_reads_them(body: bytes, large: bool) -> None:
    if large and body[:1] in (b"{", b"["):  # the same value deeper in a large body: the walk finds the float
        body = b'{"pad": "' + b"x" * 5000 + b'", "v": ' + body + b"}"
    assert _exact(lambda b, depth: read_json(b, max_depth=depth), body) == _exact(_read_standard, body)
