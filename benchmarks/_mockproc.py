"""The benchmark's mock provider in its own process: ``python -m benchmarks._mockproc``.

Serves the OpenAI shape on an ephemeral loopback port, prints its base URL on one line, and serves
until stdin closes (the parent exits or closes the pipe), so it never outlives the benchmark.
"""

from __future__ import annotations

import asyncio
import sys

from routeproof.mock import MockProviderServer, Shape


async def _serve() -> None:
    async with MockProviderServer(Shape.OPENAI, require_auth=False) as server:
        print(server.base_url, flush=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)  # EOF: the parent is done


def main() -> int:
    """Serve until stdin closes."""
    asyncio.run(_serve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
