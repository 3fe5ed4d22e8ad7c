"""The implementation under test (a conformance *subject*): a harness subprocess speaking JSON lines
(PROTOCOL.md), or a gateway. ("driver" is routeproof's call loop, `routeproof.driver`, and only that.)"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import httpx

__all__ = [
    "PROTOCOL_VERSION",
    "GatewayProfile",
    "GatewaySubject",
    "HarnessError",
    "HarnessSubject",
    "Hung",
    "Implementation",
    "load_profile",
]

PROTOCOL_VERSION = "provider-routing-v1/conformance-2"
"""Sent in ``start``. conformance-2 adds optional fields only (PROTOCOL.md "Versions"); a case that
uses them needs a capability a conformance-1 harness does not declare, so it never receives them."""
_API_PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages", "responses": "/v1/responses"}
_LINE_LIMIT = 16 * 1024 * 1024


class HarnessError(RuntimeError):
    """The implementation broke the protocol (bad JSON, wrong reply, exited)."""


class Hung(HarnessError):
    """The implementation did not answer within the hard bound; its process was killed."""


class Implementation(Protocol):
    """What the runner needs from an implementation under test."""

    info: Mapping[str, Any]

    async def configure(self, message: Mapping[str, Any], timeout_s: float) -> Mapping[str, Any]: ...
    async def call(self, message: Mapping[str, Any], timeout_s: float) -> Mapping[str, Any]: ...
    async def aclose(self) -> None: ...


class HarnessSubject:
    """One harness subprocess (``start`` once, then ``configure``/``call`` per case, ``stop``)."""

    def __init__(self, command: str, *, stderr_path: Path | None = None) -> None:
        self.command = command
        self.info: Mapping[str, Any] = {}
        self._proc: asyncio.subprocess.Process | None = None
        self._stderr_path = stderr_path

    async def start(self, timeout_s: float = 60.0) -> Mapping[str, Any]:
        """Spawn the harness and exchange ``start``/``started``."""
        stderr = self._stderr_path.open("ab") if self._stderr_path is not None else asyncio.subprocess.DEVNULL
        try:
            self._proc = await asyncio.create_subprocess_shell(
                self.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                start_new_session=True,  # its own process group: a hung harness is killed with its children
                limit=_LINE_LIMIT,
            )
        finally:
            if not isinstance(stderr, int):
                stderr.close()
        reply = await self._exchange({"op": "start", "protocol": PROTOCOL_VERSION}, timeout_s)
        if reply.get("op") != "started":
            raise HarnessError(f"expected 'started', got {reply!r}")
        self.info = reply
        return reply

    async def configure(self, message: Mapping[str, Any], timeout_s: float) -> Mapping[str, Any]:
        """Send ``configure``; the reply is ``configured`` or ``unsupported``."""
        reply = await self._exchange(message, timeout_s)
        if reply.get("op") not in {"configured", "unsupported"}:
            raise HarnessError(f"expected 'configured' or 'unsupported', got {reply!r}")
        return reply

    async def call(self, message: Mapping[str, Any], timeout_s: float) -> Mapping[str, Any]:
        """Send ``call``; the reply is ``outcome`` (or ``unsupported``)."""
        reply = await self._exchange(message, timeout_s)
        if reply.get("op") not in {"outcome", "unsupported"}:
            raise HarnessError(f"expected 'outcome' or 'unsupported', got {reply!r}")
        return reply

    async def _exchange(self, message: Mapping[str, Any], timeout_s: float) -> Mapping[str, Any]:
        proc = self._proc
        if proc is None or proc.stdin is None or proc.stdout is None:
            raise HarnessError("the harness is not running")
        try:
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            await proc.stdin.drain()
            line = await asyncio.wait_for(proc.stdout.readline(), timeout_s)
        except TimeoutError as exc:
            self.kill()
            raise Hung(f"no answer to {message.get('op')!r} within {timeout_s:.1f} s: harness killed") from exc
        except (ConnectionError, BrokenPipeError) as exc:
            self.kill()
            raise HarnessError(f"the harness went away: {exc}") from exc
        if not line:
            self.kill()
            raise HarnessError(
                f"the harness exited (code {proc.returncode!r}) instead of answering {message.get('op')!r}"
            )
        try:
            reply = json.loads(line)
        except json.JSONDecodeError as exc:
            self.kill()
            raise HarnessError(f"not a JSON line: {line[:200]!r}") from exc
        if not isinstance(reply, dict):
            raise HarnessError(f"a reply must be a JSON object, got {reply!r}")
        return reply

    def kill(self) -> None:
        """Kill the harness's process group (idempotent)."""
        proc = self._proc
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)

    async def aclose(self) -> None:
        """Send ``stop`` and wait a little; kill the harness if it lingers."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        self._proc = proc
        if proc.returncode is None and proc.stdin is not None:
            with contextlib.suppress(ConnectionError, BrokenPipeError, RuntimeError):
                proc.stdin.write(b'{"op": "stop"}\n')
                await proc.stdin.drain()
                proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), 5.0)
            except TimeoutError:
                self.kill()
        self.kill()
        await proc.wait()
        self._proc = None


DEFAULT_STATUSES: Mapping[int, tuple[str, ...]] = {
    400: ("terminal",),
    404: ("terminal",),
    401: ("auth",),
    403: ("auth",),
    408: ("deadline",),
    504: ("deadline",),
}
"""HTTP status -> outcome classes when a profile states no ``[gateway.statuses]``; any other
non-200 status is ``all_failed``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Launch:
    """How the runner starts the gateway itself, once per case (``[launch]`` of a profile)."""

    config: str  # the config writer (``routeproof.conformance.launch.WRITERS``), e.g. "routeproof-serve"
    command: tuple[str, ...]  # argv; ``{python}``, ``{config}`` and ``{port}`` are filled in
    ready_path: str = "/readyz"  # GET answers 200 once the gateway takes calls
    start_timeout_s: float = 30.0
    # One unjudged plain call through each fresh gateway before the case's calls (its mocks answer
    # it, then get the case's script): a process's first call pays lazy imports and pool set-up
    # (measured ~60 ms in routeproof serve), which is start-up cost, not the contract's timing.
    warm_up: bool = True
    warm_up_key: str | None = None  # a gateway key of its own for the warm-up call (its own session and budget)


