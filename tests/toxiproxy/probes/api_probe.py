"""Probe a running Toxiproxy server's HTTP API on loopback and print exact
status codes, selected headers and bodies. Usage: api_probe.py PORT UPSTREAM_PORT"""

import http.client
import json
import socket
import sys
import threading

API_PORT = int(sys.argv[1])
HOST = "127.0.0.1"


def echo_server():
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((HOST, 0))
    srv.listen(16)

    def handle(c):
        with c:
            while True:
                d = c.recv(65536)
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


def call(method, path, body=None, raw=None, headers=None, show_headers=False):
    conn = http.client.HTTPConnection(HOST, API_PORT, timeout=10)
    h = {"User-Agent": "probe/1"}
    if headers:
        h.update(headers)
    data = raw if raw is not None else (json.dumps(body) if body is not None else None)
    if data is not None:
        h["Content-Type"] = "application/json"
    conn.request(method, path, body=data, headers=h)
    r = conn.getresponse()
    b = r.read()
    hdrs = {
        k: v
        for k, v in r.getheaders()
        if k.lower() in ("content-type", "x-toxiproxy-request-id", "x-content-type-options", "allow")
    }
    print(
        f"{method} {path} body={data!s:.120} -> {r.status} {hdrs if show_headers else hdrs.get('Content-Type')!s} {b!r:.400}"
    )
    conn.close()
    return r.status, b


