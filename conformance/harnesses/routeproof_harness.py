"""routeproof's conformance harness: JSON lines on stdin/stdout (conformance/PROTOCOL.md).

    python conformance/harnesses/routeproof_harness.py                 # routeproof as it is
    python conformance/harnesses/routeproof_harness.py --break NAME    # with one rule broken on purpose

``--break NAME`` plants one broken rule (see ``BREAKS``: the name, the case rules that must kill it,
what it breaks) so the suite can prove it catches it; ``routeproof conformance breaks`` runs them all.
A break re-runs the harness under ``python -O`` so icontract's run-time checks are off and the break
is judged only from the outside, as a user would meet it.

The Router is built from the case description in ONE place, ``build_router``: providers are named
instances (the case's provider names), so a chain may hold any number of OpenAI-compatible
providers; their kinds take turns (public: openai, openrouter; private: vllm, ollama), so a chain
that was expressible when routeproof kept one provider per kind is built exactly as it was.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from decimal import Decimal
from functools import partial
from typing import Any

import httpx
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.sdk.trace import TracerProvider

import routeproof
from routeproof import (
    AllProvidersFailed,
    AuthError,
    BudgetExhausted,
    DeadlineExceeded,
    InvalidResponse,
    NoEligibleProvider,
    RouterError,
    TerminalProviderError,
)
from routeproof.clock import ms_of_s
from routeproof.core import kernel
from routeproof.core.balance import Member, Strategy
from routeproof.core.capabilities import CapabilityTable, load_capabilities
from routeproof.core.classify import Classification, Verdict
from routeproof.core.formats.responses_api import responses_to_chat
from routeproof.core.formats.translate import parse_anthropic_request, parse_openai_request
from routeproof.core.health import HealthConfig
from routeproof.core.ledger import BudgetLimits
from routeproof.core.messages import WireFormat, WireOrigin
from routeproof.core.pricing import Price, PricingTable
from routeproof.core.rate_limit import DeploymentLimits
from routeproof.core.retry_budget import RetryBudgetConfig
from routeproof.core.routing import resolve
from routeproof.core.types import (
    BlockStop,
    ChatRequest,
    FallbackProvider,
    Message,
    MessageStop,
    PrivacyTier,
    ProviderId,
    ProviderKind,
    ProviderName,
    RetryReason,
    StreamError,
    TenantPolicy,
    TextDelta,
    ToolDefinition,
    ToolUseDelta,
    ToolUseStart,
)
from routeproof.errors import ConfigError
from routeproof.providers.anthropic import AnthropicProvider
from routeproof.providers.bedrock import BedrockProvider
from routeproof.providers.capabilities import shipped_capabilities
from routeproof.providers.openai import OpenAIProvider
from routeproof.providers.protocol import Provider
from routeproof.router import Router
from routeproof.router_options import BudgetOptions, HealthOptions, LimitOptions
from routeproof.traffic_store.port import TrafficConfig

PROTOCOL = "provider-routing-v1/conformance-2"
ALIAS = "conformance"
CAPABILITIES = (
    "stream",
    "tools",
    "deadline",
    "cancel",
    "traceparent",
    "tiers",
    "budget",
    "health",
    "anthropic",
    "bedrock",
    # conformance-2 (case format 3): the caller's own body in the OpenAI or Anthropic shape, declared
    # model capabilities, dropped fields reported, weighted groups, declared rpm, a retry budget.
    "request",
    "anthropic_request",
    "responses",
    "model_capabilities",
    "dropped",
    "weights",
    "rate_limits",
    "retry_budget",
)

# name -> (the case rules whose cases must kill it, what it breaks)
BREAKS: dict[str, tuple[tuple[str, ...], str]] = {
    "retry_400": (("terminal_statuses",), "a 400 is retried like a 5xx"),
    "failover_401": (("terminal_statuses",), "a 401 fails over to the next provider"),
    "ignore_retry_after": (("retry_after",), "Retry-After is ignored; the band delay is slept instead"),
    "sleep_past_budget": (("retry_after",), "a sleep that does not fit the budget/deadline is slept anyway"),
    "per_attempt_deadline": (("deadline",), "the caller's deadline bounds each attempt, not the call"),
    "no_total_budget": (("failover_budget",), "no 30 s budget for the whole call"),
    "trailing_sleep": (("retryable_failures",), "a failed call sleeps 800 ms before returning"),
    "no_jitter": (("retry_schedule",), "the retry sleeps are exactly 200/800 ms, never jittered"),
    "splice_stream": (("sse_completeness",), "a stream cut after its first token is completed from the next provider"),
    "truncated_as_complete": (("sse_completeness",), "a stream that ends without its end event counts as complete"),
    "forward_span_id": (("traceparent",), "the caller's span id is forwarded (no child span)"),
    "no_attempt_cap": (("attempts_cap",), "no 16-attempt cap"),
    "accept_invalid_200": (("response_normalization",), "a 200 whose body is not the documented shape is accepted"),
    "retry_after_cancel": (("cancellation",), "a cancelled call is retried in the background"),
    # case format 3 (the harness's side of the wave's features, so each family shows a kill)
    "ignore_capabilities": (("capability_routing",), "the declared model capabilities are not given to the router"),
    "drop_silently": (("reported_drops",), "fields left out of a translation are not reported"),
    "no_groups": (("load_balancing",), "priorities, weights and the strategy are ignored (the chain's order)"),
    "ignore_rpm": (("rate_limits",), "the declared rpm is not given to the router"),
    "no_retry_budget": (("retry_budget",), "the retry budget is not given to the router"),
    # the families that had no break: tiers, money budgets, cross-request health
    "ignore_tier": (("privacy_enforcement",), "every call is routed as the Standard tier"),
    "no_budget": (("cost_budget",), "the session budget is not given to the router"),
    "no_health": (("cross_request_health",), "failures never cool a provider (no cross-request health)"),
    "ignore_body": (("request_surface",), "the caller's own body is ignored: only its text is sent"),
}
_HARNESS_BREAKS: set[str] = set()
"""Breaks planted in this harness's adapter (not in routeproof): what it leaves out of the router."""
# name -> what the variant changes; a variant is not a break: it is another router that conforms
VARIANTS: dict[str, str] = {
    "seed-strict": (
        "the seeds' contract and none of routeproof's extensions: Retry-After honoured on 429 only and only "
        "as integer seconds (no 503, no HTTP-date); Anthropic's 529 is not retried (it fails over); a 4xx the "
        "seeds do not name (409, 413, 422, ...) ends the call instead of failing over"
    ),
}
_FAR_S = 3600.0  # "no deadline": far past the 30 s budget


