"""Toxiproxy 2.12.0's JSON objects and their Go-style decoding: toxic types, attributes, errors.

The real server decodes request bodies with Go's ``encoding/json``; the messages of its 400s name
Go types (``cannot unmarshal string into Go struct field LatencyToxic.attributes.latency of type
int64``). This module reproduces those messages for type errors; JSON *syntax* errors get a message
with the same ``bad request body:`` prefix but Python's wording (see the package docstring).
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "ATTRIBUTES",
    "ApiError",
    "GoNumber",
    "Toxic",
    "decode_body",
    "format_float32",
    "go_bool",
    "go_int",
    "go_str",
]


class ApiError(Exception):
    """An error answered as Toxiproxy's ``{"error": message, "status": status}`` envelope."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class GoNumber(str):
    """A JSON number literal with a fraction or exponent, kept as written (Go refuses it for ints)."""

    __slots__ = ()


# type -> (Go struct name, ((attribute, Go type), ...)) — toxics/*.go in 2.12.0
ATTRIBUTES: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    "noop": ("NoopToxic", ()),
    "latency": ("LatencyToxic", (("latency", "int64"), ("jitter", "int64"))),
    "bandwidth": ("BandwidthToxic", (("rate", "int64"),)),
    "slow_close": ("SlowCloseToxic", (("delay", "int64"),)),
    "timeout": ("TimeoutToxic", (("timeout", "int64"),)),
    "reset_peer": ("ResetToxic", (("timeout", "int64"),)),
    "slicer": ("SlicerToxic", (("average_size", "int"), ("size_variation", "int"), ("delay", "int"))),
    "limit_data": ("LimitDataToxic", (("bytes", "int64"),)),
}


def decode_body(raw: bytes) -> object:
    """The first JSON value of ``raw`` (trailing bytes ignored, as Go's ``Decoder.Decode`` does)."""
    text = raw.decode("utf-8", errors="replace").lstrip(" \t\r\n")
    if not text:
        raise ApiError(400, "bad request body: EOF")
    decoder = json.JSONDecoder(parse_float=GoNumber, parse_constant=GoNumber)
    try:
        value, _ = decoder.raw_decode(text)
    except json.JSONDecodeError as exc:
        raise ApiError(400, f"bad request body: {_go_syntax_error(text, exc)}") from exc
    return value


def _go_syntax_error(text: str, exc: json.JSONDecodeError) -> str:
    """Go's wording for the commonest syntax errors; Python's for the rest (the prefix is kept)."""
    where = text[exc.pos : exc.pos + 1]
    if not where:
        return "unexpected EOF"
    if exc.msg.startswith("Expecting property name"):
        return f"invalid character {where!r} looking for beginning of object key string"
    if exc.msg == "Expecting value":
        for literal in ("null", "true", "false"):
            if where == literal[0]:
                got = text[exc.pos : exc.pos + len(literal)]
                k = next((i for i, (a, b) in enumerate(zip(got, literal, strict=False)) if a != b), len(got))
                if k >= len(got):
                    return "unexpected EOF"
                return f"invalid character {got[k]!r} in literal {literal} (expecting {literal[k]!r})"
        return f"invalid character {where!r} looking for beginning of value"
    return f"invalid character {where!r} ({exc.msg})"


def _json_kind(value: object) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str) and not isinstance(value, GoNumber):
        return "string"
    if isinstance(value, int | GoNumber):
        return "number"
    if isinstance(value, list):
        return "array"
    return "object"


def _unmarshal_error(value: object, field: str, go_type: str) -> ApiError:
    kind = _json_kind(value)
    if kind == "number" and go_type in {"int", "int64"}:
        kind = f"number {value}"
    return ApiError(
        400, f"bad request body: json: cannot unmarshal {kind} into Go struct field {field} of type {go_type}"
    )


def go_str(value: object, field: str, default: str) -> str:
    """A Go ``string`` field: null keeps the default, a non-string is a 400."""
    if value is None:
        return default
    if isinstance(value, str) and not isinstance(value, GoNumber):
        return value
    raise _unmarshal_error(value, field, "string")


def go_bool(value: object, field: str, default: bool) -> bool:
    """A Go ``bool`` field: null keeps the default, a non-bool is a 400."""
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    raise _unmarshal_error(value, field, "bool")


def go_int(value: object, field: str, go_type: str, default: int) -> int:
    """A Go ``int``/``int64`` field: only an integer literal is accepted."""
    if value is None:
        return default
    if isinstance(value, int) and not isinstance(value, bool):
        if not -(2**63) <= value < 2**63:
            raise _unmarshal_error(value, field, go_type)
        return value
    raise _unmarshal_error(value, field, go_type)


