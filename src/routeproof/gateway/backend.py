"""The one module between the gateway and the router: everything the gateway needs from routeproof's
public API (``routeproof.factory``, ``Router.call_provider`` / ``call_provider_streaming``) goes
through here, so a change of the router's shell touches this file only.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from routeproof.config import RoutingConfig, load_config
from routeproof.core.formats.cross_fields import bedrock_refusals, caller_fields_plan
from routeproof.core.formats.passthrough import cross_protocol_plan
from routeproof.core.formats.responses_api import ResponsesRefused
from routeproof.core.identity import parse_provider
from routeproof.core.messages import WireFormat
from routeproof.core.routing import build_chain, resolve
from routeproof.core.types import (
    ChatRequest,
    FallbackProvider,
    PrivacyTier,
    ProviderKind,
    ProviderResponse,
    ResolvedModel,
    TenantPolicy,
)
from routeproof.errors import UnknownAlias
from routeproof.factory import load_router, router_from_config, tenant_policy
from routeproof.gateway.settings import GatewaySettings, Tenant, load_gateway_settings
from routeproof.providers._passthrough import chat_view
from routeproof.providers.capabilities import default_capabilities
from routeproof.router import Router
from routeproof.streaming import ProviderStream

__all__ = ["NO_DOCUMENTED_OUTPUT_TOKENS", "Backend", "Route", "merged_policy", "pinned_policy", "protocol_of"]

NO_DOCUMENTED_OUTPUT_TOKENS = 32_768
"""What the ledger reserves for a request without an output cap whose models document no maximum
output (``max_output_tokens``) nor a context window in the capability table."""


def protocol_of(kind: ProviderKind) -> WireFormat | None:
    """The wire protocol a provider kind speaks (None: not one a gateway client speaks)."""
    if kind is ProviderKind.ANTHROPIC:
        return WireFormat.ANTHROPIC_MESSAGES
    if kind in (ProviderKind.OPENAI, ProviderKind.OPENROUTER, ProviderKind.OLLAMA, ProviderKind.VLLM) or kind in (
        ProviderKind.AZURE,
        ProviderKind.GEMINI,
    ):
        return WireFormat.OPENAI_CHAT
    if kind is ProviderKind.BEDROCK:
        return WireFormat.BEDROCK_CONVERSE
    return None


def merged_policy(
    config: RoutingConfig, aliases: tuple[str, ...], *, tenant_id: str, privacy_tier: PrivacyTier
) -> TenantPolicy:
    """One policy routing every alias through the configured providers in priority order."""
    policies = [tenant_policy(config, alias, privacy_tier=privacy_tier) for alias in aliases]
    primary = {alias: p.primary[alias] for alias, p in zip(aliases, policies, strict=True)}
    chain = tuple(
        FallbackProvider(
            kind=entries[0].kind,
            model_alias_map={a: m for e in entries for a, m in e.model_alias_map.items()},
        )
        for entries in zip(*(p.fallback_chain for p in policies), strict=True)
    )
    return TenantPolicy(tenant_id=tenant_id, privacy_tier=privacy_tier, primary=primary, fallback_chain=chain)


def pinned_policy(config: RoutingConfig, provider_name: str, alias: str) -> TenantPolicy:
    """A policy that routes ``alias`` to the one named provider, with no fallback (``--provider``)."""
    provider = config.provider(provider_name)
    return TenantPolicy(
        tenant_id=f"pinned:{provider_name}", primary={alias: (parse_provider(provider.name), provider.model)}
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Route:
    """A tenant's policy and where it resolves the requested alias."""

    policy: TenantPolicy
    resolved: ResolvedModel
    targets: tuple[tuple[ProviderKind, str], ...] = field(default=(), compare=False, repr=False)
    """The kind and model of each chain entry, in order, when :meth:`Backend.route` made it (else
    empty, and :meth:`Backend.chain_targets` works them out): a chain has at least one entry."""


