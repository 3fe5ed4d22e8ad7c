"""Write docs/configuration-reference.md from the configuration loader itself, so it cannot drift.

The keys of each table are not written here: they are read from the loader, by handing it each
table with one unknown key and reading the ``unknown key (known: [...])`` list its ``ConfigError``
names. What is written here is one line of meaning per key. A key the loader accepts without a
description here, or a description of a key the loader does not accept, stops the generator, so a
new key cannot ship undocumented.

    python tools/config_reference.py            # rewrite the page
    python tools/config_reference.py --check    # exit 1 if the page is not what the loader says
"""

# ruff: noqa: E501  (KEYS below is a table of one-line descriptions, one key per line)

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from routeproof.config import parse_config
from routeproof.core.types import ProviderKind
from routeproof.errors import ConfigError
from routeproof.gateway.settings import parse_gateway_settings
from routeproof.health_store import parse_health_table
from routeproof.ledger_store import parse_ledger_table

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "configuration-reference.md"
PROBE = "__routeproof_probe__"
_PROVIDER = {"kind": "local", "model": "m"}  # the smallest valid provider: no key, no network

_Probe = Callable[[dict[str, object]], object]


def _in_driver(table: str) -> _Probe:
    return lambda probe: parse_config(
        {"driver": {"providers": {"p": dict(_PROVIDER)}, table: probe}}, environ={}, base_dir=ROOT
    )


# table name as written in agent.toml -> a call of the loader that reads ``probe`` as that table
PROBES: dict[str, _Probe] = {
    "(top level)": lambda probe: parse_config(probe, environ={}, base_dir=ROOT),
    "driver": lambda probe: parse_config({"driver": probe}, environ={}, base_dir=ROOT),
    "driver.providers.NAME": lambda probe: parse_config(
        {"driver": {"providers": {"p": {**_PROVIDER, **probe}}}}, environ={}, base_dir=ROOT
    ),
    "driver.failover": _in_driver("failover"),
    "driver.backoff": _in_driver("backoff"),
    "driver.budget": _in_driver("budget"),
    "driver.admission": _in_driver("admission"),
    "driver.traffic": _in_driver("traffic"),
    "driver.traffic.retry_budget": lambda probe: parse_config(
        {"driver": {"providers": {"p": dict(_PROVIDER)}, "traffic": {"retry_budget": probe}}}, environ={}, base_dir=ROOT
    ),
    "aliases.NAME": lambda probe: parse_config(
        {"driver": {"providers": {"p": dict(_PROVIDER)}}, "aliases": {"a": probe}}, environ={}, base_dir=ROOT
    ),
    "aliases.NAME.hedge": lambda probe: parse_config(
        {"driver": {"providers": {"p": dict(_PROVIDER)}}, "aliases": {"a": {"hedge": {"delay_ms": 1, **probe}}}},
        environ={},
        base_dir=ROOT,
    ),
    "gateway": lambda probe: parse_gateway_settings({"gateway": probe}, environ={}),
    "gateway.tenants.NAME": lambda probe: parse_gateway_settings(
        {"gateway": {"tenants": {"t": {"key": "k", **probe}}}}, environ={}
    ),
    "ledger": lambda probe: parse_ledger_table(probe, base_dir=ROOT, environ={}),
    "health": lambda probe: parse_health_table(probe, environ={}),
}

TABLES: dict[str, str] = {
    "(top level)": "The file's top-level keys and tables.",
    "driver": "seed 003's driver table: the router.",
    "driver.providers.NAME": "One table per provider instance; NAME addresses it (several of one kind are normal).",
    "driver.failover": "When a provider cools, and the latency SLA.",
    "driver.backoff": "The retry schedule.",
    "driver.budget": "Spend limits in USD (exact: TOML floats are read as Decimal).",
    "driver.admission": "How many attempts are in flight at once, and the HTTP transport.",
    "driver.traffic": "Deployment groups (providers of one priority), their balancing, and waiting for capacity (docs/traffic.md).",
    "driver.traffic.retry_budget": "A gRPC-A6-style retry budget per provider: when spent, a failure fails over instead of retrying.",
    "aliases.NAME": "Per-alias settings (NAME is the model name callers ask for).",
    "aliases.NAME.hedge": "Opt-in budgeted hedging: after a delay a second attempt goes to another deployment of the group; the first answer wins (docs/traffic.md).",
    "gateway": "`routeproof serve`: the model names clients may ask for, one tenant per gateway key.",
    "gateway.tenants.NAME": "One table per gateway key (tenant).",
    "ledger": "Where the budget ledger lives (shared between processes for sqlite and redis).",
    "health": "Where provider health lives (shared between processes for redis).",
}