def go_float32(value: object, field: str, default: float) -> float:
    """A Go ``float32`` field (``toxicity``): any JSON number, rounded to float32."""
    if value is None:
        return default
    if isinstance(value, GoNumber):
        try:
            number = float(value)
        except ValueError as exc:
            raise _unmarshal_error(value, field, "float32") from exc
    elif isinstance(value, int) and not isinstance(value, bool):
        number = float(value)
    else:
        raise _unmarshal_error(value, field, "float32")
    if not math.isfinite(number) or abs(number) > 3.4028234663852886e38:
        raise ApiError(400, f"bad request body: json: cannot unmarshal number {value} into Go struct field {field}")
    return float(struct.unpack("f", struct.pack("f", number))[0])


def format_float32(value: float) -> str:
    """The shortest decimal that reads back as the same float32 (Go's encoding of a float32)."""
    if value == int(value) and abs(value) < 1e21:
        return str(int(value))
    for digits in range(1, 10):
        text = f"{value:.{digits}g}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == value:
            return text
    return repr(value)


def decode_attributes(type_name: str, raw: object, current: Mapping[str, int] | None = None) -> dict[str, int]:
    """Decode ``attributes`` into the type's struct: unknown keys ignored, missing keys kept (or 0),
    keys matched case-insensitively as Go does."""
    struct_name, fields = ATTRIBUTES[type_name]
    out = {name: (current or {}).get(name, 0) for name, _ in fields}
    if raw is None:
        return out
    if not isinstance(raw, dict):
        raise ApiError(
            400,
            f"bad request body: json: cannot unmarshal {_json_kind(raw)} into Go struct field "
            f"ToxicWrapper.attributes of type toxics.{struct_name}",
        )
    lowered = {str(k).lower(): v for k, v in raw.items()}
    for key, value in raw.items():  # an exact match wins over a case-insensitive one
        lowered[str(key)] = value
    for name, go_type in fields:
        if name in lowered:
            out[name] = go_int(lowered[name], f"{struct_name}.attributes.{name}", go_type, out[name])
    return out


def refuse_nonsense(type_name: str, attributes: Mapping[str, int]) -> None:
    """400 for the attribute values that crash (or spin) the real 2.12.0 server.

    A deliberate difference: ``bandwidth`` rate < 0 kills the Go process with a panic, ``slicer``
    average_size <= 0 recurses forever and size_variation > average_size can cut out of range.
    Everything else the real server accepts (negative latencies, toxicity 2.5, rate 0) is accepted.
    """
    if type_name == "bandwidth" and attributes["rate"] < 0:
        raise ApiError(400, f"bad attributes: bandwidth rate must be >= 0, got {attributes['rate']}")
    if type_name == "slicer":
        average, variation = attributes["average_size"], attributes["size_variation"]
        if average <= 0:
            raise ApiError(400, f"bad attributes: slicer average_size must be > 0, got {average}")
        if not 0 <= variation <= average:
            raise ApiError(400, f"bad attributes: slicer size_variation must be in [0, {average}], got {variation}")
        if attributes["delay"] < 0:
            raise ApiError(400, f"bad attributes: slicer delay must be >= 0, got {attributes['delay']}")


@dataclass(eq=False, slots=True, kw_only=True)
class Toxic:
    """One toxic on a proxy (server state, so mutable). ``generation`` changes whenever the real
    server would restart the toxic's stub, which re-rolls the toxicity draw on live links."""

    name: str
    type: str
    stream: str  # as sent (e.g. "UPSTREAM")
    toxicity: float
    attributes: dict[str, int]
    generation: int = 0

    @property
    def direction(self) -> str:
        """``upstream`` or ``downstream``."""
        return self.stream.lower()

    def to_json_text(self) -> str:
        """The toxic's JSON exactly as 2.12.0 writes it (field order, float32 toxicity)."""
        attrs = ",".join(f"{json.dumps(k)}:{v}" for k, v in self.attributes.items())
        return (
            f'{{"attributes":{{{attrs}}},"name":{_go_json(self.name)},"type":{_go_json(self.type)},'
            f'"stream":{_go_json(self.stream)},"toxicity":{format_float32(self.toxicity)}}}'
        )


def _go_json(text: str) -> str:
    """A JSON string as Go escapes it (HTML-safe: <, > and & are escaped)."""
    return json.dumps(text, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


go_json_string = _go_json