@dataclass(frozen=True, slots=True, kw_only=True)
class Setup:
    """A case's router and the chain its calls route through."""

    router: Router
    chain: tuple[tuple[ProviderId, str], ...]  # (provider instance, model) in priority order
    client: httpx.AsyncClient
    attempt_timeout_s: float


def _usd_per_mtok_to_micro(value: object) -> int:
    return int(Decimal(str(value)) * 1_000_000)


def build_router(message: Mapping[str, Any], *, per_attempt_deadline_s: float | None = None) -> Setup | str:
    """THE adapter: the Router for a ``configure`` message, or the reason it cannot be expressed."""
    client = httpx.AsyncClient(timeout=None)
    providers: list[Provider] = []
    chain: list[tuple[ProviderId, str]] = []
    openai_kinds = {
        "public": (ProviderKind.OPENAI, ProviderKind.OPENROUTER),
        "private": (ProviderKind.VLLM, ProviderKind.OLLAMA),
    }
    openai_seen = {"public": 0, "private": 0}
    prices: dict[tuple[ProviderKind, str], Price] = {}
    capabilities = _capability_table(message)
    for p in message["providers"]:
        protocol, hosting, url, model = p["protocol"], p.get("hosting", "public"), p["base_url"], p["model"]
        creds = p.get("credentials", {})
        provider: Provider
        if protocol == "openai":
            kinds = openai_kinds[hosting]
            kind = kinds[openai_seen[hosting] % len(kinds)]
            openai_seen[hosting] += 1
            provider = OpenAIProvider(
                kind=kind,
                api_key=creds.get("api_key", "k"),
                client=client,
                base_url=url,
                name=p["name"],
                capabilities=capabilities(kind, p),
            )
        elif hosting != "public":
            return f"a {protocol} provider is always public in routeproof"
        elif protocol == "anthropic":
            kind = ProviderKind.ANTHROPIC
            provider = AnthropicProvider(
                api_key=creds.get("api_key", "k"),
                client=client,
                base_url=url,
                name=p["name"],
                capabilities=capabilities(kind, p),
            )
        else:
            kind = ProviderKind.BEDROCK
            provider = BedrockProvider(
                region=creds.get("region", "us-east-1"),
                access_key_id=creds.get("aws_access_key_id", "AKID"),
                secret_access_key=creds.get("aws_secret_access_key", "secret"),
                client=client,
                base_url=url,
                name=p["name"],
                capabilities=capabilities(kind, p),
            )
        providers.append(provider)
        chain.append((ProviderName(p["name"]), model))  # addressed by name; the Router binds it
        if "price" in p:
            price = Price(
                input_micro_usd_per_mtok=_usd_per_mtok_to_micro(p["price"]["input_usd_per_mtok"]),
                output_micro_usd_per_mtok=_usd_per_mtok_to_micro(p["price"]["output_usd_per_mtok"]),
                cache_read_micro_usd_per_mtok=0,
                cache_write_micro_usd_per_mtok=0,
            )
            if prices.setdefault((kind, model), price) != price:
                return f"routeproof prices per (kind, model): two prices for {kind.value} {model!r}"
    # deployment groups: the chain in priority order (ties keep the case's order), as agent.toml's is
    grouped = "no_groups" not in _HARNESS_BREAKS
    rank = {p["name"]: (int(p.get("priority", i + 1)) if grouped else i, i) for i, p in enumerate(message["providers"])}
    chain.sort(key=lambda entry: rank[str(entry[0])])
    budget_usd = message.get("budget_usd")
    budget = None
    if budget_usd is not None:
        if any("price" not in p for p in message["providers"]):
            return "a budget needs a price for every provider"
        budget = BudgetLimits(session_limit_pico_usd=int(Decimal(str(budget_usd)) * 10**12))
        if "no_budget" in _HARNESS_BREAKS:
            budget = None
    timeout_s = min(30.0, per_attempt_deadline_s) if per_attempt_deadline_s else 30.0
    try:
        router = Router(
            providers,
            client=client,
            limits=LimitOptions(attempt_timeout_ms=max(1, ms_of_s(timeout_s))),
            budgets=BudgetOptions(pricing=PricingTable(prices=prices) if prices else None, limits=budget),
            traffic=traffic_for(message),
            health=HealthOptions(config=HealthConfig(failure_threshold=10**9))
            if "no_health" in _HARNESS_BREAKS
            else None,
        )
    except (ConfigError, ValueError) as exc:  # e.g. a provider named after another kind
        return f"routeproof refuses this configuration: {exc}"
    return Setup(router=router, chain=tuple(chain), client=client, attempt_timeout_s=timeout_s)


