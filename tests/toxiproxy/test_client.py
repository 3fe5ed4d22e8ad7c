"""The embedded server driven through toxiproxy-python 0.1.1 (and the chaos suite's wrapper over it)."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from tests.toxiproxy.conftest import HAVE_CLIENT, ServerProcess

if HAVE_CLIENT:
    from toxiproxy import Toxiproxy
    from toxiproxy.exceptions import InvalidToxic, NotFound

    from chaos.toxi import Toxi, ToxicSpec


@pytest.fixture
def echo_port() -> Iterator[int]:
    """A threaded echo server on 127.0.0.1."""
    srv = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def handle(conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)

    def loop() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except TimeoutError:
                continue
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    yield int(srv.getsockname()[1])
    stop.set()
    thread.join(timeout=5)
    srv.close()


@pytest.fixture
def client(toxiproxy_server: ServerProcess) -> Toxiproxy:
    """toxiproxy-python pointed at a fresh embedded server."""
    tp = Toxiproxy()
    tp.update_api_consumer("127.0.0.1", toxiproxy_server.port)
    return tp


def rtt_ms(port: int) -> float:
    """One 4-byte round trip through ``port``."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        start = time.monotonic()
        sock.sendall(b"ping")
        assert sock.recv(10) == b"ping"
        return (time.monotonic() - start) * 1000


def test_proxies_listen_on_loopback_whatever_is_asked(client: Toxiproxy, echo_port: int) -> None:
    """A proxy asked to listen on 0.0.0.0 binds 127.0.0.1 (the embedded server serves loopback only)."""
    proxy = client.create(upstream=f"127.0.0.1:{echo_port}", name="anyhost", listen="0.0.0.0:0")
    assert proxy.listen.startswith("127.0.0.1:")
    assert rtt_ms(int(proxy.listen.rsplit(":", 1)[1])) >= 0


def test_latency_toxic_added_and_removed_through_the_client(client: Toxiproxy, echo_port: int) -> None:
    """add_toxic(latency 250) delays the round trip; destroy_toxic removes the delay."""
    proxy = client.create(upstream=f"127.0.0.1:{echo_port}", name="lat")
    port = int(proxy.listen.rsplit(":", 1)[1])
    proxy.add_toxic(type="latency", attributes={"latency": 250})
    assert rtt_ms(port) >= 250
    assert set(proxy.toxics()) == {"latency_downstream"}
    assert proxy.destroy_toxic("latency_downstream")
    assert rtt_ms(port) < 250


def test_nonsense_attributes_are_a_400_not_a_crash(client: Toxiproxy, echo_port: int) -> None:
    """bandwidth rate -1 (which kills the Go server) and a string latency are refused with 400 (InvalidToxic)."""
    proxy = client.create(upstream=f"127.0.0.1:{echo_port}", name="bad")
    with pytest.raises(InvalidToxic):
        proxy.add_toxic(type="bandwidth", attributes={"rate": -1})
    with pytest.raises(InvalidToxic):
        proxy.add_toxic(type="latency", attributes={"latency": "100"})
    with pytest.raises(NotFound):
        proxy.destroy_toxic("bandwidth_downstream")
    assert client.running()


def test_down_refuses_then_restores_and_reset_clears(client: Toxiproxy, echo_port: int) -> None:
    """with proxy.down(): connects are refused; afterwards the same port answers; reset removes toxics."""
    proxy = client.create(upstream=f"127.0.0.1:{echo_port}", name="down")
    port = int(proxy.listen.rsplit(":", 1)[1])
    with proxy.down(), pytest.raises(ConnectionRefusedError):
        rtt_ms(port)
    assert rtt_ms(port) < 1000
    proxy.add_toxic(type="timeout", attributes={"timeout": 0})
    assert client.reset()
    assert proxy.toxics() == {}
    assert rtt_ms(port) < 1000


def test_the_chaos_wrapper_updates_a_live_toxic(toxiproxy_server: ServerProcess, echo_port: int) -> None:
    """Toxi.update (the PATCH toxiproxy-python lacks) changes the latency of an open connection."""
    toxi = Toxi(f"http://127.0.0.1:{toxiproxy_server.port}")
    proxy = toxi.create("upd", f"127.0.0.1:{echo_port}")
    toxi.add(proxy, ToxicSpec(type="latency", attributes={"latency": 20}))
    with socket.create_connection(("127.0.0.1", int(proxy.listen.rsplit(":", 1)[1])), timeout=5) as sock:
        sock.sendall(b"a")
        assert sock.recv(1) == b"a"
        toxi.update(proxy, "latency_downstream", attributes={"latency": 300})
        start = time.monotonic()
        sock.sendall(b"b")
        assert sock.recv(1) == b"b"
        assert time.monotonic() - start >= 0.3
    assert toxi.version() == '{"version": "2.12.0"}\n'


def test_cli_refuses_a_non_loopback_host() -> None:
    """routeproof toxiproxy --host 0.0.0.0 exits 2 without serving."""
    done = subprocess.run(
        [sys.executable, "-m", "routeproof.cli", "toxiproxy", "--host", "0.0.0.0", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert "loopback only" in done.stderr