print("upstream echo port", UP)
call("GET", "/version", show_headers=True)
call("GET", "/proxies")
call("POST", "/proxies", {"name": "p1", "listen": "127.0.0.1:0", "upstream": f"127.0.0.1:{UP}"}, show_headers=True)
call("POST", "/proxies", {"name": "p1", "listen": "127.0.0.1:0", "upstream": f"127.0.0.1:{UP}"}, show_headers=True)
call("POST", "/proxies", {"listen": "127.0.0.1:0", "upstream": "x:1"})
call("POST", "/proxies", {"name": "nou", "listen": "127.0.0.1:0"})
call("POST", "/proxies", raw="{bad json")
call("POST", "/proxies", raw="")
call("POST", "/proxies", {"name": "dis", "listen": "127.0.0.1:0", "upstream": f"127.0.0.1:{UP}", "enabled": False})
call("POST", "/proxies", {"name": "lh", "listen": "localhost:0", "upstream": f"127.0.0.1:{UP}"})
# port clash
st, b = call("GET", "/proxies/p1")
p1_listen = json.loads(b)["listen"]
call("POST", "/proxies", {"name": "clash", "listen": p1_listen, "upstream": f"127.0.0.1:{UP}"})
call("POST", "/proxies", {"name": "badlisten", "listen": "nonsense", "upstream": f"127.0.0.1:{UP}"})
call("GET", "/proxies")
call("GET", "/proxies/nope")
call("PATCH", "/proxies/nope", {"enabled": False})
call("DELETE", "/proxies/nope")
call("PUT", "/proxies/p1", {"enabled": False}, show_headers=True)
call("GET", "/nothing-here")
call("GET", "/proxies", headers={"User-Agent": "Mozilla/5.0"}, show_headers=True)
call("GET", "/metrics")
# toxics
call("GET", "/proxies/p1/toxics")
call("POST", "/proxies/p1/toxics", {"type": "latency", "attributes": {"latency": 100, "jitter": 10}}, show_headers=True)
call("POST", "/proxies/p1/toxics", {"type": "latency", "attributes": {"latency": 100}})
call(
    "POST",
    "/proxies/p1/toxics",
    {
        "type": "latency",
        "stream": "UPSTREAM",
        "name": "lat_up",
        "toxicity": 0.5,
        "attributes": {"latency": 5, "unknown": 1},
    },
)
call("POST", "/proxies/p1/toxics", {"type": "nosuch"})
call("POST", "/proxies/p1/toxics", {})
call("POST", "/proxies/p1/toxics", {"type": "latency", "stream": "sideways"})
call("POST", "/proxies/p1/toxics", {"type": "latency", "name": "badattr", "attributes": {"latency": "100"}})
call("POST", "/proxies/p1/toxics", {"type": "latency", "name": "fl", "attributes": {"latency": 1.5}})
call("POST", "/proxies/p1/toxics", {"type": "bandwidth", "attributes": {"rate": 10}})
call("POST", "/proxies/p1/toxics", {"type": "slow_close"})
call(
    "POST", "/proxies/p1/toxics", {"type": "timeout", "stream": "upstream", "toxicity": 0, "attributes": {"timeout": 0}}
)
call("POST", "/proxies/p1/toxics", {"type": "reset_peer", "name": "rp", "toxicity": 0.0, "attributes": {"timeout": 0}})
call(
    "POST",
    "/proxies/p1/toxics",
    {"type": "slicer", "attributes": {"average_size": 10, "size_variation": 5, "delay": 100}},
)
call("POST", "/proxies/p1/toxics", {"type": "limit_data", "toxicity": 2.5, "attributes": {"bytes": 5}})
call("POST", "/proxies/p1/toxics", {"type": "noop", "name": "n"})
call("POST", "/proxies/p1/toxics", {"type": "latency", "name": "nulltox", "toxicity": None})
call("POST", "/proxies/nope/toxics", {"type": "latency"})
call("GET", "/proxies/p1/toxics")
call("GET", "/proxies/p1/toxics/latency_downstream")
call("GET", "/proxies/p1/toxics/missing")
call("PATCH", "/proxies/p1/toxics/latency_downstream", {"attributes": {"jitter": 0}})
call(
    "PATCH",
    "/proxies/p1/toxics/latency_downstream",
    {"toxicity": 0.25, "type": "timeout", "stream": "upstream", "name": "renamed"},
)
call("POST", "/proxies/p1/toxics/latency_downstream", {"attributes": {"latency": 7}})
call("PATCH", "/proxies/p1/toxics/missing", {"toxicity": 1})
call("PATCH", "/proxies/p1/toxics/latency_downstream", raw="nope")
call("GET", "/proxies/p1")
call("DELETE", "/proxies/p1/toxics/latency_downstream", show_headers=True)
call("DELETE", "/proxies/p1/toxics/latency_downstream")
# proxy update
call("PATCH", "/proxies/p1", {"enabled": False})
call("POST", "/proxies/p1", {"enabled": True})
call("PATCH", "/proxies/p1", {"listen": "127.0.0.1:0"})
call("PATCH", "/proxies/p1", {"upstream": f"127.0.0.1:{UP}", "name": "ignored"})
call("PATCH", "/proxies/p1", {"listen": "nonsense"})
call("PATCH", "/proxies/p1", raw="[1]")
call("PATCH", "/proxies/dis", {})
# reset
call("POST", "/proxies/p1/toxics", {"type": "latency", "attributes": {"latency": 1}})
call("PATCH", "/proxies/p1", {"enabled": False})
call("POST", "/reset", show_headers=True)
call("GET", "/proxies")
call("GET", "/reset")
# populate
call("POST", "/populate", [], show_headers=True)
call(
    "POST",
    "/populate",
    [
        {"name": "pop1", "listen": "127.0.0.1:0", "upstream": f"127.0.0.1:{UP}"},
        {"name": "pop2", "listen": "127.0.0.1:0", "upstream": f"127.0.0.1:{UP}", "enabled": False},
    ],
)
call("POST", "/populate", [{"name": "pop1", "listen": "127.0.0.1:0", "upstream": f"127.0.0.1:{UP}"}])
call("POST", "/populate", [{"name": "p1", "listen": p1_listen, "upstream": f"127.0.0.1:{UP}"}])
call("POST", "/populate", [{"name": "x"}])
call("POST", "/populate", [{"upstream": "x:1"}])
call("POST", "/populate", {"name": "x"})
call(
    "POST",
    "/populate",
    [
        {"name": "okfirst", "listen": "127.0.0.1:0", "upstream": f"127.0.0.1:{UP}"},
        {"name": "clash2", "listen": "nonsense", "upstream": "x:1"},
    ],
)
call("POST", "/populate", raw="")
call("DELETE", "/proxies/pop1", show_headers=True)
call("GET", "/proxies")
