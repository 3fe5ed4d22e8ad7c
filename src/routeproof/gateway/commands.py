"""The ``serve``, ``providers`` and ``call`` subcommands (registered in ``routeproof.cli``).

Exit codes: 0 success; 1 a call or a provider test failed; 2 the configuration is invalid.
Tables go to stdout with ``rich``; an answer's text goes to stdout, its attempt records after it.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import time
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

from routeproof.config import RoutingConfig, load_config
from routeproof.core.pricing import PricingTable, load_pricing
from routeproof.core.routing import resolve
from routeproof.core.types import (
    AttemptRecord,
    ChatRequest,
    Message,
    MessageStop,
    ProviderKind,
    StreamError,
    TenantPolicy,
    TextDelta,
)
from routeproof.errors import ConfigError, RouterError
from routeproof.factory import router_from_config, tenant_policy
from routeproof.gateway.backend import Backend, pinned_policy
from routeproof.gateway.server import bind, make_server
from routeproof.gateway.telemetry import install_telemetry

__all__ = ["run_call", "run_providers", "run_serve"]

PROBE_PROMPT = "Reply with the word: ok"
PROBE_TIMEOUT_S = 10.0
CALL_TIMEOUT_S = 30.0


def _error(command: str, exc: Exception) -> int:
    print(f"routeproof {command}: {exc}", file=sys.stderr)
    return 2


def production_argv(args: argparse.Namespace) -> list[str] | None:
    """The command line that re-runs ``serve`` under ``python -O`` (production mode), or None when
    no re-exec is needed (``--optimize`` not given, or already optimised, e.g. ``PYTHONOPTIMIZE=1``).

    Under ``-O`` icontract's pre/postconditions (``enabled=__debug__`` by default) and ``assert``
    statements are skipped: the same decisions, without their run-time checks (the test suites keep
    them on). The re-exec keeps the process id, so a supervisor's signals still reach the server.
    """
    if not getattr(args, "optimize", False) or sys.flags.optimize:
        return None
    return [
        sys.executable, "-O", "-m", "routeproof.cli", "serve",
        "--config", str(args.config), "--host", str(args.host), "--port", str(args.port),
        "--log-level", str(getattr(args, "log_level", "warning")),
    ]  # fmt: skip


def run_serve(args: argparse.Namespace) -> int:
    """Serve the gateway until SIGINT/SIGTERM, then stop gracefully."""
    argv = production_argv(args)
    if argv is not None:
        sys.stdout.flush()
        os.execv(argv[0], argv)
    log_level = str(getattr(args, "log_level", "warning"))
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # Before the router is built: its instruments are then the in-process meter's own, not the
    # OpenTelemetry API's proxies to it (a delegation on every instrument call).
    metrics_source = install_telemetry()
    try:
        backend = Backend.load(args.config)  # after basicConfig: load-time warnings (timeout_ms = 30) show
        sock = bind(args.host, args.port)
    except (ConfigError, OSError) as exc:
        return _error("serve", exc)
    server = make_server(backend, metrics_reader=metrics_source, log_level=log_level)
    host, port = sock.getsockname()[:2]
    mode = " [production: python -O, contracts off]" if sys.flags.optimize else ""
    print(f"routeproof gateway on http://{host}:{port} (models: {', '.join(backend.aliases)}){mode}", flush=True)
    server.run(sockets=[sock])
    return 0


def _pricing(config: RoutingConfig) -> PricingTable | None:
    if config.pricing_path is None:
        return None
    return load_pricing(config.pricing_path.read_text(encoding="utf-8"))


def _priced(pricing: PricingTable | None, kind: ProviderKind, model: str) -> str:
    if pricing is not None and pricing.get(kind, model) is not None:
        return "yes"
    return "free (local)" if kind is ProviderKind.LOCAL else "no"


@dataclass(frozen=True, slots=True, kw_only=True)
class _Probe:
    ok: bool
    elapsed_ms: int
    detail: str


async def _probe_all(config: RoutingConfig, console: Console) -> dict[str, _Probe]:
    results: dict[str, _Probe] = {}
    async with router_from_config(config) as router:
        for provider in config.providers:
            policy = pinned_policy(config, provider.name, "probe")
            resolved = resolve("probe", policy)  # a pinned policy defines its alias
            req = ChatRequest(messages=(Message.user(PROBE_PROMPT),), max_tokens=8, alias="probe")
            started = time.perf_counter()
            with console.status(f"testing {provider.name} ({provider.kind.value}, {provider.model}) ..."):
                try:
                    deadline = asyncio.get_running_loop().time() + PROBE_TIMEOUT_S
                    resp = await router.call_provider(req, resolved, deadline, policy)
                    detail = repr(resp.choices[0].content[:40]) if resp.choices else "(no choice)"
                    results[provider.name] = _Probe(ok=True, elapsed_ms=_ms_since(started), detail=detail)
                except RouterError as exc:
                    detail = f"{type(exc).__name__}: {exc}"
                    results[provider.name] = _Probe(ok=False, elapsed_ms=_ms_since(started), detail=detail)
    return results


def _ms_since(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)


def run_providers(args: argparse.Namespace) -> int:
    """List the configured providers; with ``--test``, make one tiny call to each."""
    console = Console()
    try:
        config = load_config(args.config)
        pricing = _pricing(config)
    except (ConfigError, OSError) as exc:
        return _error("providers", exc)
    probes = asyncio.run(_probe_all(config, console)) if args.test else {}
    table = Table(title=f"providers in {args.config}")
    for column in ("name", "kind", "model", "endpoint", "tier", "priced", "health"):
        table.add_column(column)
    for p in config.providers:
        probe = probes.get(p.name)
        if probe is None:
            health = "not tested (use --test)"
        elif probe.ok:
            health = f"[green]pass[/green] {probe.elapsed_ms} ms {probe.detail}"
        else:
            health = f"[red]FAIL[/red] {probe.elapsed_ms} ms {probe.detail}"
        endpoint = p.base_url or ("in-process" if p.kind is ProviderKind.LOCAL else f"regional ({p.region})")
        tier = p.privacy_tier.name.lower()
        table.add_row(p.name, p.kind.value, p.model, endpoint, tier, _priced(pricing, p.kind, p.model), health)
    console.print(table)
    return 0 if all(probe.ok for probe in probes.values()) else 1


def _attempts_table(attempts: tuple[AttemptRecord, ...]) -> Table:
    table = Table(title="attempts")
    for column in ("#", "provider", "model", "attempt", "status", "http", "elapsed ms"):
        table.add_column(column)
    for i, a in enumerate(attempts, start=1):
        status = a.status.value
        table.add_row(
            str(i), a.provider.value, a.model, str(a.attempt_num), status,
            "-" if a.http_status is None else str(a.http_status), str(a.elapsed_ms),
        )  # fmt: skip
    return table


async def _call(config: RoutingConfig, args: argparse.Namespace, policy: TenantPolicy, console: Console) -> int:
    resolved = resolve(args.alias, policy)
    assert resolved is not None, "the policy was built for this alias"
    req = ChatRequest(messages=(Message.user(args.prompt),), max_tokens=args.max_tokens, alias=args.alias)
    async with router_from_config(config) as router:
        deadline = asyncio.get_running_loop().time() + CALL_TIMEOUT_S
        try:
            if not args.stream:
                with console.status("calling ..."):
                    resp = await router.call_provider(req, resolved, deadline, policy)
                print(resp.choices[0].content if resp.choices else "")
                console.print(_attempts_table(resp.attempts))
                return 0
            stream = router.call_provider_streaming(req, resolved, deadline, policy)
            failed = False
            async for event in stream:
                if isinstance(event, TextDelta):
                    print(event.text, end="", flush=True)
                elif isinstance(event, StreamError):
                    print(f"\n{event.message}", file=sys.stderr)
                    failed = True
                elif isinstance(event, MessageStop):
                    print()
            console.print(_attempts_table(stream.attempts))
            return 1 if failed else 0
        except RouterError as exc:
            print(f"routeproof call: {type(exc).__name__}: {exc}", file=sys.stderr)
            console.print(_attempts_table(exc.attempts))
            return 1


def run_call(args: argparse.Namespace) -> int:
    """One routed call, printing the answer and the attempt records."""
    console = Console()
    try:
        config = load_config(args.config)
        if args.provider is not None:
            config.provider(args.provider)  # KeyError when not configured
        policy = (
            tenant_policy(config, args.alias)
            if args.provider is None
            else pinned_policy(config, args.provider, args.alias)
        )
    except KeyError:
        known = [p.name for p in load_config(args.config).providers]
        return _error("call", ConfigError(f"--provider {args.provider!r} is not configured (known: {known!r})"))
    except (ConfigError, OSError) as exc:
        return _error("call", exc)
    return asyncio.run(_call(config, args, policy, console))