def _capability_table(message: Mapping[str, Any]) -> Callable[[ProviderKind, Mapping[str, Any]], CapabilityTable]:
    if "ignore_capabilities" in _HARNESS_BREAKS:
        return lambda kind, p: shipped_capabilities()

    """The capability table a provider of the case gets: the shipped rows, plus one row per provider
    whose ``capabilities`` the case declares (matched on its model id, for its kind)."""

    def table(kind: ProviderKind, p: Mapping[str, Any]) -> CapabilityTable:
        declared = p.get("capabilities")
        if not declared:
            return shipped_capabilities()
        lines = ["[[models]]", f'provider = "{kind.value}"', f"match = {json.dumps('^' + re.escape(p['model']) + '$')}"]
        lines += [f"{name} = {'true' if bool(value) else 'false'}" for name, value in sorted(declared.items())]
        return shipped_capabilities().extended(load_capabilities("\n".join(lines) + "\n"))

    return table


def traffic_for(message: Mapping[str, Any]) -> TrafficConfig | None:
    """The case's deployment groups, declared rpm and retry budget (None: routeproof's defaults)."""
    providers = list(message["providers"])
    for brk in _HARNESS_BREAKS:
        providers = [{k: v for k, v in p.items() if k not in _LEFT_OUT.get(brk, ())} for p in providers]
    traffic = dict(message.get("traffic") or {})
    if "no_groups" in _HARNESS_BREAKS:
        traffic.pop("strategy", None)
    if "no_retry_budget" in _HARNESS_BREAKS:
        traffic.pop("retry_budget", None)
    if not traffic and not any(k in p for p in providers for k in ("priority", "weight", "rpm")):
        return None
    budget = traffic.get("retry_budget")
    return TrafficConfig(
        strategy=Strategy(traffic.get("strategy", "ordered")),
        members={
            p["name"]: Member(
                priority=int(p.get("priority", i + 1)),
                weight_micro=int(Decimal(str(p.get("weight", 1))) * 1_000_000),
            )
            for i, p in enumerate(providers)
        },
        limits={p["name"]: DeploymentLimits(rpm=int(p["rpm"])) for p in providers if "rpm" in p},
        retry_budget=None
        if budget is None
        else RetryBudgetConfig(
            max_tokens=int(budget["max_tokens"]),
            token_ratio_milli=int(Decimal(str(budget["token_ratio"])) * 1000),
        ),
    )