class Backend:
    """A router built from ``agent.toml`` and one policy per gateway tenant."""

    def __init__(self, config: RoutingConfig, settings: GatewaySettings, router: Router | None = None) -> None:
        self.config = config
        self.settings = settings
        self.router = router if router is not None else router_from_config(config)
        self._policies = {
            tenant.name: merged_policy(
                config, settings.aliases, tenant_id=tenant.name, privacy_tier=tenant.privacy_tier
            )
            for tenant in settings.tenants
        }
        self._routes: dict[tuple[str, str], Route] = {}

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None) -> Backend:
        """Load the router and the gateway table from one ``agent.toml``."""
        config, settings = load_config(path, environ=environ), load_gateway_settings(path, environ=environ)
        return cls(config, settings, load_router(path, environ=environ))  # with its [ledger] and [health] stores

    @property
    def aliases(self) -> tuple[str, ...]:
        """The model names clients may ask for."""
        return self.settings.aliases

    def route(self, tenant: Tenant, alias: str) -> Route | None:
        """Where ``alias`` goes for ``tenant``; None when the alias is not configured.

        Made once per tenant and alias, with its chain's targets: policies and the configuration are
        fixed at load, and this runs twice per request. An unknown alias is not kept (a client's
        made-up names never grow the table)."""
        key = (tenant.name, alias)
        known = self._routes.get(key)
        if known is not None:
            return known
        policy = self._policies[tenant.name]
        try:
            resolved = resolve(alias, policy)
        except UnknownAlias:
            return None
        made = Route(policy=policy, resolved=resolved)
        made = self._routes[key] = replace(made, targets=self.chain_targets(made))
        return made

    def chain_targets(self, route: Route) -> tuple[tuple[ProviderKind, str], ...]:
        """The kind and model of each entry of ``route``'s chain, in order."""
        if route.targets:
            return route.targets
        out = []
        for entry in build_chain(route.resolved, route.policy):
            kind = entry.provider.kind
            if kind is None:  # an unbound name: the configured provider says its kind
                kind = self.config.provider(str(entry.provider)).kind
            out.append((kind, entry.model))
        return tuple(out)

    def output_reservation(self, route: Route) -> int:
        """The output tokens to reserve for a request with no output cap: the largest documented
        maximum output of the chain's models (else their context window, else
        ``NO_DOCUMENTED_OUTPUT_TOKENS``), so no provider of the chain can bill past the reservation."""
        table = default_capabilities()
        sizes = []
        for kind, model in self.chain_targets(route):
            caps = table.lookup(kind, model)
            sizes.append(caps.max_output_tokens or caps.context_window_tokens or NO_DOCUMENTED_OUTPUT_TOKENS)
        return max(sizes, default=NO_DOCUMENTED_OUTPUT_TOKENS)

    def carries_as_is(self, route: Route, source: WireFormat) -> bool:
        """Whether a provider of ``route``'s chain speaks ``source`` (or is Local, with no wire to judge):
        then :meth:`refused_everywhere` refuses nothing, whatever the request sets, and is not asked."""
        for kind, _ in self.chain_targets(route):
            target = protocol_of(kind)
            if target is None or target is source:
                return True
        return False

    def refused_everywhere(
        self, route: Route, source: WireFormat, fields: tuple[str, ...], request: ChatRequest | None = None
    ) -> str | None:
        """Why no provider of ``route``'s chain can carry ``fields`` of a ``source`` request, or None when one can.
        Every field the caller set is judged (``request``; ``core.formats.cross_fields``), nested ones included."""
        reasons = []
        if request is not None and source is WireFormat.OPENAI_RESPONSES:
            try:  # a provider without the Responses API judges the request's Chat rewriting
                request, source = chat_view(request), WireFormat.OPENAI_CHAT
            except ResponsesRefused:
                return None  # only a Responses provider can take it: the router's pin decides (skips, or a 400)
        for kind, _ in self.chain_targets(route):
            target = protocol_of(kind)
            if target is None or target is source:  # same protocol carries it; Local has no wire to judge
                return None
            if target is WireFormat.BEDROCK_CONVERSE and request is not None:
                refused = bedrock_refusals(request)
            elif request is not None and request.origin is not None:  # every field the caller set, nested too
                refused = caller_fields_plan(request, request, target).refused
            else:
                refused = cross_protocol_plan(source, target, fields).refused
            if not refused:
                return None
            reasons.append(f"{target.value}: " + "; ".join(f"{name!r} ({why})" for name, why in refused))
        return "no configured provider can carry this request: " + " | ".join(reasons) if reasons else None

    async def call(self, route: Route, req: ChatRequest, timeout_s: float) -> ProviderResponse:
        """One routed call, within ``timeout_s`` from now."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        return await self.router.call_provider(
            _aliased(req, route), route.resolved, deadline, route.policy,
            session_id=route.policy.tenant_id,
        )  # fmt: skip

    def stream(self, route: Route, req: ChatRequest, timeout_s: float) -> ProviderStream:
        """One routed streaming call, within ``timeout_s`` from now."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        return self.router.call_provider_streaming(
            _aliased(req, route), route.resolved, deadline, route.policy,
            session_id=route.policy.tenant_id,
        )  # fmt: skip

    async def start(self) -> None:
        """Start the router's health store (a shared one loads the other replicas' state first, bounded),
        so the first call routes on what the fleet already knows."""
        await self.router.health_store.start()

    async def aclose(self) -> None:
        """Close the router's providers, its stores (health, ledger) and its pooled HTTP client."""
        await self.router.aclose()


def _aliased(req: ChatRequest, route: Route) -> ChatRequest:
    """``req`` carrying the alias ``route`` resolved (the app's parse already set it: no rebuild)."""
    alias = route.resolved.alias
    return req if req.alias == alias else replace(req, alias=alias)
