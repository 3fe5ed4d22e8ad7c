"""Which Toxiproxy the chaos suite drives, and a thin wrapper over ``toxiproxy-python`` 0.1.1.

Server: ``TOXIPROXY_URL`` when set (a real server someone runs), else ``toxiproxy-server`` from
PATH (started on a free loopback port), else routeproof's embedded server in a background thread
(its own event loop, so the router's loop never shares a scheduler with the network faults).

The wrapper fixes the client's gaps (TOXIPROXY.md §3.1): every HTTP call gets a timeout (the
client forwards no kwargs, so its module-level ``requests`` is replaced by a shim), toxic updates
(PATCH, which the client lacks) go through plain ``requests``, and the class-global host/port is
set once here.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import requests
import toxiproxy.api
from toxiproxy import Toxiproxy
from toxiproxy.proxy import Proxy as ClientProxy

from routeproof.toxiproxy import ToxiproxyServer

__all__ = ["ClientProxy", "Toxi", "ToxicSpec", "ToxiproxyUnderTest", "start_toxiproxy"]

HTTP_TIMEOUT_S = 10.0


class _TimeoutRequests:
    """Stands in for ``requests`` inside ``toxiproxy.api``: the same calls, with a timeout."""

    @staticmethod
    def get(url: str, **kwargs: Any) -> requests.Response:
        return requests.get(url, timeout=HTTP_TIMEOUT_S, **kwargs)

    @staticmethod
    def post(url: str, **kwargs: Any) -> requests.Response:
        return requests.post(url, timeout=HTTP_TIMEOUT_S, **kwargs)

    @staticmethod
    def delete(url: str, **kwargs: Any) -> requests.Response:
        return requests.delete(url, timeout=HTTP_TIMEOUT_S, **kwargs)


toxiproxy.api.requests = _TimeoutRequests()


@dataclass(frozen=True, slots=True, kw_only=True)
class ToxicSpec:
    """One toxic as the scenario table writes it; ``at_s`` > 0 adds it that long after the call starts."""

    type: str
    stream: str = "downstream"
    attributes: Mapping[str, int] = field(default_factory=dict)
    toxicity: float = 1.0
    at_s: float = 0.0
    after_first_event: bool = False  # streamed calls: add it as soon as the caller has seen an event
    name: str = ""

    @property
    def toxic_name(self) -> str:
        """The name it is created under (toxiproxy-python's default ``<type>_<stream>`` unless given)."""
        return self.name or f"{self.type}_{self.stream}"

    def label(self) -> str:
        """Short text for the report, e.g. ``latency(latency=800)@down``."""
        attrs = ",".join(f"{k}={v}" for k, v in self.attributes.items())
        extra = "" if self.toxicity >= 1 else f" p={self.toxicity:g}"
        later = " after the first event" if self.after_first_event else (f" +{self.at_s:g}s" if self.at_s else "")
        direction = "up" if self.stream.lower() == "upstream" else "down"
        return f"{self.type}({attrs})@{direction}{extra}{later}"


class Toxi:
    """The suite's handle on one Toxiproxy server (blocking; call it through ``asyncio.to_thread``)."""

    def __init__(self, url: str) -> None:
        parsed = urllib.parse.urlsplit(url)
        if parsed.hostname not in {"127.0.0.1", "localhost"} or parsed.port is None:
            raise ValueError(f"Toxiproxy must be on loopback with a port, got {url!r}")
        self.url = f"http://{parsed.hostname}:{parsed.port}"
        self._client = Toxiproxy()
        self._client.update_api_consumer(parsed.hostname, parsed.port)

    def version(self) -> str:
        """``/version`` as text (the client returns bytes)."""
        raw = self._client.version()
        return "" if raw is None else bytes(raw).decode()

    def create(self, name: str, upstream: str) -> ClientProxy:
        """A proxy on 127.0.0.1 (a free port) in front of ``upstream``."""
        return self._client.create(upstream=upstream, name=name, listen="127.0.0.1:0")

    def add(self, proxy: ClientProxy, spec: ToxicSpec) -> None:
        """Add one toxic."""
        proxy.add_toxic(
            type=spec.type,
            stream=spec.stream,
            name=spec.toxic_name,
            toxicity=spec.toxicity,
            attributes=dict(spec.attributes),
        )

    def update(self, proxy: ClientProxy, toxic_name: str, *, attributes: Mapping[str, int]) -> None:
        """Change a toxic's attributes (PATCH: toxiproxy-python has no update)."""
        response = requests.patch(
            f"{self.url}/proxies/{proxy.name}/toxics/{toxic_name}",
            json={"attributes": dict(attributes)},
            timeout=HTTP_TIMEOUT_S,
        )
        response.raise_for_status()

    def remove(self, proxy: ClientProxy, toxic_name: str) -> None:
        """Remove one toxic."""
        proxy.destroy_toxic(toxic_name)

    def disable(self, proxy: ClientProxy) -> None:
        """Stop the proxy's listener and close its connections (new connects are refused)."""
        proxy.disable()

    def enable(self, proxy: ClientProxy) -> None:
        """Listen again on the same port."""
        proxy.enable()

    def clear(self, proxy: ClientProxy) -> None:
        """Enable the proxy and remove its toxics (``/reset`` for one proxy)."""
        for name in list(proxy.toxics()):
            proxy.destroy_toxic(name)
        if not proxy.enabled:
            proxy.enable()

    def destroy(self, proxy: ClientProxy) -> None:
        """Delete the proxy (its connections are closed)."""
        proxy.destroy()


@dataclass(frozen=True, slots=True, kw_only=True)
class ToxiproxyUnderTest:
    """The server the suite uses, how it was obtained, and how to stop it."""

    url: str
    kind: str  # "TOXIPROXY_URL", "toxiproxy-server", or "embedded"
    stopper: Callable[[], None] | None = None

    def stop(self) -> None:
        """Stop it if this process started it."""
        if self.stopper is not None:
            self.stopper()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _embedded() -> ToxiproxyUnderTest:
    loop = asyncio.new_event_loop()
    server = ToxiproxyServer(seed=int(os.environ.get("CHAOS_SEED", "14")))
    thread = threading.Thread(target=loop.run_forever, name="embedded-toxiproxy", daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(server.start(), loop).result(timeout=10)

    def stop() -> None:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()

    return ToxiproxyUnderTest(url=server.url, kind="embedded", stopper=stop)


def _external(binary: str) -> ToxiproxyUnderTest:
    port = _free_port()
    proc = subprocess.Popen(
        [binary, "-host", "127.0.0.1", "-port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    until = time.monotonic() + 10
    while time.monotonic() < until:
        try:
            requests.get(f"{url}/version", timeout=1)
            break
        except requests.ConnectionError:
            time.sleep(0.05)

    def stop() -> None:
        proc.terminate()
        proc.wait(timeout=10)

    return ToxiproxyUnderTest(url=url, kind="toxiproxy-server", stopper=stop)


def start_toxiproxy() -> ToxiproxyUnderTest:
    """The server to use: TOXIPROXY_URL, else toxiproxy-server on PATH, else the embedded one."""
    given = os.environ.get("TOXIPROXY_URL")
    if given:
        return ToxiproxyUnderTest(url=given, kind="TOXIPROXY_URL")
    binary = shutil.which("toxiproxy-server")
    if binary is not None:
        return _external(binary)
    return _embedded()