@dataclass(frozen=True, slots=True, kw_only=True)
class PerCase:
    """A gateway configured per request (``[gateway.per_case]``): a template the driver fills in
    with each case's chain, so one profile serves chains of any length on the case's own mocks.

    ``provider`` is a JSON-like table whose string values may hold ``{base_url}``, ``{model}``,
    ``{api_key}``, ``{name}`` and ``{protocol}``; ``config`` is a table in which the string
    ``"{providers}"`` becomes the list of filled-in providers (``single``: keys merged into it for a
    one-provider chain); each of ``headers`` may hold ``{config}``, the config as compact JSON.
    """

    protocols: tuple[str, ...]  # the provider protocols the template can express
    max_providers: int
    provider: Mapping[str, Any]
    config: Mapping[str, Any]
    headers: Mapping[str, str]
    single: Mapping[str, Any] = field(default_factory=dict)

    def reason(self, providers: Sequence[Mapping[str, Any]]) -> str | None:
        """Why the template cannot express this chain, or None."""
        protocols = [str(p["protocol"]) for p in providers]
        if len(protocols) > self.max_providers:
            return f"the profile's template takes at most {self.max_providers} providers, the case has {len(protocols)}"
        other = sorted(set(protocols) - set(self.protocols))
        if other:
            return f"the profile's template writes only {list(self.protocols)!r} providers, the case has {other!r}"
        return None

    def case_headers(self, providers: Sequence[Mapping[str, Any]]) -> dict[str, str]:
        """The request headers that configure the gateway for this chain."""
        filled = [
            _fill(
                self.provider,
                {
                    "base_url": str(p["base_url"]),
                    "model": str(p["model"]),
                    "api_key": str(p.get("credentials", {}).get("api_key", "")),
                    "name": str(p["name"]),
                    "protocol": str(p["protocol"]),
                },
            )
            for p in providers
        ]
        config = {**self.config, **(self.single if len(filled) == 1 else {})}
        text = json.dumps(_fill(config, {}, providers=filled), separators=(",", ":"))
        return {name: value.replace("{config}", text) for name, value in self.headers.items()}