_LEFT_OUT = {"no_groups": ("priority", "weight"), "ignore_rpm": ("rpm",)}


def policy_for(chain: tuple[tuple[ProviderId, str], ...], tier: str) -> TenantPolicy:
    """The tenant policy routing the alias through ``chain`` at privacy ``tier``."""
    (first_kind, first_model), *rest = chain
    if "ignore_tier" in _HARNESS_BREAKS:
        tier = "standard"
    return TenantPolicy(
        privacy_tier={"sovereign": PrivacyTier.SOVEREIGN, "private": PrivacyTier.PRIVATE}.get(
            tier, PrivacyTier.STANDARD
        ),
        primary={ALIAS: (first_kind, first_model)},
        fallback_chain=tuple(FallbackProvider(kind=k, model_alias_map={ALIAS: m}) for k, m in rest),
    )


def outcome_class(exc: RouterError) -> str:
    """The protocol's outcome class of a routeproof error."""
    table: tuple[tuple[type[RouterError], str], ...] = (
        (TerminalProviderError, "terminal"),
        (AuthError, "auth"),
        (DeadlineExceeded, "deadline"),
        (BudgetExhausted, "budget"),
        (NoEligibleProvider, "no_eligible"),
        (InvalidResponse, "invalid_response"),
        (AllProvidersFailed, "all_failed"),
    )
    return next((cls for t, cls in table if isinstance(exc, t)), "other")


# --- planted breaks ------------------------------------------------------------------------------


def plant(name: str) -> None:
    """Break one rule inside routeproof (module-level patches; the harness process is throwaway)."""
    if name in {
        "ignore_capabilities",
        "drop_silently",
        "no_groups",
        "ignore_rpm",
        "no_retry_budget",
        "ignore_tier",
        "no_budget",
        "no_health",
        "ignore_body",
    }:
        _HARNESS_BREAKS.add(name)
    if name in {"retry_400", "failover_401"}:
        original: Callable[..., Classification] = vars(kernel)["classify_failure"]
        status = 400 if name == "retry_400" else 401
        broken = (
            Classification(verdict=Verdict.RETRY, reason=RetryReason.FIVE_XX)
            if name == "retry_400"
            else Classification(verdict=Verdict.FAIL_OVER)
        )

        def classify(failure: Any, *, context_window_failover: bool = False) -> Classification:
            if failure.http_status == status:
                return broken
            return original(failure, context_window_failover=context_window_failover)

        vars(kernel)["classify_failure"] = classify
    elif name == "ignore_retry_after":
        vars(kernel)["_honours_retry_after"] = lambda failure: False
    elif name == "sleep_past_budget":
        kernel.CallPlan.effective_end_ms = property(lambda self: 10**15)  # type: ignore[assignment,method-assign]
    elif name == "no_total_budget":
        kernel.CallPlan.budget_end_ms = property(lambda self: 10**15)  # type: ignore[assignment,method-assign]
    elif name == "no_jitter":
        original_delay = vars(kernel)["retry_delay_ms"]
        vars(kernel)["retry_delay_ms"] = lambda attempt_num, u, **kw: original_delay(attempt_num, 0.5, **kw)
    elif name == "no_attempt_cap":
        defaults = kernel.CallPlan.__init__.__kwdefaults__
        assert defaults is not None
        defaults["attempts_cap"] = 10**6
    elif name == "forward_span_id":
        # routeproof mints a child span id even without an OpenTelemetry SDK (observe.attempt_span),
        # so leaving the SDK out no longer plants this: make each attempt run in the caller's span.
        import contextlib

        import routeproof.call as call_mod
        import routeproof.streaming as streaming_mod

        @contextlib.contextmanager
        def caller_span(*args: Any, parent: Any = None) -> Any:
            yield trace.get_current_span(parent)

        vars(call_mod)["attempt_span"] = caller_span
        vars(streaming_mod)["attempt_span"] = caller_span
        import routeproof.driver as driver_mod  # the one attempt performer opens the span since issue 12

        vars(driver_mod)["attempt_span"] = caller_span
    elif name == "accept_invalid_200":
        import routeproof.providers.openai as openai_mod

        original_norm = vars(openai_mod)["normalize_or_fail"]

        def lenient(normalize: Callable[[dict[str, Any]], Any], reply: Any, **kw: Any) -> Any:
            try:
                return original_norm(normalize, reply, **kw)
            except routeproof.errors.ProviderCallFailed:
                stub = {
                    "id": "x",
                    "model": "x",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": ""}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
                }
                return normalize(stub)

        vars(openai_mod)["normalize_or_fail"] = lenient