KEYS: dict[tuple[str, str], str] = {
    ("(top level)", "driver"): "table: the router (below).",
    ("(top level)", "pricing"): "path of the pricing TOML, relative to this file (`config/pricing.toml`); required when any budget is set.",
    ("(top level)", "gateway"): "table: `routeproof serve` (below).",
    ("(top level)", "ledger"): "table: the budget ledger's store (below).",
    ("(top level)", "health"): "table: the provider-health store (below).",
    ("(top level)", "traffic"): "table: where rate-limit and in-flight counts live: `backend` `memory` (default), `sqlite` (`path`) or `redis` (`url`, `namespace`); see docs/traffic.md.",
    ("driver", "type"): "`\"routing\"` (the only driver; default).",
    ("driver", "providers"): "tables `[driver.providers.NAME]`, at least one.",
    ("driver", "failover"): "table (below).",
    ("driver", "backoff"): "table (below).",
    ("driver", "budget"): "table (below).",
    ("driver", "admission"): "table (below).",
    ("driver", "traffic"): "table (below).",
    ("(top level)", "aliases"): "table of `[aliases.NAME]` tables (below).",
    ("aliases.NAME", "hedge"): "table (below); absent: the alias is not hedged.",
    ("aliases.NAME.hedge", "delay"): '`"fixed"` (default: `delay_ms`) or `"p95"`: the pending deployment\'s observed p95 time to first token or answer (`delay_ms` until it has 20 samples).',
    ("aliases.NAME.hedge", "delay_ms"): "milliseconds after the attempt was sent before a hedge may go (0..30000; required for a fixed delay; default 1000 as the p95 fallback).",
    ("aliases.NAME.hedge", "max_extra_ratio"): "extra requests per call at most (default 0.1 = 10 %), a token bucket per alias and process; in thousandths, 0.001..1.",
    ("aliases.NAME.hedge", "burst"): "the bucket's size in hedges (default 10, at most 100); it starts empty.",
    ("driver", "private_hosts"): "list of host names that count as private for the Private tier (besides loopback and private addresses).",
    ("driver.providers.NAME", "kind"): f"one of {', '.join(f'`{k.value}`' for k in ProviderKind)}; default: NAME when it spells a kind.",
    ("driver.providers.NAME", "base_url"): "the endpoint; default: the kind's public API.",
    ("driver.providers.NAME", "model"): "required: the provider's model id.",
    ("driver.providers.NAME", "priority"): "integer >= 0, lower is tried first; default: the table's position (ties keep file order).",
    ("driver.providers.NAME", "privacy_tier"): "`sovereign`, `private` or `standard`; may make a provider *less* private than its endpoint, never more.",
    ("driver.providers.NAME", "daily_budget_usd"): "USD per day on this provider; past it, calls skip to the next provider.",
    ("driver.providers.NAME", "api_key_env"): "the variable holding the key; default: the kind's (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, ...).",
    ("driver.providers.NAME", "timeout_ms"): "per-attempt timeout, 1..30000 ms (default 30000).",
    ("driver.providers.NAME", "region"): "Bedrock only: the AWS region (default `AWS_REGION` / `AWS_DEFAULT_REGION`).",
    ("driver.providers.NAME", "profile"): "Bedrock only: the AWS config profile botocore's credential chain reads.",
    ("driver.providers.NAME", "weight"): "its share of its priority group under `strategy = \"weighted\"` (exact; default 1).",
    ("driver.providers.NAME", "rpm"): "declared requests per minute (an integer >= 1); at the limit the deployment is skipped.",
    ("driver.providers.NAME", "cache_affinity_ttl_s"): "this deployment's prompt-cache lifetime in seconds (e.g. "
    "3600 for 1-hour caches): with cache affinity on, a prefix pinned to it stays pinned this long (default: "
    "`[driver.traffic]`'s).",
    ("driver.providers.NAME", "tpm"): "declared tokens per minute (an integer >= 1), reserved as an estimate and settled after.",
    ("driver.providers.NAME", "api_version"): "Azure only: the `api-version` query (default `2024-10-21`; `v1`: the v1 API).",
    ("driver.providers.NAME", "auth"): "Azure only: `api-key` (default), `bearer` (an Entra ID token from `AZURE_OPENAI_AD_TOKEN`, read again when due) or `azure-identity` (`DefaultAzureCredential`, the `azure` extra).",
    ("driver.providers.NAME", "responses_api"): "openai/azure only: `true` when the endpoint serves OpenAI's Responses API; `POST /v1/responses` then goes to it verbatim (default false: the Chat rewriting).",
    ("driver.traffic", "strategy"): "`ordered` (default), `weighted`, `least-outstanding` or `latency`.",
    ("driver.traffic", "wait_for_capacity"): "when every deployment is at its limit: wait FIFO within the deadline (true) or refuse.",
    ("driver.traffic", "cache_affinity_ttl_s"): "calls sharing a cacheable prefix go to the same deployment this long (0 or absent: off).",
    ("driver.traffic", "retry_budget"): "table (below); absent: no retry budget.",
    ("driver.traffic.retry_budget", "max_tokens"): "the bucket's size (recommended 10); retries are allowed while it is over half full.",
    ("driver.traffic.retry_budget", "token_ratio"): "what a success refunds (recommended 0.1); a failure costs 1.",
    ("driver.failover", "failure_threshold"): "consecutive provider faults before a provider cools (default 2).",
    ("driver.failover", "cooldown_ms"): "how long a provider cools (default 30000).",
    ("driver.failover", "latency_sla_ms"): "a provider whose recent p99 exceeds it is demoted like a cooling one (default 30000).",
    ("driver.backoff", "policy"): "`band` (200 ms then 800 ms, ±20 %; default) or `full_jitter`.",
    ("driver.backoff", "base_ms"): "full jitter's base (default 200).",
    ("driver.backoff", "cap_ms"): "full jitter's cap, >= base_ms (default 30000).",
    ("driver.backoff", "max_retries"): "attempts per provider; the contract's ceiling of 3 wins.",
    ("driver.budget", "turn_warning_usd"): "a call past it is sent and flagged (`response.budget_turn_warning`).",
    ("driver.budget", "session_usd"): "hard stop per router (`BudgetExhausted`); `ROUTEPROOF_SESSION_BUDGET_USD` overrides it.",
    ("driver.budget", "monthly_usd"): "hard stop per month, lifted only by `router.override_budget`.",
    ("driver.admission", "max_in_flight"): "attempts in flight router-wide (default 100; 0: no limit); the rest queue FIFO.",
    ("driver.admission", "max_in_flight_per_provider"): "attempts in flight per provider (default 100; 0: no limit).",
    ("driver.admission", "transport"): "`httpx` (default) or `aiohttp` (the `aiohttp` extra).",
    ("gateway", "aliases"): "the model names clients may ask for (default `[\"default\"]`).",
    ("gateway", "max_body_bytes"): "larger requests get 413 (default 1048576).",
    ("gateway", "grace_period_ms"): "on SIGTERM, in-flight calls and streams get this long (default 10000).",
    ("gateway", "tenants"): "tables `[gateway.tenants.NAME]`, at least one.",
    ("gateway", "forward_headers"): "feature headers sent on to a provider of the caller's own protocol (default `anthropic-beta`, `openai-beta`).",
    ("gateway", "header_timeout_ms"): "a connection's request headers must arrive within this (default 10000).",
    ("gateway", "max_connections"): "open client connections; past it a new one gets 503 and is closed (default 4096).",
    ("gateway", "max_in_flight"): "calls in flight at once, shared among the tenants by weight (default 100).",
    ("gateway", "max_queued_per_tenant"): "calls a tenant may have waiting for a slot (default: its share of max_in_flight).",
    ("gateway.tenants.NAME", "key_env"): "the variable holding this tenant's gateway key.",
    ("gateway.tenants.NAME", "key"): "the key inline (tests only; prefer `key_env`).",
    ("gateway.tenants.NAME", "privacy_tier"): "`sovereign`, `private` or `standard` (default) for this tenant's calls.",
    ("gateway.tenants.NAME", "weight"): "this tenant's share of `max_in_flight` (default 1).",
    ("gateway.tenants.NAME", "rpm"): "this tenant's requests per minute, counted across replicas in the `[traffic]` "
    "store; past it a call is refused 429 with `Retry-After`, naming the limit (default: unlimited).",
    ("gateway.tenants.NAME", "tpm"): "this tenant's tokens per minute, each call counted at its worst-case estimate "
    "(prompt upper bound + output cap); past it, 429 as for `rpm` (default: unlimited).",
    ("ledger", "backend"): "`memory` (default), `sqlite` or `redis`.",
    ("ledger", "path"): "sqlite: the file, relative to this file.",
    ("ledger", "url"): "redis: the URL (prefer `url_env`).",
    ("ledger", "url_env"): "redis: the variable holding the URL.",
    ("ledger", "namespace"): "keys `routeproof:ledger:{NAMESPACE}:*` (default `default`).",
    ("ledger", "lease_s"): "how long a dead process's reservation is held before it is committed at its worst case (default 300).",
    ("health", "backend"): "`memory` (default: this process only) or `redis`.",
    ("health", "url"): "redis: the URL (prefer `url_env`).",
    ("health", "url_env"): "redis: the variable holding the URL.",
    ("health", "namespace"): "keys `routeproof:health:{NAMESPACE}:*` (default `default`).",
}  # fmt: skip

