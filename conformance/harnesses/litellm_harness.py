"""LiteLLM's ``Router`` behind the conformance protocol (conformance/PROTOCOL.md): JSON lines on stdio.

    pip install -e '.[conformance-litellm]'
    routeproof conformance run --harness "python conformance/harnesses/litellm_harness.py"

How a case maps onto LiteLLM (the configuration a LiteLLM user would write for the same chain):
each provider of the chain is one deployment in its own model group (``p0``, ``p1``, ...), the
call goes to ``p0`` with ``fallbacks=[{"p0": ["p1", ...]}]``, ``num_retries=2`` (3 attempts per
provider, as the contract) and everything else at LiteLLM's defaults; the caller's deadline is
LiteLLM's ``timeout``. Tiers, budgets and W3C trace context have no Router-level equivalent, so
those capabilities are not declared (their cases are n/a).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Mapping
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network fetch of the price map at import
os.environ.setdefault("LITELLM_LOG", "ERROR")

import litellm  # after the environment above
from litellm import Router

CAPABILITIES = ("stream", "tools", "deadline", "cancel", "health", "anthropic", "bedrock")
_FAR_S = 600.0


def _deployment(p: Mapping[str, Any]) -> dict[str, Any]:
    creds = p.get("credentials", {})
    if p["protocol"] == "openai":
        return {"model": f"openai/{p['model']}", "api_base": f"{p['base_url']}/v1", "api_key": creds.get("api_key")}
    if p["protocol"] == "anthropic":
        return {"model": f"anthropic/{p['model']}", "api_base": p["base_url"], "api_key": creds.get("api_key")}
    return {
        "model": f"bedrock/converse/{p['model']}",
        "aws_bedrock_runtime_endpoint": p["base_url"],
        "aws_access_key_id": creds.get("aws_access_key_id"),
        "aws_secret_access_key": creds.get("aws_secret_access_key"),
        "aws_region_name": creds.get("region", "us-east-1"),
    }


def build_router(message: Mapping[str, Any]) -> Router:
    """THE adapter: a LiteLLM Router for the case's chain."""
    names = [f"p{n}" for n in range(len(message["providers"]))]
    model_list = [
        {"model_name": name, "litellm_params": _deployment(p)}
        for name, p in zip(names, message["providers"], strict=True)
    ]
    fallbacks = [{names[0]: names[1:]}] if len(names) > 1 else []
    return Router(model_list=model_list, fallbacks=fallbacks, num_retries=2)


def outcome_class(exc: BaseException) -> str:
    """The protocol's outcome class of a LiteLLM exception: by the final HTTP status when there is one."""
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and 400 <= status < 500 and status not in (408, 429):
        return {400: "terminal", 404: "terminal", 401: "auth", 403: "auth"}.get(status, "all_failed")
    table: tuple[tuple[type[BaseException], str], ...] = (
        (litellm.AuthenticationError, "auth"),
        (litellm.PermissionDeniedError, "auth"),
        (litellm.NotFoundError, "terminal"),
        (litellm.BadRequestError, "terminal"),
        (litellm.Timeout, "deadline"),
    )
    return next((cls for t, cls in table if isinstance(exc, t)), "all_failed")