def apply_variant(name: str) -> None:
    """Make routeproof another conforming router (module-level patches; the process is throwaway)."""
    assert name == "seed-strict", name
    import routeproof.providers._http as http_mod

    original_hint: Callable[[Any, object, int], int | None] = vars(http_mod)["wait_hint_ms"]

    def integer_seconds_only(headers: Any, body: object, now_epoch_ms: int) -> int | None:
        value = headers.get("retry-after")  # Retry-After as integer seconds, nothing else (seed 000 §1.10)
        kept = {"retry-after": value} if value is not None and value.strip().isdigit() else {}
        return original_hint(kept, None, now_epoch_ms)

    vars(http_mod)["wait_hint_ms"] = integer_seconds_only
    vars(kernel)["_honours_retry_after"] = lambda failure: (
        failure.http_status == 429 and failure.retry_after_ms is not None
    )
    original: Callable[..., Classification] = vars(kernel)["classify_failure"]
    named_4xx = {400, 401, 403, 404, 408, 429}

    def classify(failure: Any, *, context_window_failover: bool = False) -> Classification:
        status = failure.http_status
        if status == 529:
            return Classification(verdict=Verdict.FAIL_OVER)
        if status is not None and 400 <= status < 500 and status not in named_4xx:
            return Classification(verdict=Verdict.TERMINAL)
        return original(failure, context_window_failover=context_window_failover)

    vars(kernel)["classify_failure"] = classify


# --- the protocol ------------------------------------------------------------------------------


