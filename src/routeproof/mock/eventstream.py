"""A minimal encoder for the AWS binary event-stream format (``application/vnd.amazon.eventstream``).

botocore ships only the decoder (``botocore.eventstream.EventStreamBuffer``); this is the encoder the
Bedrock ConverseStream mock needs. Message layout (all integers big-endian)::

    total_length:u32  headers_length:u32  prelude_crc:u32  headers  payload  message_crc:u32

where both CRCs are CRC-32 (zlib) over everything before them. Only string headers (type 7) are written.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Mapping

__all__ = ["encode_event", "encode_exception", "encode_message"]

_STRING_HEADER_TYPE = 7
_PRELUDE = struct.Struct(">II")
_CRC = struct.Struct(">I")


def _encode_headers(headers: Mapping[str, str]) -> bytes:
    out = bytearray()
    for name, value in headers.items():
        raw_name = name.encode("utf-8")
        raw_value = value.encode("utf-8")
        if len(raw_name) > 255 or len(raw_value) > 65535:
            raise ValueError(f"event-stream header too long: {name!r}")
        out += bytes([len(raw_name)]) + raw_name + bytes([_STRING_HEADER_TYPE]) + struct.pack(">H", len(raw_value))
        out += raw_value
    return bytes(out)


def encode_message(headers: Mapping[str, str], payload: bytes, *, corrupt_crc: bool = False) -> bytes:
    """One event-stream message. ``corrupt_crc`` flips the message CRC (a malformed frame for tests)."""
    raw_headers = _encode_headers(headers)
    total = _PRELUDE.size + _CRC.size + len(raw_headers) + len(payload) + _CRC.size
    prelude = _PRELUDE.pack(total, len(raw_headers))
    prelude += _CRC.pack(zlib.crc32(prelude))
    body = prelude + raw_headers + payload
    crc = zlib.crc32(body) ^ (0xFFFFFFFF if corrupt_crc else 0)
    return body + _CRC.pack(crc)


def encode_event(event_type: str, data: Mapping[str, object], *, corrupt_crc: bool = False) -> bytes:
    """A Converse-stream event such as ``contentBlockDelta`` with a JSON payload."""
    headers = {":event-type": event_type, ":content-type": "application/json", ":message-type": "event"}
    return encode_message(headers, json.dumps(data).encode("utf-8"), corrupt_crc=corrupt_crc)


def encode_exception(exception_type: str, message: str) -> bytes:
    """An in-band exception message such as ``throttlingException``."""
    headers = {
        ":exception-type": exception_type,
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    return encode_message(headers, json.dumps({"message": message}).encode("utf-8"))