class Harness:
    """One JSON-lines session."""

    def __init__(self) -> None:
        self.router: Router | None = None

    async def handle(self, msg: Mapping[str, Any]) -> dict[str, Any] | None:
        op = msg.get("op")
        if op == "start":
            return {
                "op": "started",
                "name": "litellm-router",
                "version": _version(),
                "capabilities": list(CAPABILITIES),
            }
        if op == "configure":
            self.router = build_router(msg)
            return {"op": "configured"}
        if op == "call":
            return await self.call(msg)
        if op == "stop":
            return None
        return {"op": "error", "error": f"unknown op {op!r}"}

    async def call(self, msg: Mapping[str, Any]) -> dict[str, Any]:
        started = time.monotonic()
        task = asyncio.create_task(self._run(msg))
        cancel_ms = msg.get("cancel_after_ms")
        if cancel_ms is not None:
            done, _ = await asyncio.wait({task}, timeout=cancel_ms / 1000)
            if not done:
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    return {"op": "outcome", "class": "cancelled", "elapsed_ms": (time.monotonic() - started) * 1000}
        out = await task
        out["elapsed_ms"] = (time.monotonic() - started) * 1000
        return out

    async def _run(self, msg: Mapping[str, Any]) -> dict[str, Any]:
        assert self.router is not None
        request = msg["request"]
        kwargs: dict[str, Any] = {"max_tokens": request["max_tokens"]}
        if request.get("tools"):
            kwargs["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t["name"],
                        "description": t.get("description", ""),
                        "parameters": t["input_schema"],
                    },
                }
                for t in request["tools"]
            ]
        deadline_ms = msg.get("deadline_ms")
        kwargs["timeout"] = deadline_ms / 1000 if deadline_ms is not None else _FAR_S
        text: list[str] = []
        received = False  # a streamed chunk reached the caller: a later failure is a stream error
        try:
            if not msg.get("stream"):
                resp = await self.router.acompletion(model="p0", messages=request["messages"], **kwargs)
                message = resp.choices[0].message
                tools = [
                    {"name": t.function.name, "arguments": t.function.arguments} for t in (message.tool_calls or [])
                ]
                return {"op": "outcome", "class": "success", "text": message.content or "", "tool_calls": tools}
            stream = await self.router.acompletion(model="p0", messages=request["messages"], stream=True, **kwargs)
            tool_args: dict[int, dict[str, str]] = {}
            finished = False
            async for chunk in stream:
                if not chunk.choices:
                    continue
                received = True
                choice = chunk.choices[0]
                delta = choice.delta
                if delta is not None and delta.content:
                    text.append(delta.content)
                for tc in (delta.tool_calls or []) if delta is not None else []:
                    entry = tool_args.setdefault(tc.index or 0, {"name": "", "arguments": ""})
                    if tc.function is not None:
                        entry["name"] += tc.function.name or ""
                        entry["arguments"] += tc.function.arguments or ""
                if choice.finish_reason:
                    finished = True
            cls = "success" if finished else "stream_error"
            tools = list(tool_args.values()) if finished else []  # only a finished message's tool calls are complete
            return {"op": "outcome", "class": cls, "text": "".join(text), "tool_calls": tools}
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # every LiteLLM failure becomes an outcome class
            cls = "stream_error" if received else outcome_class(exc)
            return {
                "op": "outcome",
                "class": cls,
                "error": f"{type(exc).__name__}: {str(exc)[:300]}",
                "text": "".join(text),
            }


def _version() -> str:
    from importlib.metadata import version

    return f"litellm {version('litellm')}"


async def warm_up() -> None:
    """One call through a Router against a throwaway loopback mock, so LiteLLM's lazy imports and
    first-call set-up (seconds) are not charged to the first case."""
    from routeproof.mock import MockProviderServer, Shape

    async with MockProviderServer(Shape.OPENAI) as mock:
        router = build_router(
            {
                "providers": [
                    {
                        "protocol": "openai",
                        "model": "warm-up",
                        "base_url": mock.base_url,
                        "credentials": {"api_key": "k"},
                    }
                ]
            }
        )
        await router.acompletion(model="p0", messages=[{"role": "user", "content": "hi"}], max_tokens=8)
        stream = await router.acompletion(
            model="p0", messages=[{"role": "user", "content": "hi"}], max_tokens=8, stream=True
        )
        async for _ in stream:
            pass


async def serve() -> None:
    """Read JSON lines from stdin, answer each on stdout, until ``stop`` or EOF."""
    await warm_up()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=16 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    harness = Harness()
    while line := await reader.readline():
        if not line.strip():
            continue
        reply = await harness.handle(json.loads(line))
        if reply is None:
            break
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    asyncio.run(serve())
