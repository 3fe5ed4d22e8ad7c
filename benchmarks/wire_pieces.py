"""The gateway's per-request pieces of wire work, timed alone (timeit, best of 5) for a small body and
a 100 KB, 211-turn conversation: reading the body, parsing it into the request, the provider's
outgoing body and its encoding, reading a provider's answer, the attempts header, one plain turn.

    python -O -m benchmarks.wire_pieces
    PYTHONPATH=/tmp/before/src python -O -m benchmarks.wire_pieces     # another tree's pieces

``git archive <rev> src | tar -x -C /tmp/before`` gives the other tree. Prints microseconds per call.
A measurement tool, not a test: read the before/after pair of one sitting.
"""

from __future__ import annotations

import json
import sys
import timeit
from collections.abc import Callable
from typing import Any

from routeproof.core.capabilities import FittedRequest, ModelCapabilities
from routeproof.core.formats.translate import parse_openai_request
from routeproof.core.messages import Message, Role, TextBlock, WireFormat
from routeproof.core.types import AttemptRecord, AttemptStatus, ProviderKind
from routeproof.gateway.app import _attempts_header, _parse
from routeproof.gateway.edge import read_json
from routeproof.gateway.failures import Api
from routeproof.providers._http import _loads, encode_json
from routeproof.providers._passthrough import outgoing_body

_TURN = "Some reasonably long sentence about the weather and code. " * 8
_SMALL = {"model": "chat", "max_tokens": 16, "messages": [{"role": "user", "content": "What is 2 + 2?"}]}
_LARGE = {
    "model": "chat",
    "max_tokens": 16,
    "messages": [{"role": "user" if i % 2 == 0 else "assistant", "content": _TURN} for i in range(211)],
}
_ANSWER = json.dumps({
    "id": "chatcmpl-abc123", "object": "chat.completion", "created": 1700000000, "model": "gpt-4o-2024-08-06",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "2 + 2 = 4.", "refusal": None},
                 "logprobs": None, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 14, "completion_tokens": 8, "total_tokens": 22},
}).encode()  # fmt: skip
_ATTEMPTS = (
    AttemptRecord(
        provider=ProviderKind.OPENAI, model="gpt-4o", attempt_num=1, fallback_position=0,
        status=AttemptStatus.SUCCEEDED, elapsed_ms=340, http_status=200,
    ),
)  # fmt: skip


def _us(work: Callable[[], object], number: int) -> float:
    return min(timeit.repeat(work, number=number, repeat=5)) / number * 1e6


def _pieces(body: dict[str, Any]) -> dict[str, Callable[[], object]]:
    raw = json.dumps(body).encode()
    req, *_ = _parse(Api.OPENAI, raw, (), lambda alias: 1024)
    fitted = FittedRequest(request=req, extras=_extras(raw), dropped=())
    caps = ModelCapabilities()

    def outgoing() -> object:
        return outgoing_body(req, fitted, caps, target=WireFormat.OPENAI_CHAT, model="gpt-4o", stream=False)

    sent = outgoing().body  # type: ignore[attr-defined]
    return {
        "read_json": lambda: read_json(raw),
        "_parse": lambda: _parse(Api.OPENAI, raw, (), lambda alias: 1024),
        "outgoing_body": outgoing,
        "encode_json": lambda: encode_json(sent),
    }


def _extras(raw: bytes) -> Any:
    return parse_openai_request(json.loads(raw))[1]


def main() -> int:
    """Print each piece's time for both bodies, then the per-answer and per-turn pieces."""
    for label, body, number in (("small body", _SMALL, 20_000), ("100 KB, 211 turns", _LARGE, 200)):
        for name, work in _pieces(body).items():
            print(f"{label:18s} {name:14s} {_us(work, number):9.2f} us")
    print(f"{'answer, 300 B':18s} {'_loads':14s} {_us(lambda: _loads(_ANSWER), 50_000):9.2f} us")
    print(f"{'one attempt':18s} {'header':14s} {_us(lambda: _attempts_header(_ATTEMPTS), 50_000):9.2f} us")
    turn = lambda: Message(role=Role.USER, content=(TextBlock(text=_TURN),))  # noqa: E731 - the checked make
    print(f"{'one turn':18s} {'Message.user':14s} {_us(lambda: Message.user(_TURN), 100_000):9.2f} us")
    print(f"{'one turn':18s} {'checked make':14s} {_us(turn, 100_000):9.2f} us")
    print(f"(python{'' if not sys.flags.optimize else ' -O'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