def _fill(value: Any, fields: Mapping[str, str], *, providers: list[Any] | None = None) -> Any:
    if isinstance(value, str):
        if value == "{providers}" and providers is not None:
            return providers
        for key, text in fields.items():
            value = value.replace("{" + key + "}", text)
        return value
    if isinstance(value, Mapping):
        return {k: _fill(v, fields, providers=providers) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, fields, providers=providers) for v in value]
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class GatewayProfile:
    """How to drive one OpenAI-compatible gateway (a TOML file under conformance/profiles/).

    Either the gateway runs outside the runner with a static chain (``protocols`` + fixed
    ``ports``; cases run one at a time), or the profile has a ``[launch]`` table and the runner
    writes the gateway's configuration for each case and starts it (cases run concurrently).
    """

    name: str
    model: str  # the model name the gateway routes through its chain
    protocols: tuple[str, ...] = ()  # the protocols of a static gateway's chain, in priority order
    ports: tuple[int, ...] = ()  # the fixed loopback ports that chain points at (the mocks bind them)
    capabilities: tuple[str, ...] = ()
    version: str = "unknown"
    headers: Mapping[str, str] = field(default_factory=dict)
    # The gateway's documented HTTP status -> outcome classes: a status a gateway documents for
    # several conditions (routeproof serve: 502 for every provider failing, an invalid answer, or a
    # provider rejecting the gateway's own key) is consistent with each of them.
    statuses: Mapping[int, tuple[str, ...]] = field(default_factory=lambda: dict(DEFAULT_STATUSES))
    deadline_header: str | None = None  # the caller's deadline in relative ms, if the gateway takes one
    tier_keys: Mapping[str, str] = field(default_factory=dict)  # privacy tier -> gateway key (a tenant per tier)
    launch: Launch | None = None
    # the response header naming the request fields the gateway did not carry (comma-separated;
    # routeproof serve: x-routeproof-dropped); with it the profile may declare the "dropped" capability
    dropped_header: str | None = None
    per_case: PerCase | None = None  # configured per request from a template: any chain length, fresh ports


