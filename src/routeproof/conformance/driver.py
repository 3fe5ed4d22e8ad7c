"""Driving an implementation: a harness subprocess speaking JSON lines (PROTOCOL.md), or a gateway."""

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
    "GatewayDriver",
    "GatewayProfile",
    "HarnessDriver",
    "HarnessError",
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


class HarnessDriver:
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


@dataclass(frozen=True, slots=True, kw_only=True)
class GatewayProfile:
    """How to drive one OpenAI-compatible gateway (a TOML file under conformance/profiles/)."""

    name: str
    model: str  # the model name the gateway routes through its chain
    protocols: tuple[str, ...]  # the protocols of the gateway's configured chain, in priority order
    ports: tuple[int, ...]  # the fixed loopback ports those deployments point at (the mocks bind them)
    capabilities: tuple[str, ...] = ()
    version: str = "unknown"
    headers: Mapping[str, str] = field(default_factory=dict)


def load_profile(path: Path) -> GatewayProfile:
    """Read a gateway profile."""
    doc = tomllib.loads(path.read_text(encoding="utf-8"))
    gw = doc.get("gateway", {})
    protocols = tuple(str(p) for p in gw.get("protocols", ()))
    ports = tuple(int(p) for p in gw.get("ports", ()))
    if not protocols or len(protocols) != len(ports):
        raise ValueError(f"{path}: [gateway] needs as many protocols as ports, got {protocols!r} / {ports!r}")
    return GatewayProfile(
        name=str(doc.get("name", path.stem)),
        model=str(gw.get("model", "conformance")),
        protocols=protocols,
        ports=ports,
        capabilities=tuple(str(c) for c in gw.get("capabilities", ())),
        version=str(doc.get("version", "unknown")),
        headers={str(k): str(v) for k, v in gw.get("headers", {}).items()},
    )


class GatewayDriver:
    """Drive an OpenAI-compatible gateway whose chain points at the profile's fixed mock ports.

    The gateway's configuration is static, so a case runs only when its chain has the profile's
    protocols (else n/a), the mocks bind the profile's ports, and cases run one at a time.
    """

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

    async def configure(self, message: Mapping[str, Any], timeout_s: float) -> Mapping[str, Any]:
        """Check the case's chain against the profile (the gateway itself is configured outside)."""
        protocols = tuple(str(p["protocol"]) for p in message["providers"])
        if protocols != self.profile.protocols:
            return {
                "op": "unsupported",
                "reason": f"the gateway's chain is {self.profile.protocols!r}, the case's {protocols!r}",
            }
        return {"op": "configured"}

    async def call(self, message: Mapping[str, Any], timeout_s: float) -> Mapping[str, Any]:
        """POST /v1/chat/completions and classify the answer by its HTTP status."""
        if message.get("cancel_after_ms") is not None or message.get("tier", "standard") != "standard":
            return {"op": "unsupported", "reason": "cancellation and tiers cannot be expressed through HTTP"}
        body: dict[str, Any] = {
            "model": self.profile.model,
            "messages": message["request"]["messages"],
            "max_tokens": message["request"]["max_tokens"],
            "stream": bool(message.get("stream")),
        }
        headers = dict(self.profile.headers)
        if message.get("traceparent"):
            headers["traceparent"] = str(message["traceparent"])
        deadline_ms = message.get("deadline_ms")
        timeout = min(timeout_s, deadline_ms / 1000) if deadline_ms is not None else timeout_s
        started = time.monotonic()
        try:
            async with asyncio.timeout(timeout):
                resp = await self._client.post(f"{self.url}/v1/chat/completions", json=body, headers=headers)
        except TimeoutError:
            return _gw_outcome("deadline", started, error="client-side deadline")
        except httpx.HTTPError as exc:
            return _gw_outcome("other", started, error=f"{type(exc).__name__}: {exc}")
        if resp.status_code == 200 and not body["stream"]:
            try:
                text = resp.json()["choices"][0]["message"]["content"] or ""
            except (ValueError, KeyError, IndexError, TypeError):
                return _gw_outcome("invalid_response", started, error=resp.text[:200])
            return _gw_outcome("success", started, text=text)
        if resp.status_code == 200:
            cls_text = _sse_text(resp.text)
            return _gw_outcome(cls_text[0], started, text=cls_text[1])
        cls = {400: "terminal", 404: "terminal", 401: "auth", 403: "auth", 408: "deadline", 504: "deadline"}
        return _gw_outcome(cls.get(resp.status_code, "all_failed"), started, error=resp.text[:300])

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.aclose()


def _sse_text(raw: str) -> tuple[str, str]:
    text: list[str] = []
    done = False
    for line in raw.splitlines():
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            done = True
            continue
        try:
            obj = json.loads(data)
            text.append(obj["choices"][0]["delta"].get("content") or "")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            continue
    return ("success" if done else "stream_error"), "".join(text)


def _gw_outcome(cls: str, started: float, *, text: str = "", error: str = "") -> dict[str, Any]:
    return {
        "op": "outcome",
        "class": cls,
        "text": text,
        "error": error,
        "elapsed_ms": (time.monotonic() - started) * 1000,
    }
