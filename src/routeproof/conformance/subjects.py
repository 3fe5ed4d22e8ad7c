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
from collections.abc import Mapping
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

PROTOCOL_VERSION = "provider-routing-v1/conformance-1"
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


def load_profile(path: Path) -> GatewayProfile:
    """Read a gateway profile."""
    doc = tomllib.loads(path.read_text(encoding="utf-8"))
    gw = doc.get("gateway", {})
    protocols = tuple(str(p) for p in gw.get("protocols", ()))
    ports = tuple(int(p) for p in gw.get("ports", ()))
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
    elif not protocols or len(protocols) != len(ports):
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
    concurrent = False  # one case at a time (the chain's ports are fixed)

    def __init__(self, url: str, profile: GatewayProfile) -> None:
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
        return self.profile.ports or None

    def fork(self) -> GatewaySubject:
        """The subject for another worker: this one (a static gateway runs one case at a time)."""
        return self

    def unsupported_reason(self, case: Mapping[str, Any]) -> str | None:
        """Why the gateway cannot express ``case`` (checked before its mocks start), or None."""
        protocols = tuple(str(p["protocol"]) for p in case["providers"])
        if protocols != self.profile.protocols:
            return f"the gateway's chain is {self.profile.protocols!r}, the case's {protocols!r}"
        return None

    async def configure(self, message: Mapping[str, Any], timeout_s: float) -> Mapping[str, Any]:
        """Check the case's chain against the profile (the gateway itself is configured outside)."""
        reason = self.unsupported_reason(message)
        return {"op": "unsupported", "reason": reason} if reason else {"op": "configured"}

    def _headers(self, message: Mapping[str, Any]) -> dict[str, str] | str:
        tier = str(message.get("tier", "standard"))
        headers = dict(self.profile.headers)
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
        body: dict[str, Any] = {
            "model": self.profile.model,
            "messages": message["request"]["messages"],
            "max_tokens": message["request"]["max_tokens"],
            "stream": bool(message.get("stream")),
        }
        if message["request"].get("tools"):  # the protocol's tools, in OpenAI's function shape
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
                    return await self._post(body, headers, timeout_s, started)
            except TimeoutError:  # the caller went away: the connection is closed mid-call
                return _gw_outcome("cancelled", started, error=f"client disconnected after {cancel_after_ms} ms")
        try:
            async with asyncio.timeout(timeout):
                return await self._post(body, headers, timeout_s, started)
        except TimeoutError:
            return _gw_outcome("deadline", started, error=f"client-side timeout after {timeout:.3f} s")

    async def _post(
        self, body: Mapping[str, Any], headers: Mapping[str, str], timeout_s: float, started: float
    ) -> dict[str, Any]:
        url = f"{self.url}/v1/chat/completions"
        try:
            async with self._client.stream("POST", url, json=body, headers=headers) as resp:
                if resp.status_code == 200 and body["stream"]:
                    return await _read_sse(resp, started)
                raw = await resp.aread()
        except httpx.HTTPError as exc:
            return _gw_outcome("other", started, error=f"{type(exc).__name__}: {exc}")
        text_body = raw.decode("utf-8", "replace")
        if resp.status_code == 200:
            try:
                message = json.loads(text_body)["choices"][0]["message"]
                text = message["content"] or ""
                tools = [
                    {"name": str(c["function"]["name"]), "arguments": str(c["function"]["arguments"])}
                    for c in message.get("tool_calls") or ()
                ]
            except (ValueError, KeyError, IndexError, TypeError, AttributeError):
                return _gw_outcome("invalid_response", started, error=text_body[:200])
            return _gw_outcome("success", started, text=text, tool_calls=tools)
        classes = self.profile.statuses.get(resp.status_code, ("all_failed",))
        out = _gw_outcome(classes[0], started, error=f"HTTP {resp.status_code}: {text_body[:2000]}")
        out["http_status"] = resp.status_code
        out["classes"] = list(classes)
        return out

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.aclose()


async def _read_sse(resp: httpx.Response, started: float) -> dict[str, Any]:
    """Read an SSE answer to its end; a cut or an in-band error after the 200 is a stream error."""
    lines: list[str] = []
    try:
        async for line in resp.aiter_lines():
            lines.append(line)
    except httpx.HTTPError as exc:
        _, text, _ = _sse_text("\n".join(lines))
        return _gw_outcome("stream_error", started, text=text, error=f"{type(exc).__name__}: {exc}")
    cls, text, tools = _sse_text("\n".join(lines))
    return _gw_outcome(cls, started, text=text, tool_calls=tools)


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
