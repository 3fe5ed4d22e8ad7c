"""Time StreamDecoder on one long SSE ``data:`` line fed in 64 KiB chunks (as httpx delivers them).

Usage: ``python -m benchmarks.sse_decode_time [--sse-file PATH] [MB ...]`` (default 2 4 8); prints
seconds per size. The line is an OpenAI chunk whose content is ``MB`` megabytes of text, so it is
also JSON-decoded once. ``--sse-file`` times another version of ``core/formats/sse.py`` instead, e.g. the
one before the linear decoder::

    git show b10dff4:src/routeproof/core/formats/sse.py > /tmp/old_sse.py
    python -m benchmarks.sse_decode_time --sse-file /tmp/old_sse.py
"""

from __future__ import annotations

import importlib.util
import sys
import time
from types import ModuleType
from typing import Any

from routeproof.core.formats import sse

CHUNK = 65_536


def _module(path: str | None) -> ModuleType:
    if path is None:
        return sse
    spec = importlib.util.spec_from_file_location("sse_under_test", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["sse_under_test"] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def _decoder(module: ModuleType) -> Any:
    protocol = module.WireProtocol.OPENAI
    try:
        return module.StreamDecoder(protocol, max_line_chars=None)
    except TypeError:  # a version without a line cap
        return module.StreamDecoder(protocol)


def decode_seconds(megabytes: int, module: ModuleType = sse) -> float:
    """Seconds to feed one ``megabytes``-MB data line to a fresh decoder of ``module``."""
    text = "x" * (megabytes * 1_000_000)
    body = ('data: {"choices":[{"index":0,"delta":{"content":"' + text + '"}}]}\n\n').encode()
    decoder = _decoder(module)
    started = time.perf_counter()
    for i in range(0, len(body), CHUNK):
        decoder.feed(body[i : i + CHUNK])
    return time.perf_counter() - started


def main(argv: list[str]) -> None:
    path = None
    if argv[:1] == ["--sse-file"]:
        path, argv = argv[1], argv[2:]
    module = _module(path)
    for mb in [int(a) for a in argv] or [2, 4, 8]:
        print(f"{mb} MB line: {decode_seconds(mb, module):.3f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