def load_profile(path: Path) -> GatewayProfile:
    """Read a gateway profile."""
    doc = tomllib.loads(path.read_text(encoding="utf-8"))
    gw = doc.get("gateway", {})
    protocols = tuple(str(p) for p in gw.get("protocols", ()))
    ports = tuple(int(p) for p in gw.get("ports", ()))
    per_case_raw = gw.get("per_case")
    per_case = None
    if per_case_raw is not None:
        per_case = PerCase(
            protocols=tuple(str(p) for p in per_case_raw.get("protocols", ("openai",))),
            max_providers=int(per_case_raw.get("max_providers", 8)),
            provider=dict(per_case_raw["provider"]),
            config=dict(per_case_raw["config"]),
            headers={str(k): str(v) for k, v in per_case_raw["headers"].items()},
            single=dict(per_case_raw.get("single", {})),
        )
    launch_raw = doc.get("launch")
    launch = None
    if launch_raw is not None:
        launch = Launch(
            config=str(launch_raw["config"]),
            command=tuple(str(a) for a in launch_raw["command"]),
            ready_path=str(launch_raw.get("ready_path", "/readyz")),
            start_timeout_s=float(launch_raw.get("start_timeout_s", 30.0)),
            warm_up=bool(launch_raw.get("warm_up", True)),
            warm_up_key=None if launch_raw.get("warm_up_key") is None else str(launch_raw["warm_up_key"]),
        )
    elif per_case is None and (not protocols or len(protocols) != len(ports)):
        raise ValueError(f"{path}: [gateway] needs as many protocols as ports, got {protocols!r} / {ports!r}")
    statuses_raw = gw.get("statuses")
    statuses = (
        dict(DEFAULT_STATUSES)
        if statuses_raw is None
        else {int(k): tuple(str(c) for c in ([v] if isinstance(v, str) else v)) for k, v in statuses_raw.items()}
    )
    unknown = sorted({c for cs in statuses.values() for c in cs} - OUTCOME_CLASSES)
    if unknown:
        raise ValueError(f"{path}: [gateway.statuses] names unknown outcome classes {unknown!r}")
    return GatewayProfile(
        name=str(doc.get("name", path.stem)),
        model=str(gw.get("model", "conformance")),
        protocols=protocols,
        ports=ports,
        capabilities=tuple(str(c) for c in gw.get("capabilities", ())),
        version=str(doc.get("version", "unknown")),
        headers={str(k): str(v) for k, v in gw.get("headers", {}).items()},
        statuses=statuses,
        deadline_header=None if gw.get("deadline_header") is None else str(gw["deadline_header"]),
        tier_keys={str(k): str(v) for k, v in gw.get("tier_keys", {}).items()},
        launch=launch,
        dropped_header=None if gw.get("dropped_header") is None else str(gw["dropped_header"]),
        per_case=per_case,
    )


OUTCOME_CLASSES = frozenset(
    {
        "success",
        "stream_error",
        "terminal",
        "auth",
        "all_failed",
        "deadline",
        "budget",
        "no_eligible",
        "invalid_response",
        "cancelled",
        "other",
    }
)


