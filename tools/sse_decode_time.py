"""Time StreamDecoder on one long SSE ``data:`` line fed in 64 KiB chunks (as httpx delivers them).

Usage: ``python -m tools.sse_decode_time [MB ...]`` (default 2 4 8). Prints seconds per size. The
line is an OpenAI chunk whose content is ``MB`` megabytes of text, so it is also JSON-decoded once.
"""

from __future__ import annotations

import sys
import time

from routeproof.core.sse import StreamDecoder, WireProtocol

CHUNK = 65_536


def decode_seconds(megabytes: int) -> float:
    """Seconds to feed one ``megabytes``-MB data line, then its end, to a fresh decoder."""
    text = "x" * (megabytes * 1_000_000)
    body = ('data: {"choices":[{"index":0,"delta":{"content":"' + text + '"}}]}\n\n').encode()
    decoder = StreamDecoder(WireProtocol.OPENAI, max_line_chars=None)
    started = time.perf_counter()
    for i in range(0, len(body), CHUNK):
        decoder.feed(body[i : i + CHUNK])
    return time.perf_counter() - started


def main(argv: list[str]) -> None:
    for mb in [int(a) for a in argv] or [2, 4, 8]:
        print(f"{mb} MB line: {decode_seconds(mb):.3f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
