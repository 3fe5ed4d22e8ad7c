"""One router process for the kill -9 test (tests/money/kill9.py): ``python -m tests.money.kill9_worker
AGENT_TOML CALLS``. It builds its Router from the file (its ``[ledger]`` the shared store), makes
CALLS plain calls one after the other, printing ``call N`` before each and ``done`` at the end. The
parent kills one such process with SIGKILL while its call hangs, holding a reservation."""

from __future__ import annotations

import asyncio
import sys

from routeproof.config import load_config
from routeproof.core.routing import resolve
from routeproof.core.types import ChatRequest, Message
from routeproof.deadline import deadline_in
from routeproof.factory import router_from_config, tenant_policy
from tests.money.exact_money import SESSION


async def main(agent: str, calls: int) -> None:
    config = load_config(agent, environ={"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"})
    router = router_from_config(config)
    policy = tenant_policy(config, "chat")
    req = ChatRequest(messages=(Message.user("2+2?"),), max_tokens=64, alias="chat")
    try:
        for n in range(calls):
            print(f"call {n}", flush=True)
            await router.call_provider(req, resolve("chat", policy), deadline_in(60.0), policy, session_id=SESSION)
    finally:
        await router.aclose()
    print("done", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