class GatewaySubject:
    """Drive an OpenAI-compatible gateway.

    A static gateway's configuration is fixed, so a case runs only when its chain has the
    profile's protocols (else n/a), the mocks bind the profile's ports, and cases run one at a
    time; every request reaching the case's mocks is the case's (the gateway sends its configured
    model name, not the run's). A launched gateway is :class:`routeproof.conformance.launch.LaunchedGateway`.
    """

    attribution = "fleet"  # requests are attributed to a case by the mocks they reach, not by model name

    def __init__(self, url: str, profile: GatewayProfile) -> None:
        # a static chain's ports are fixed: one case at a time; a per-case template uses each
        # case's own mocks on fresh ports, so cases run concurrently, one driver per worker
        self.concurrent = profile.per_case is not None
        self._case_headers: dict[str, str] = {}
        self.url = url.rstrip("/")
        self.profile = profile
        self.info: Mapping[str, Any] = {
            "op": "started",
            "name": profile.name,
            "version": profile.version,
            "capabilities": list(profile.capabilities),
        }
        self._client = httpx.AsyncClient(timeout=None)

    @property
    def ports(self) -> tuple[int, ...] | None:
        """The fixed ports the mocks must bind (None: any free ones)."""
        return None if self.profile.per_case is not None else (self.profile.ports or None)

    def fork(self) -> GatewaySubject:
        """The subject for another worker: this one for a static gateway (one case at a time), a
        new one (its own case headers) for a per-case template."""
        return GatewaySubject(self.url, self.profile) if self.profile.per_case is not None else self

    def unsupported_reason(self, case: Mapping[str, Any]) -> str | None:
        """Why the gateway cannot express ``case`` (checked before its mocks start), or None."""
        if self.profile.per_case is not None:
            return self.profile.per_case.reason(case["providers"])
        protocols = tuple(str(p["protocol"]) for p in case["providers"])
        if protocols != self.profile.protocols:
            return f"the gateway's chain is {self.profile.protocols!r}, the case's {protocols!r}"
        return None

    async def configure(self, message: Mapping[str, Any], timeout_s: float) -> Mapping[str, Any]:
        """Check the case's chain against the profile (a static gateway is configured outside; a
        per-case template becomes this case's request headers)."""
        if self.profile.per_case is not None:
            reason = self.profile.per_case.reason(message["providers"])
            if reason is None:
                self._case_headers = self.profile.per_case.case_headers(message["providers"])
        else:
            reason = self.unsupported_reason(message)
        return {"op": "unsupported", "reason": reason} if reason else {"op": "configured"}

    def _headers(self, message: Mapping[str, Any]) -> dict[str, str] | str:
        tier = str(message.get("tier", "standard"))
        headers = {**self.profile.headers, **self._case_headers}
        if message.get("gateway_key"):  # the runner's own call (the warm-up), not a case's
            headers["Authorization"] = f"Bearer {message['gateway_key']}"
        elif self.profile.tier_keys:
            if tier not in self.profile.tier_keys:
                return f"the profile has no gateway key for tier {tier!r}"
            headers["Authorization"] = f"Bearer {self.profile.tier_keys[tier]}"
        elif tier != "standard":
            return "the profile states no gateway key per privacy tier"
        if message.get("traceparent"):
            headers["traceparent"] = str(message["traceparent"])
        deadline_ms = message.get("deadline_ms")
        if deadline_ms is not None and self.profile.deadline_header:
            headers[self.profile.deadline_header] = str(max(1, round(float(deadline_ms))))
        return headers

    async def call(self, message: Mapping[str, Any], timeout_s: float) -> Mapping[str, Any]:
        """POST /v1/chat/completions and classify the answer by the profile's status table."""
        cancel_after_ms = message.get("cancel_after_ms")
        if cancel_after_ms is not None and "cancel" not in self.profile.capabilities:
            return {"op": "unsupported", "reason": "the profile does not declare cancellation (client disconnect)"}
        headers = self._headers(message)
        if isinstance(headers, str):
            return {"op": "unsupported", "reason": headers}
        api = str(message.get("api") or "openai")
        if api not in _API_PATHS:
            return {"op": "unsupported", "reason": f"unknown api {api!r}"}
        body: dict[str, Any] = {
            "model": self.profile.model,
            "messages": message["request"]["messages"],
            "max_tokens": message["request"]["max_tokens"],
            "stream": bool(message.get("stream")),
        }
        if "body" in message:  # case format 3: the caller's own body, in its API's shape
            body = {**message["body"], "model": self.profile.model, "stream": bool(message.get("stream"))}
            if api == "anthropic" and self.profile.tier_keys:
                headers.setdefault("x-api-key", headers.get("Authorization", "").removeprefix("Bearer "))
            if api == "anthropic":
                headers.setdefault("anthropic-version", "2023-06-01")
        elif message["request"].get("tools"):  # the protocol's tools, in OpenAI's function shape
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t["name"],
                        "description": t.get("description", ""),
                        "parameters": t["input_schema"],
                    },
                }
                for t in message["request"]["tools"]
            ]
        deadline_ms = message.get("deadline_ms")
        # With a deadline header the gateway enforces the deadline and the judge checks when it
        # answered; without one the client gives up at the deadline (all a caller could do).
        timeout = timeout_s
        if deadline_ms is not None and not self.profile.deadline_header:
            timeout = min(timeout_s, deadline_ms / 1000)
        started = time.monotonic()
        if cancel_after_ms is not None and cancel_after_ms / 1000 < timeout:
            try:
                async with asyncio.timeout(cancel_after_ms / 1000):
                    return await self._post(body, headers, timeout_s, started, api)
            except TimeoutError:  # the caller went away: the connection is closed mid-call
                return _gw_outcome("cancelled", started, error=f"client disconnected after {cancel_after_ms} ms")
        try:
            async with asyncio.timeout(timeout):
                return await self._post(body, headers, timeout_s, started, api)
        except TimeoutError:
            return _gw_outcome("deadline", started, error=f"client-side timeout after {timeout:.3f} s")

    async def _post(
        self, body: Mapping[str, Any], headers: Mapping[str, str], timeout_s: float, started: float, api: str = "openai"
    ) -> dict[str, Any]:
        url = f"{self.url}{_API_PATHS[api]}"
        try:
            async with self._client.stream("POST", url, json=body, headers=headers) as resp:
                if resp.status_code == 200 and body["stream"]:
                    return self._with_dropped(await _read_sse(resp, started, api), resp)
                raw = await resp.aread()
        except httpx.HTTPError as exc:
            return _gw_outcome("other", started, error=f"{type(exc).__name__}: {exc}")
        text_body = raw.decode("utf-8", "replace")
        if resp.status_code == 200:
            try:
                text, tools = _ANSWER_READERS[api](json.loads(text_body))
            except (ValueError, KeyError, IndexError, TypeError, AttributeError):
                return _gw_outcome("invalid_response", started, error=text_body[:200])
            return self._with_dropped(_gw_outcome("success", started, text=text, tool_calls=tools), resp)
        classes = self.profile.statuses.get(resp.status_code, ("all_failed",))
        out = _gw_outcome(classes[0], started, error=f"HTTP {resp.status_code}: {text_body[:2000]}")
        out["http_status"] = resp.status_code
        out["classes"] = list(classes)
        return out

    def _with_dropped(self, outcome: dict[str, Any], resp: httpx.Response) -> dict[str, Any]:
        """The fields the gateway reported as not carried (its profile's ``dropped_header``)."""
        if self.profile.dropped_header:
            raw = resp.headers.get(self.profile.dropped_header, "")
            outcome["dropped"] = [name.strip() for name in raw.split(",") if name.strip()]
        return outcome

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.aclose()