class Harness:
    """Serves one JSON-lines session."""

    def __init__(self, brk: str | None, variant: str | None = None) -> None:
        self.brk = brk
        self.variant = variant
        self.setup: Setup | None = None
        self.config: Mapping[str, Any] = {}
        self.background: set[asyncio.Task[Any]] = set()

    async def handle(self, msg: Mapping[str, Any]) -> dict[str, Any] | None:
        op = msg.get("op")
        if op == "start":
            return {
                "op": "started",
                "name": (
                    f"routeproof-break-{self.brk}"
                    if self.brk is not None
                    else f"routeproof-{self.variant}"
                    if self.variant is not None
                    else "routeproof"
                ),
                "version": routeproof.__version__,
                "capabilities": list(CAPABILITIES),
                "breaks": {k: list(v[0]) for k, v in BREAKS.items()},
            }
        if op == "configure":
            await self._close_setup()
            self.config = msg
            if self.brk == "per_attempt_deadline":
                return {"op": "configured"}  # the router is built per call, from the call's deadline
            built = build_router(msg)
            if isinstance(built, str):
                return {"op": "unsupported", "reason": built}
            self.setup = built
            return {"op": "configured"}
        if op == "call":
            return await self.call(msg)
        if op == "stop":
            await self._close_setup()
            return None
        return {"op": "error", "error": f"unknown op {op!r}"}

    async def _close_setup(self) -> None:
        if self.setup is not None:
            await self.setup.router.aclose()
            self.setup = None

    async def call(self, msg: Mapping[str, Any]) -> dict[str, Any]:
        deadline_ms = msg.get("deadline_ms")
        if self.brk == "per_attempt_deadline":
            await self._close_setup()
            built = build_router(self.config, per_attempt_deadline_s=deadline_ms / 1000 if deadline_ms else None)
            if isinstance(built, str):
                return {"op": "unsupported", "reason": built}
            self.setup = built
            deadline_ms = None
        setup = self.setup
        if setup is None:
            return {"op": "outcome", "class": "other", "error": "call before configure", "elapsed_ms": 0}
        loop = asyncio.get_running_loop()
        started = time.monotonic()
        task = asyncio.create_task(self._run(setup, msg, deadline_ms))
        cancel_ms = msg.get("cancel_after_ms")
        if cancel_ms is not None:
            done, _ = await asyncio.wait({task}, timeout=cancel_ms / 1000)
            if not done:
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    if self.brk == "retry_after_cancel":
                        again = loop.create_task(self._run(setup, msg, None))
                        self.background.add(again)
                        again.add_done_callback(self.background.discard)
                    return {"op": "outcome", "class": "cancelled", "elapsed_ms": (time.monotonic() - started) * 1000}
        out = await task
        if self.brk == "trailing_sleep" and out["class"] not in {"success", "cancelled"}:
            await asyncio.sleep(0.8)
        out["elapsed_ms"] = (time.monotonic() - started) * 1000
        return out

    async def _run(self, setup: Setup, msg: Mapping[str, Any], deadline_ms: float | None) -> dict[str, Any]:
        token = None
        if msg.get("traceparent"):
            token = otel_context.attach(propagate.extract({"traceparent": str(msg["traceparent"])}))
        try:
            try:
                req = _request_of(msg)
            except (ValueError, RouterError) as exc:  # TranslationError: the body is not one routeproof takes
                return {"op": "outcome", "class": "terminal", "error": f"refused before sending: {exc}"}
            policy = policy_for(setup.chain, str(msg.get("tier", "standard")))
            loop = asyncio.get_running_loop()
            deadline = loop.time() + (deadline_ms / 1000 if deadline_ms is not None else _FAR_S)
            resolved = resolve(ALIAS, policy)
            assert resolved is not None
            try:
                if msg.get("stream"):
                    return await self._stream(setup, req, policy, deadline)
                resp = await setup.router.call_provider(req, resolved, deadline, policy)
            except RouterError as exc:
                return {"op": "outcome", "class": outcome_class(exc), "error": str(exc)}
            choice = resp.choices[0]
            tools = [{"name": t.name, "arguments": t.arguments_json} for t in choice.tool_calls]
            return {
                "op": "outcome",
                "class": "success",
                "text": choice.content,
                "tool_calls": tools,
                "dropped": [] if "drop_silently" in _HARNESS_BREAKS else list(resp.dropped_parameters),
            }
        finally:
            if token is not None:
                otel_context.detach(token)

    async def _stream(self, setup: Setup, req: ChatRequest, policy: TenantPolicy, deadline: float) -> dict[str, Any]:
        text: list[str] = []
        tools: list[dict[str, str]] = []
        current: dict[str, str] | None = None
        cls, error = "stream_error", "the stream ended without MessageStop or StreamError"
        resolved = resolve(ALIAS, policy)
        assert resolved is not None
        stream = setup.router.call_provider_streaming(req, resolved, deadline, policy)
        try:
            async for event in stream:
                if isinstance(event, TextDelta):
                    text.append(event.text)
                elif isinstance(event, ToolUseStart):
                    current = {"name": event.name, "arguments": ""}
                elif isinstance(event, ToolUseDelta) and current is not None:
                    current["arguments"] += event.partial_json
                elif isinstance(event, BlockStop) and current is not None:
                    tools.append(current)
                    current = None
                elif isinstance(event, MessageStop):
                    cls, error = "success", ""
                elif isinstance(event, StreamError):
                    cls, error = "stream_error", event.message
        except RouterError as exc:
            return {"op": "outcome", "class": outcome_class(exc), "error": str(exc), "text": "".join(text)}
        finally:
            await stream.aclose()
        if cls == "stream_error" and self.brk == "truncated_as_complete":
            cls = "success"
        if cls == "stream_error" and self.brk == "splice_stream" and text and stream.provider is not None:
            rest = tuple(e for e in setup.chain if e[0] is not stream.provider)
            if rest:
                more = await self._stream(replace(setup, chain=rest), req, policy_for(rest, "standard"), deadline)
                return {**more, "text": "".join(text) + str(more.get("text", ""))}
        return {
            "op": "outcome",
            "class": cls,
            "error": error,
            "text": "".join(text),
            "tool_calls": tools,
            "dropped": [] if "drop_silently" in _HARNESS_BREAKS else list(stream.dropped_parameters),
        }