_KNOWN = re.compile(r"unknown key \(known: (\[.*?\])\)")


def accepted_keys(probe: _Probe) -> list[str]:
    """The keys the loader accepts in one table, from the ConfigError an unknown key gets."""
    try:
        probe({PROBE: 1})
    except ConfigError as exc:
        found = _KNOWN.search(str(exc))
        if found is None or PROBE not in str(exc):
            raise SystemExit(f"the loader refused the probe for another reason: {exc}") from exc
        keys = ast.literal_eval(found.group(1))
        assert isinstance(keys, list)
        return [str(key) for key in keys]
    raise SystemExit(f"the loader accepted the unknown key {PROBE!r}")


def render(keys_of: Mapping[str, list[str]]) -> str:
    """The page; every accepted key needs a description and every description an accepted key."""
    accepted = {(table, key) for table, keys in keys_of.items() for key in keys}
    if undocumented := sorted(accepted - KEYS.keys()):
        raise SystemExit(f"keys the loader accepts with no description in tools/config_reference.py: {undocumented}")
    if stale := sorted(KEYS.keys() - accepted):
        raise SystemExit(f"descriptions of keys the loader does not accept: {stale}")
    lines = [
        "# Configuration reference",
        "",
        "<!-- Generated by tools/config_reference.py from the loader; do not edit (tox -e docs checks it). -->",
        "",
        "Every key `agent.toml` may hold, table by table. The key lists are read from the loader",
        "(`routeproof.load_config`, the gateway, ledger and health loaders), so this page lists exactly",
        "what is accepted; any other key is refused at load with a `ConfigError` naming it. See",
        "[Configuration](configuration.md) for what the keys do together, and `config/agent.example.toml`.",
    ]
    for table, keys in keys_of.items():
        heading = table if table.startswith("(") else f"[{table}]"
        lines += ["", f"## `{heading}`" if not table.startswith("(") else f"## {heading}", ""]
        lines += [TABLES[table], "", "| key | meaning |", "| --- | --- |"]
        lines += [f"| `{key}` | {KEYS[table, key]} |" for key in sorted(keys)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the page, or with ``--check`` compare it; 1 when it differs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args(argv)
    text = render({table: accepted_keys(probe) for table, probe in PROBES.items()})
    if args.check:
        if not PAGE.exists() or PAGE.read_text(encoding="utf-8") != text:
            print(f"{PAGE.relative_to(ROOT)} is stale: run python tools/config_reference.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
