"""Shutdown past the grace period: streams and calls still running are cut without an ERROR line or a
traceback in any log (five tracebacks were logged before)."""

from __future__ import annotations

import asyncio
import logging

import httpx
import pytest

from routeproof.mock import Scripted
from tests.gateway.conftest import GATEWAY_KEY, StackFactory

pytestmark = pytest.mark.asyncio
BODY = {"model": "chat", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
LOGGERS = ("", "uvicorn", "uvicorn.error", "routeproof", "asyncio")


class _Bad(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.name == "asyncio" and "StreamReaderProtocol" in record.getMessage():
            return  # the mock providers (asyncio streams; uvicorn does not use them) cancelled at their close
        if record.exc_info or record.levelno >= logging.ERROR:
            self.lines.append(f"{record.name} {record.levelname} {record.getMessage()[:200]}")


async def test_shutdown_past_the_grace_period_logs_no_traceback(make_stack: StackFactory) -> None:
    """Three streams and two plain calls outlive the 2 s grace period: all are cut, no ERROR or traceback."""
    bad = _Bad()
    try:
        async with make_stack() as stack, httpx.AsyncClient(base_url=stack.url, timeout=20) as client:
            for name in LOGGERS:  # after uvicorn's dictConfig, which replaces its loggers' handlers
                logging.getLogger(name).addHandler(bad)
            stack.anthropic.set_default(Scripted(delay_between_chunks_s=1.0, delay_before_headers_s=0.2))
            headers = {"x-api-key": GATEWAY_KEY}

            async def stream() -> str:
                async with client.stream("POST", "/v1/messages", json={**BODY, "stream": True}, headers=headers) as r:
                    return "".join([chunk async for chunk in r.aiter_text()])

            async def plain() -> int:
                try:
                    return (await client.post("/v1/chat/completions", json=BODY, headers=headers)).status_code
                except httpx.HTTPError:
                    return 0  # cut mid-call: the connection closed without an answer

            stack.openai.set_default(Scripted(hang=True))
            stack.anthropic.script(
                *[Scripted(delay_between_chunks_s=1.0)] * 3, Scripted(hang=True), Scripted(hang=True)
            )
            tasks = [asyncio.create_task(stream()) for _ in range(3)] + [asyncio.create_task(plain()) for _ in range(2)]
            await asyncio.sleep(0.8)
            stack.stop()
            results = await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        for name in LOGGERS:
            logging.getLogger(name).removeHandler(bad)
    assert all(not isinstance(r, BaseException) for r in results), results
    assert bad.lines == [], "\n".join(bad.lines)
