"""Drive toxiproxy-python 0.1.1 against a Toxiproxy 2.12.0 server on loopback.
Usage: client_probe.py API_PORT"""

import socket
import sys
import threading
import time
import traceback

from toxiproxy import Toxiproxy
from toxiproxy.api import APIConsumer
from toxiproxy.exceptions import ProxyExists, NotFound, InvalidToxic

API_PORT = int(sys.argv[1])


def echo_server():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)

    def handle(c):
        with c:
            while True:
                try:
                    d = c.recv(65536)
                except OSError:
                    return
                if not d:
                    return
                c.sendall(d)

    def loop():
        while True:
            c, _ = srv.accept()
            threading.Thread(target=handle, args=(c,), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()
    return srv.getsockname()[1]


UP = echo_server()


def rtt(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    t0 = time.monotonic()
    s.sendall(b"ping")
    d = s.recv(10)
    s.close()
    return round((time.monotonic() - t0) * 1000), d


def step(label, fn):
    try:
        r = fn()
        print(f"{label}: OK -> {r!r}")
        return r
    except Exception as e:  # noqa
        print(f"{label}: {type(e).__name__}: {e!s:.300}")
        return None


server = Toxiproxy()
server.update_api_consumer("127.0.0.1", API_PORT)
print("APIConsumer is class-global:", APIConsumer.host, APIConsumer.port)
step("running()", server.running)
step("version()", server.version)
step("destroy_all()", server.destroy_all)
p = step("create()", lambda: server.create(upstream=f"127.0.0.1:{UP}", name="svc"))
print("   proxy attrs:", vars(p))
port = int(p.listen.rsplit(":", 1)[1])
step("rtt baseline", lambda: rtt(port))
step("create() duplicate", lambda: server.create(upstream=f"127.0.0.1:{UP}", name="svc"))
step("add_toxic latency", lambda: p.add_toxic(type="latency", attributes={"latency": 300}))
step("rtt with latency", lambda: rtt(port))
step("toxics()", lambda: {k: vars(v) for k, v in p.toxics().items()})
step("get_toxic", lambda: vars(p.get_toxic("latency_downstream")))
step("add_toxic duplicate", lambda: p.add_toxic(type="latency", attributes={"latency": 300}))
step("add_toxic bad type", lambda: p.add_toxic(type="nosuch"))
step("add_toxic bad stream", lambda: p.add_toxic(type="latency", stream="sideways"))
step(
    "add_toxic upstream reset_peer",
    lambda: p.add_toxic(type="reset_peer", stream="upstream", name="rp", toxicity=0.0, attributes={"timeout": 0}),
)
step("destroy_toxic", lambda: p.destroy_toxic("latency_downstream"))
step("destroy_toxic missing", lambda: p.destroy_toxic("latency_downstream"))
step("rtt after destroy", lambda: rtt(port))
step("disable()", p.disable)
step("rtt while disabled", lambda: rtt(port))
step("enable()", p.enable)
step("rtt after enable", lambda: rtt(port))


def down_ctx():
    with p.down():
        try:
            rtt(port)
            return "connected while down?!"
        except OSError as e:
            return f"inside down(): {e}"


step("down() ctx", down_ctx)
step("rtt after down()", lambda: rtt(port))
step("reset()", server.reset)
step("toxics after reset", lambda: p.toxics())
step("get_proxy", lambda: vars(server.get_proxy("svc")))
step("get_proxy missing", lambda: server.get_proxy("missing"))
step("proxies()", lambda: sorted(server.proxies()))
step("create() port clash (500)", lambda: server.create(upstream=f"127.0.0.1:{UP}", name="clash", listen=p.listen))
step("create() enabled=False", lambda: vars(server.create(upstream=f"127.0.0.1:{UP}", name="off", enabled=False)))
step(
    "populate() first",
    lambda: [
        vars(x) for x in server.populate([{"name": "popa", "upstream": f"127.0.0.1:{UP}", "listen": "127.0.0.1:0"}])
    ],
)
step(
    "populate() again same args (idempotent?)",
    lambda: [
        vars(x) for x in server.populate([{"name": "popa", "upstream": f"127.0.0.1:{UP}", "listen": "127.0.0.1:0"}])
    ],
)
step("populate() without listen", lambda: server.populate([{"name": "popb", "upstream": f"127.0.0.1:{UP}"}]))
step("destroy(non-Proxy)", lambda: server.destroy("svc"))
step("destroy_all()", server.destroy_all)
step("proxies() after destroy_all", server.proxies)
# wrong port: no timeouts configured in requests
server.update_api_consumer("127.0.0.1", 1)
step("running() on closed port", server.running)
step("version() on closed port", server.version)
step("proxies() on closed port", server.proxies)