def _chat_answer(doc: Any) -> tuple[str, list[dict[str, str]]]:
    message = doc["choices"][0]["message"]
    tools = [
        {"name": str(c["function"]["name"]), "arguments": str(c["function"]["arguments"])}
        for c in message.get("tool_calls") or ()
    ]
    return str(message["content"] or ""), tools


def _anthropic_answer(doc: Any) -> tuple[str, list[dict[str, str]]]:
    blocks = doc["content"]
    text = "".join(str(b["text"]) for b in blocks if b["type"] == "text")
    tools = [{"name": str(b["name"]), "arguments": json.dumps(b["input"])} for b in blocks if b["type"] == "tool_use"]
    return text, tools


def _responses_answer(doc: Any) -> tuple[str, list[dict[str, str]]]:
    if doc.get("status") not in {None, "completed"}:
        raise ValueError(f"response status {doc.get('status')!r}")
    text: list[str] = []
    tools: list[dict[str, str]] = []
    for item in doc["output"]:
        if item["type"] == "message":
            text += [str(c["text"]) for c in item["content"] if c["type"] == "output_text"]
        elif item["type"] == "function_call":
            tools.append({"name": str(item["name"]), "arguments": str(item["arguments"])})
    return "".join(text), tools


_ANSWER_READERS = {"openai": _chat_answer, "anthropic": _anthropic_answer, "responses": _responses_answer}
"""A 200 answer's text and complete tool calls, per API shape (a body not of the shape: invalid)."""


async def _read_sse(resp: httpx.Response, started: float, api: str = "openai") -> dict[str, Any]:
    """Read an SSE answer to its end; a cut or an in-band error after the 200 is a stream error."""
    lines: list[str] = []
    read = _typed_sse_text if api != "openai" else _sse_text
    try:
        async for line in resp.aiter_lines():
            lines.append(line)
    except httpx.HTTPError as exc:
        _, text, _ = read("\n".join(lines))
        return _gw_outcome("stream_error", started, text=text, error=f"{type(exc).__name__}: {exc}")
    cls, text, tools = read("\n".join(lines))
    return _gw_outcome(cls, started, text=text, tool_calls=tools)