def _request_of(msg: Mapping[str, Any]) -> ChatRequest:
    """The call's request: the caller's own body when the case gives one (case format 3), else the
    protocol's neutral request."""
    api = msg.get("api")
    if api is None or "ignore_body" in _HARNESS_BREAKS:
        return _request(msg["request"])
    body = {**msg.get("body", {}), "model": ALIAS}
    body.pop("stream", None)
    if api == "responses":  # the Responses API's request, as the gateway reads it (core/formats/responses_api.py)
        body = json.loads(responses_to_chat(body).chat_json)
        api = "openai"
    if api == "openai" and not {"max_tokens", "max_completion_tokens"} & body.keys():
        body["max_tokens"] = int(msg["request"].get("max_tokens", 64))
    req, extras = parse_anthropic_request(body) if api == "anthropic" else parse_openai_request(body)
    # the caller's own body kept as its origin, as routeproof serve keeps it: a provider of the
    # caller's protocol is sent that body; another is sent a translation, its drops reported
    origin = WireOrigin(
        protocol=WireFormat.ANTHROPIC_MESSAGES if api == "anthropic" else WireFormat.OPENAI_CHAT,
        body_json=json.dumps(body, separators=(",", ":")),
    )
    tool_choice = extras.tool_choice if req.tools else None
    return replace(req, alias=ALIAS, top_p=extras.top_p, tool_choice=tool_choice, origin=origin)


def _request(data: Mapping[str, Any]) -> ChatRequest:
    messages = tuple(Message.user(str(m["content"])) for m in data["messages"])
    tools = tuple(
        ToolDefinition(
            name=t["name"], description=t.get("description", ""), input_schema_json=json.dumps(t["input_schema"])
        )
        for t in data.get("tools", ())
    )
    return ChatRequest(messages=messages, max_tokens=int(data.get("max_tokens", 64)), tools=tools, alias=ALIAS)


async def warm_up() -> None:
    """One loopback round trip through httpx, so its lazy imports (~200 ms) are not charged to the
    first case's call."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with httpx.AsyncClient() as client:
        await client.get(f"http://127.0.0.1:{port}/")
    server.close()
    await server.wait_closed()


async def serve(brk: str | None, *, variant: str | None = None) -> None:
    """Read JSON lines from stdin, answer each on stdout, until ``stop`` or EOF."""
    await warm_up()
    if brk is not None:
        plant(brk)
    if brk != "forward_span_id":
        trace.set_tracer_provider(TracerProvider())  # real span ids: each attempt is a child span
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=16 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    harness = Harness(brk, variant)
    write = partial(print, flush=True)
    while line := await reader.readline():
        if not line.strip():
            continue
        reply = await harness.handle(json.loads(line))
        if reply is None:
            break
        write(json.dumps(reply))
    for task in tuple(harness.background):
        task.cancel()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--break", dest="brk", choices=sorted(BREAKS), help="plant one broken rule")
    parser.add_argument("--variant", choices=sorted(VARIANTS), help="run another conforming router (see VARIANTS)")
    args = parser.parse_args()
    if (args.brk is not None or args.variant is not None) and __debug__:
        os.execv(sys.executable, [sys.executable, "-O", *sys.argv])  # icontract off: judged from the outside only
    if args.variant is not None:
        apply_variant(args.variant)
    asyncio.run(serve(args.brk, variant=args.variant))


if __name__ == "__main__":
    main()
