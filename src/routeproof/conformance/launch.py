"""Gateway mode with a gateway the runner starts itself: a configuration per case, a process per case.

For each case the runner starts the case's own mock providers on free loopback ports (so a request
belongs to the case whose mocks it reaches: no cooperation from the gateway is needed to attribute
it), writes the gateway's configuration pointing at them (the profile's ``[launch] config`` names
the writer), starts the gateway as a subprocess on a free 127.0.0.1 port, waits until its ready
path answers 200, runs the case's calls through it, and kills its process group when the case ends
(or when the case hits its hard bound). Cases run concurrently, each with its own gateway.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import re
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx

from routeproof.conformance.subjects import GatewayProfile, GatewaySubject, HarnessError
from routeproof.providers.capabilities import MODELS_TOML_ENV

__all__ = [
    "WRITERS",
    "LaunchedGateway",
    "ephemeral_low",
    "free_port",
    "litellm_proxy_config",
    "routeproof_serve_config",
]

PROVIDER_KEY_ENV = "CONFORMANCE_PROVIDER_KEY"
_READY_POLL_S = 0.05
_KILL_WAIT_S = 5.0
_BUDGET_OVERRIDES = frozenset({"ROUTEPROOF_SESSION_BUDGET_USD", "BATUTA_LLM_BUDGET"})  # the case sets budgets

# A config writer: (the configure message, the profile) -> (files to write {name: text}, the
# environment the gateway needs, or the reason the gateway cannot express the case).
Writer = Callable[[Mapping[str, Any], GatewayProfile], "tuple[dict[str, str], dict[str, str]] | str"]


_LAUNCH_PORTS_FROM = 20_000  # gateways start on ports from here up to the OS's ephemeral range
_handed_out: set[int] = set()


def ephemeral_low() -> int:
    """The lowest port the OS hands out to ``bind(0)`` and ``connect()`` (Linux's
    ``ip_local_port_range``; 49152, the IANA start, where it cannot be read)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text(encoding="ascii").split()[0])
    except (OSError, ValueError, IndexError):
        return 49_152


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A loopback port nothing listens on, for a gateway that binds it later, in another process.

    Drawn below the OS's ephemeral range and never handed out twice by this process. A port from
    ``bind(0)`` stays free only until the next ``bind(0)`` or ``connect()`` takes it: a case's
    mocks (on ``bind(0)`` ports) took the port of another case's gateway before it started, the
    gateway failed with "address already in use", and its readiness check and calls reached the
    mock instead (a deadline case answered ``from-a`` by another case's provider).
    """
    low = ephemeral_low()
    rng = random.SystemRandom()
    for _ in range(200 if low - _LAUNCH_PORTS_FROM >= 1_000 else 0):
        port = rng.randrange(_LAUNCH_PORTS_FROM, low)
        if port not in _handed_out and _bindable(port):
            _handed_out.add(port)
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:  # no room below the range: the OS picks
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _toml_str(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def routeproof_serve_config(
    message: Mapping[str, Any], profile: GatewayProfile
) -> tuple[dict[str, str], dict[str, str]] | str:
    """``agent.toml`` for ``routeproof serve`` routing the profile's model through the case's chain.

    Providers are named instances (the case's names), so a chain may hold any number of
    OpenAI-compatible providers; their kinds take turns (public: openai, openrouter; private: vllm,
    ollama), as routeproof's harness does. A private Anthropic or Bedrock provider, two prices for
    one (kind, model), or a budget without prices cannot be expressed.
    """
    budget_usd = message.get("budget_usd")
    if budget_usd is not None and not all("price" in p for p in message["providers"]):
        return "a session budget needs a price for every provider"
    openai_kinds = {"public": ("openai", "openrouter"), "private": ("vllm", "ollama")}
    openai_seen = {"public": 0, "private": 0}
    prices: dict[tuple[str, str], tuple[str, str]] = {}
    lines: list[str] = []
    pricing: list[str] = []
    models: list[str] = []  # capability rows (case format 3), read through ROUTEPROOF_MODELS_TOML
    env = {PROVIDER_KEY_ENV: "conformance-test-key"}
    for position, p in enumerate(message["providers"], start=1):
        priority = int(p.get("priority", position))
        protocol, hosting, url = str(p["protocol"]), str(p.get("hosting", "public")), str(p["base_url"])
        creds: Mapping[str, str] = p.get("credentials", {})
        env[PROVIDER_KEY_ENV] = creds.get("api_key", env[PROVIDER_KEY_ENV])
        extra: list[str] = []
        if protocol == "openai":
            if hosting not in openai_kinds:
                return f"unknown hosting {hosting!r}"
            kind = openai_kinds[hosting][openai_seen[hosting] % 2]
            openai_seen[hosting] += 1
            url += "/v1"  # the mock answers POST {base_url}/v1/chat/completions
            extra.append(f"api_key_env = {_toml_str(PROVIDER_KEY_ENV)}")
        elif hosting != "public":
            return f"a {protocol} provider is always public in routeproof"
        elif protocol == "anthropic":
            kind = "anthropic"
            extra.append(f"api_key_env = {_toml_str(PROVIDER_KEY_ENV)}")
        elif protocol == "bedrock":
            kind = "bedrock"
            extra.append(f"region = {_toml_str(creds.get('region', 'us-east-1'))}")
            env["AWS_ACCESS_KEY_ID"] = creds.get("aws_access_key_id", "AKIDCONFORMANCE")
            env["AWS_SECRET_ACCESS_KEY"] = creds.get("aws_secret_access_key", "conformance-test-secret")
        else:
            return f"unknown protocol {protocol!r}"
        if "price" in p:
            price_key = (kind, str(p["model"]))
            price = (str(p["price"]["input_usd_per_mtok"]), str(p["price"]["output_usd_per_mtok"]))
            if prices.get(price_key, price) != price:
                return f"routeproof prices per (kind, model): two prices for {kind} {p['model']!r}"
        if "price" in p and price_key not in prices:  # one [kind."model"] table per (kind, model)
            prices[price_key] = price
            pricing += [
                f"[{kind}.{_toml_str(str(p['model']))}]",
                f"input_per_mtok = {p['price']['input_usd_per_mtok']}",
                f"output_per_mtok = {p['price']['output_usd_per_mtok']}",
                "",
            ]
        lines += [
            f"[driver.providers.{_toml_str(str(p['name']))}]",
            f'kind = "{kind}"',
            f"base_url = {_toml_str(url)}",
            f"model = {_toml_str(str(p['model']))}",
            f"priority = {priority}",
            *(f"{key} = {p[key]}" for key in ("weight", "rpm") if key in p),
            *extra,
            "",
        ]
        if p.get("capabilities"):
            models += [
                "[[models]]",
                f'provider = "{kind}"',
                f"match = {_toml_str('^' + re.escape(str(p['model'])) + '$')}",
                *(f"{k} = {'true' if v else 'false'}" for k, v in sorted(p["capabilities"].items())),
                "",
            ]
    files: dict[str, str] = {}
    if models:
        files["models.toml"] = "\n".join(models)
        env[MODELS_TOML_ENV] = "{dir}/models.toml"  # the case's directory, filled in at launch
    traffic = message.get("traffic") or {}
    if traffic:
        lines += ["[driver.traffic]", *([f'strategy = "{traffic["strategy"]}"'] if "strategy" in traffic else []), ""]
        if "retry_budget" in traffic:
            budget = traffic["retry_budget"]
            lines += [
                "[driver.traffic.retry_budget]",
                f"max_tokens = {int(budget['max_tokens'])}",
                f"token_ratio = {budget['token_ratio']}",
                "",
            ]
    if pricing:
        files["pricing.toml"] = "\n".join(pricing)
        lines.insert(0, 'pricing = "pricing.toml"\n')
    if budget_usd is not None:  # the gateway's session is its tenant: one per tier, the case's calls share it
        lines += ["[driver.budget]", f"session_usd = {budget_usd}", ""]
    lines += ["[gateway]", f"aliases = [{_toml_str(profile.model)}]", "grace_period_ms = 1000", ""]
    tenants = dict(profile.tier_keys)
    if profile.launch is not None and profile.launch.warm_up_key:  # its own session: no budget spent
        tenants["warm-up"] = profile.launch.warm_up_key
    for tenant, key in tenants.items():
        tier = tenant if tenant in profile.tier_keys else "standard"
        lines += [f"[gateway.tenants.{_toml_str(tenant)}]", f"key = {_toml_str(key)}", f'privacy_tier = "{tier}"', ""]
    files["agent.toml"] = "\n".join(lines)
    return files, env


def litellm_proxy_config(
    message: Mapping[str, Any], profile: GatewayProfile
) -> tuple[dict[str, str], dict[str, str]] | str:
    """``config.yaml`` for the LiteLLM proxy (``litellm --config``) routing the profile's model
    through the case's chain, the way ``conformance/harnesses/litellm_harness.py`` configures its
    Router: each provider one deployment in its own model group (the first named after the
    profile's model, the rest ``p1``, ``p2``, ...), ``fallbacks`` from the first through the rest
    in order, ``num_retries: 2`` (3 attempts per provider, as the contract), the rest LiteLLM's
    defaults. Written as JSON, which is YAML. Bedrock, prices and budgets are not expressed."""
    if message.get("budget_usd") is not None:
        return "the LiteLLM proxy profile writes no budget"
    groups: list[str] = []
    model_list: list[dict[str, Any]] = []
    for i, p in enumerate(message["providers"]):
        protocol = str(p["protocol"])
        key = str(p.get("credentials", {}).get("api_key", ""))
        if protocol == "openai":
            params = {"model": f"openai/{p['model']}", "api_base": f"{p['base_url']}/v1", "api_key": key}
        elif protocol == "anthropic":
            params = {"model": f"anthropic/{p['model']}", "api_base": str(p["base_url"]), "api_key": key}
        else:
            return f"the LiteLLM proxy profile writes no {protocol} provider"
        group = profile.model if i == 0 else f"p{i}"
        groups.append(group)
        model_list.append({"model_name": group, "litellm_params": params})
    router: dict[str, Any] = {"num_retries": 2}
    if len(groups) > 1:
        router["fallbacks"] = [{groups[0]: groups[1:]}]
    master = profile.headers.get("Authorization", "Bearer sk-conformance").removeprefix("Bearer ")
    config = {"model_list": model_list, "router_settings": router, "general_settings": {"master_key": master}}
    env = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR"}  # no network fetch at start
    return {"config.yaml": json.dumps(config, indent=2)}, env


WRITERS: Mapping[str, Writer] = {"routeproof-serve": routeproof_serve_config, "litellm-proxy": litellm_proxy_config}


class LaunchedGateway(GatewaySubject):
    """One worker's gateway: started per case from the configuration its writer produces."""

    async def warm_up_call(self, message: Mapping[str, Any], timeout_s: float) -> None:
        """One unjudged plain call through the fresh gateway (as the warm-up tenant, if the profile has one)."""
        launch = self.profile.launch
        if launch is None or not launch.warm_up:
            return
        key = launch.warm_up_key
        await self.call({**message, "tier": "standard", "gateway_key": key} if key else message, timeout_s)

    def __init__(self, profile: GatewayProfile, *, log_path: Path | None = None) -> None:
        if profile.launch is None:
            raise ValueError(f"profile {profile.name!r} has no [launch] table")
        if profile.launch.config not in WRITERS:
            raise ValueError(f"profile {profile.name!r}: unknown [launch] config {profile.launch.config!r}")
        super().__init__("http://127.0.0.1:0", profile)
        self.concurrent = True  # every case has its own mocks and its own gateway process
        self._writer = WRITERS[profile.launch.config]
        self._proc: asyncio.subprocess.Process | None = None
        self._dir: Path | None = None
        self._log_path = log_path

    @property
    def ports(self) -> tuple[int, ...] | None:
        """Any free ports: the runner starts a fresh mock fleet per case."""
        return None

    def fork(self) -> LaunchedGateway:
        """Another driver for another concurrent worker."""
        return LaunchedGateway(self.profile, log_path=self._log_path)

    def unsupported_reason(self, case: Mapping[str, Any]) -> str | None:
        """Every chain is configured per case; the writer says what it cannot express."""
        return None

    async def configure(self, message: Mapping[str, Any], timeout_s: float) -> Mapping[str, Any]:
        """Write the case's configuration and start the gateway on it."""
        await self.end_case()
        written = self._writer(message, self.profile)
        if isinstance(written, str):
            return {"op": "unsupported", "reason": written}
        files, env = written
        config_name = "agent.toml" if "agent.toml" in files else next(iter(files))  # the writer's main file
        self._dir = Path(tempfile.mkdtemp(prefix="routeproof-gw-"))
        for name, text in files.items():
            (self._dir / name).write_text(text, encoding="utf-8")
        assert self.profile.launch is not None
        launch = self.profile.launch
        port = free_port()
        argv = [
            a.format(python=sys.executable, config=str(self._dir / config_name), port=port, dir=str(self._dir))
            for a in launch.command
        ]
        log = self._log_path.open("ab") if self._log_path is not None else None
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log if log is not None else asyncio.subprocess.DEVNULL,
                stderr=log if log is not None else asyncio.subprocess.DEVNULL,
                env={
                    **{k: v for k, v in os.environ.items() if k not in _BUDGET_OVERRIDES},
                    **{k: v.replace("{dir}", str(self._dir)) for k, v in env.items()},
                },
                start_new_session=True,  # its own process group: killed with its children
            )
        finally:
            if log is not None:
                log.close()
        self.url = f"http://127.0.0.1:{port}"
        # the profile states how long its gateway takes to start (the LiteLLM proxy: about 115 s
        # at load 28, measured), which may exceed the runner's configure timeout
        await self._wait_ready(launch.start_timeout_s, launch.ready_path)
        return {"op": "configured"}

    async def _wait_ready(self, timeout_s: float, path: str) -> None:
        proc = self._proc
        assert proc is not None
        give_up = time.monotonic() + timeout_s
        while True:
            if proc.returncode is not None:
                raise HarnessError(f"the gateway exited with code {proc.returncode} before it was ready")
            with contextlib.suppress(httpx.HTTPError):
                resp = await self._client.get(f"{self.url}{path}", timeout=1.0)
                if resp.status_code == 200:
                    return
            if time.monotonic() > give_up:
                raise HarnessError(f"the gateway was not ready at {self.url}{path} within {timeout_s:.0f} s")
            await asyncio.sleep(_READY_POLL_S)

    def kill(self) -> None:
        """Kill the gateway's process group now (idempotent; safe while a case is being cancelled)."""
        proc = self._proc
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)

    async def end_case(self) -> None:
        """Stop this case's gateway and remove its configuration."""
        self.kill()
        proc, self._proc = self._proc, None
        if proc is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), _KILL_WAIT_S)
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    async def aclose(self) -> None:
        """Stop the gateway and close the HTTP client."""
        await self.end_case()
        await super().aclose()