def _typed_sse_text(raw: str) -> tuple[str, str, list[dict[str, str]]]:
    """The class, text and complete tool calls of a typed-event stream (each event's JSON names its
    ``type``): Anthropic Messages (complete with ``message_stop``) or OpenAI Responses (complete with
    ``response.completed``); an ``error`` or ``response.failed`` event, or a malformed one, fails it.
    A ``data: [DONE]`` line (the Chat Completions terminator, which some gateways also send after a
    typed stream) is no event and neither completes nor fails it."""
    text: list[str] = []
    tools: dict[str, dict[str, str]] = {}
    done = failed = False
    for line in raw.splitlines():
        if not line.startswith("data:") or line[5:].strip() == "[DONE]":
            continue
        try:
            obj = json.loads(line[5:].strip())
        except ValueError:
            failed = True
            continue
        kind = obj.get("type") if isinstance(obj, dict) else None
        if kind in {"error", "response.failed", "response.incomplete"}:
            failed = True
        elif kind in {"message_stop", "response.completed"}:
            done = True
        elif kind == "response.output_text.delta":
            text.append(str(obj.get("delta", "")))
        elif kind == "content_block_delta":
            delta = obj.get("delta") or {}
            if delta.get("type") == "text_delta":
                text.append(str(delta.get("text", "")))
            elif delta.get("type") == "input_json_delta":
                tools.setdefault(str(obj.get("index")), {"name": "", "arguments": ""})["arguments"] += str(
                    delta.get("partial_json", "")
                )
        elif kind == "content_block_start" and (obj.get("content_block") or {}).get("type") == "tool_use":
            tools[str(obj.get("index"))] = {"name": str(obj["content_block"].get("name", "")), "arguments": ""}
        elif kind == "response.output_item.done" and (obj.get("item") or {}).get("type") == "function_call":
            item = obj["item"]
            tools[str(item.get("id"))] = {
                "name": str(item.get("name", "")),
                "arguments": str(item.get("arguments", "")),
            }
    complete = done and not failed
    return ("success" if complete else "stream_error"), "".join(text), list(tools.values()) if complete else []


def _sse_text(raw: str) -> tuple[str, str, list[dict[str, str]]]:
    """The class, the text and the complete tool calls of an OpenAI SSE answer: complete only with
    ``[DONE]`` and no in-band error; tool calls count only when the stream completed."""
    text: list[str] = []
    tools: dict[int, dict[str, str]] = {}
    done = failed = False
    for line in raw.splitlines():
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            done = True
            continue
        try:
            obj = json.loads(data)
        except ValueError:
            failed = True  # a malformed event reached the caller
            continue
        if not isinstance(obj, dict) or "error" in obj:
            failed = True
            continue
        for choice in obj.get("choices") or ():
            delta = choice.get("delta") or {}
            text.append(delta.get("content") or "")
            for call in delta.get("tool_calls") or ():
                entry = tools.setdefault(int(call.get("index", 0)), {"name": "", "arguments": ""})
                function = call.get("function") or {}
                entry["name"] += function.get("name") or ""
                entry["arguments"] += function.get("arguments") or ""
    complete = done and not failed
    return (
        ("success" if complete else "stream_error"),
        "".join(text),
        [tools[i] for i in sorted(tools)] if complete else [],
    )


def _gw_outcome(
    cls: str, started: float, *, text: str = "", error: str = "", tool_calls: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    return {
        "op": "outcome",
        "class": cls,
        "text": text,
        "tool_calls": tool_calls or [],
        "error": error,
        "elapsed_ms": (time.monotonic() - started) * 1000,
    }
