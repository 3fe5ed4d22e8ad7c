"""Measure each toxic's behaviour on the byte stream against a running Toxiproxy
on loopback. Usage: toxic_probe.py API_PORT. Everything stays on 127.0.0.1."""

import errno
import http.client
import json
import socket
import sys
import threading
import time

API_PORT = int(sys.argv[1])
HOST = "127.0.0.1"


def api(method, path, body=None):
    c = http.client.HTTPConnection(HOST, API_PORT, timeout=10)
    c.request(
        method, path, body=json.dumps(body) if body is not None else None, headers={"Content-Type": "application/json"}
    )
    r = c.getresponse()
    b = r.read()
    c.close()
    if r.status >= 300:
        raise RuntimeError(f"{method} {path} -> {r.status} {b!r}")
    return json.loads(b) if b else None


def serve(handler):
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((HOST, 0))
    srv.listen(64)

    def loop():
        while True:
            c, _ = srv.accept()
            threading.Thread(target=handler, args=(c,), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()
    return srv.getsockname()[1]


def echo(c):
    try:
        while True:
            d = c.recv(65536)
            if not d:
                break
            c.sendall(d)
    except OSError:
        pass
    finally:
        c.close()


def sender(n, close=True):
    def h(c):
        try:
            c.sendall(b"x" * n)
            if close:
                c.close()
            else:
                time.sleep(30)
        except OSError:
            pass

    return h


ECHO = serve(echo)
SEND100 = serve(sender(100))
SEND100K = serve(sender(100_000))
UPSTREAM_EVENTS = []


def recording(c):
    # records what the upstream sees (bytes, and how the connection ended)
    got = b""
    end = "eof"
    try:
        while True:
            d = c.recv(65536)
            if not d:
                break
            got += d
    except ConnectionResetError:
        end = "ECONNRESET"
    UPSTREAM_EVENTS.append((len(got), end))
    c.close()


RECORD = serve(recording)
n = 0


def proxy(upstream, toxics=()):
    global n
    n += 1
    name = f"t{n}"
    p = api("POST", "/proxies", {"name": name, "listen": "127.0.0.1:0", "upstream": f"127.0.0.1:{upstream}"})
    for t in toxics:
        api("POST", f"/proxies/{name}/toxics", t)
    host, port = p["listen"].rsplit(":", 1)
    return name, int(port)


def connect(port):
    s = socket.create_connection((HOST, port), timeout=10)
    return s


def read_all(s, limit=10):
    """read until EOF/RST; return (bytes, list of recv sizes, how it ended, elapsed)"""
    t0 = time.monotonic()
    buf, sizes = b"", []
    end = "eof"
    s.settimeout(limit)
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            buf += d
            sizes.append(len(d))
    except ConnectionResetError:
        end = "ECONNRESET"
    except socket.timeout:
        end = "still-open(timeout)"
    return buf, sizes, end, time.monotonic() - t0


def rtt(s, msg=b"ping"):
    t0 = time.monotonic()
    s.sendall(msg)
    got = b""
    while len(got) < len(msg):
        d = s.recv(65536)
        if not d:
            break
        got += d
    return time.monotonic() - t0, got


def section(t):
    print(f"\n## {t}")


section("baseline echo rtt")
name, port = proxy(ECHO)
s = connect(port)
print("rtt ms", round(rtt(s)[0] * 1000, 1))
s.close()

section("latency downstream 200ms (toxic added before connect)")
name, port = proxy(ECHO, [{"type": "latency", "attributes": {"latency": 200}}])
s = connect(port)
print("rtt ms", [round(rtt(s)[0] * 1000) for _ in range(3)])
section("latency upstream 100 + downstream 200")
api("POST", f"/proxies/{name}/toxics", {"type": "latency", "stream": "upstream", "attributes": {"latency": 100}})
print("rtt ms (existing conn)", [round(rtt(s)[0] * 1000) for _ in range(2)])
s.close()
section("latency not cumulative: 5 writes 50ms apart, latency 200 downstream")
name, port = proxy(ECHO, [{"type": "latency", "attributes": {"latency": 200}}])
s = connect(port)
t0 = time.monotonic()
for i in range(5):
    s.sendall(bytes([65 + i]))
    time.sleep(0.05)
arr = []
got = b""
while len(got) < 5:
    d = s.recv(10)
    got += d
    arr.append((d, round((time.monotonic() - t0) * 1000)))
print("arrivals (data, ms since first send)", arr)
s.close()
section("latency jitter 100+-50 : 20 samples")
name, port = proxy(ECHO, [{"type": "latency", "attributes": {"latency": 100, "jitter": 50}}])
s = connect(port)
samples = sorted(round(rtt(s)[0] * 1000) for _ in range(20))
print("min/max ms", samples[0], samples[-1])
s.close()

section("bandwidth rate=50 (KB/s) downstream, upstream sends 100000 bytes")
name, port = proxy(SEND100K, [{"type": "bandwidth", "attributes": {"rate": 50}}])
s = connect(port)
buf, sizes, end, el = read_all(s)
print(
    "bytes",
    len(buf),
    "secs",
    round(el, 2),
    "=> B/s",
    round(len(buf) / el),
    "recv count",
    len(sizes),
    "max recv",
    max(sizes),
    end,
)
s.close()

section("slicer avg=10 var=0 delay=20000us downstream, upstream sends 100 bytes")
name, port = proxy(
    SEND100, [{"type": "slicer", "attributes": {"average_size": 10, "size_variation": 0, "delay": 20000}}]
)
s = connect(port)
buf, sizes, end, el = read_all(s)
print("bytes", len(buf), "recv sizes", sizes, end, "secs", round(el, 2))
s.close()
section("slicer avg=10 var=4 delay=20000us")
name, port = proxy(
    SEND100, [{"type": "slicer", "attributes": {"average_size": 10, "size_variation": 4, "delay": 20000}}]
)
s = connect(port)
buf, sizes, end, el = read_all(s)
print("bytes", len(buf), "recv sizes", sizes, end)
s.close()

section("limit_data bytes=10 downstream, upstream sends 100 bytes")
name, port = proxy(SEND100, [{"type": "limit_data", "attributes": {"bytes": 10}}])
s = connect(port)
buf, sizes, end, el = read_all(s)
print("bytes", len(buf), end, "secs", round(el, 3))
s.close()
section("limit_data bytes=10 upstream, client sends 4+4+4 bytes to recorder")
UPSTREAM_EVENTS.clear()
name, port = proxy(RECORD, [{"type": "limit_data", "stream": "upstream", "attributes": {"bytes": 10}}])
s = connect(port)
for _ in range(3):
    try:
        s.sendall(b"abcd")
    except OSError as e:
        print("send error", e)
    time.sleep(0.1)
buf, sizes, end, el = read_all(s, 3)
time.sleep(0.2)
print("client sees", end, "; upstream saw", UPSTREAM_EVENTS)
s.close()

section("slow_close delay=500 downstream; upstream sends 100 bytes then closes")
name, port = proxy(SEND100, [{"type": "slow_close", "attributes": {"delay": 500}}])
s = connect(port)
buf, sizes, end, el = read_all(s)
print("bytes", len(buf), end, "EOF after secs", round(el, 2))
s.close()
name, port = proxy(SEND100)
s = connect(port)
buf, sizes, end, el = read_all(s)
print("(no toxic) bytes", len(buf), end, "EOF after secs", round(el, 3))
s.close()

section("timeout=500 downstream, client sends ping")
name, port = proxy(ECHO, [{"type": "timeout", "attributes": {"timeout": 500}}])
s = connect(port)
s.sendall(b"ping")
buf, sizes, end, el = read_all(s)
print("bytes", len(buf), end, "closed after secs", round(el, 2))
s.close()
section("timeout=500 upstream; client sends a byte every 200ms for 1.2s (is it inactivity-based?)")
UPSTREAM_EVENTS.clear()
name, port = proxy(RECORD, [{"type": "timeout", "stream": "upstream", "attributes": {"timeout": 500}}])
s = connect(port)
t0 = time.monotonic()
closed_at = None
for i in range(6):
    try:
        s.sendall(b"z")
    except OSError as e:
        closed_at = time.monotonic() - t0
        print("send failed", e)
        break
    time.sleep(0.2)
buf, sizes, end, el = read_all(s)
ended = round(time.monotonic() - t0, 2)
time.sleep(0.2)  # the upstream's EOF is recorded by its own thread, maybe just after the client's: let it land
print("client end", end, "at secs since first send", ended, "; upstream saw", UPSTREAM_EVENTS)
s.close()
section("timeout=0 downstream: data dropped, connection kept; then toxic removed")
name, port = proxy(ECHO, [{"type": "timeout", "attributes": {"timeout": 0}}])
s = connect(port)
s.sendall(b"ping")
buf, sizes, end, el = read_all(s, 1)
print("after 1s:", len(buf), end)
api("DELETE", f"/proxies/{name}/toxics/timeout_downstream")
buf, sizes, end, el = read_all(s, 2)
print("after removing toxic:", buf, end, round(el, 3))
s.close()

section("reset_peer timeout=0 downstream, added BEFORE connect; client sends ping")
name, port = proxy(ECHO, [{"type": "reset_peer", "attributes": {"timeout": 0}}])
s = connect(port)
s.sendall(b"ping")
buf, sizes, end, el = read_all(s)
print("client:", buf, end, round(el, 3))
s.close()
section("reset_peer timeout=0, connect then idle 1s (no data)")
s = connect(port)
buf, sizes, end, el = read_all(s, 1)
print("client:", buf, end)
s.close()
section("reset_peer timeout=300 downstream, added AFTER connect")
name, port = proxy(ECHO)
s = connect(port)
print("rtt ok", rtt(s)[1])
api("POST", f"/proxies/{name}/toxics", {"type": "reset_peer", "attributes": {"timeout": 300}})
s.sendall(b"ping")
buf, sizes, end, el = read_all(s)
print("client:", buf, end, round(el, 3))
s.close()
section("reset_peer upstream timeout=0 before connect, recorder upstream")
UPSTREAM_EVENTS.clear()
name, port = proxy(RECORD, [{"type": "reset_peer", "stream": "upstream", "attributes": {"timeout": 0}}])
s = connect(port)
s.sendall(b"hello")
buf, sizes, end, el = read_all(s)
time.sleep(0.2)
print("client:", end, "; upstream saw", UPSTREAM_EVENTS)
s.close()

section("toxicity=0 latency 500 (never applied)")
name, port = proxy(ECHO, [{"type": "latency", "toxicity": 0, "attributes": {"latency": 500}}])
s = connect(port)
print("rtt ms", round(rtt(s)[0] * 1000))
s.close()
section("toxicity=0.5 latency 300: 20 fresh connections, count delayed")
name, port = proxy(ECHO, [{"type": "latency", "toxicity": 0.5, "attributes": {"latency": 300}}])
delayed = 0
for _ in range(20):
    s = connect(port)
    r1 = rtt(s)[0]
    r2 = rtt(s)[0]
    delayed += r1 > 0.2
    if (r1 > 0.2) != (r2 > 0.2):
        print("inconsistent within one connection!", r1, r2)
    s.close()
print("delayed", delayed, "of 20")

section("down: enabled=false")
name, port = proxy(ECHO)
s = connect(port)
print("rtt ok", rtt(s)[1])
api("PATCH", f"/proxies/{name}", {"enabled": False})
buf, sizes, end, el = read_all(s, 2)
print("existing conn:", end)
try:
    connect(port)
    print("new conn: connected?!")
except OSError as e:
    print("new conn:", errno.errorcode.get(e.errno), e)
api("PATCH", f"/proxies/{name}", {"enabled": True})
s = connect(port)
print("re-enabled, same port, rtt ok", rtt(s)[1])
s.close()

section("upstream unreachable")
dead = socket.socket()
dead.bind((HOST, 0))
dead_port = dead.getsockname()[1]
dead.close()
name, port = proxy(dead_port)
s = connect(port)
buf, sizes, end, el = read_all(s, 2)
print("client after connect:", buf, end, round(el, 3))
s.close()

section("toxic update applies to existing connections")
name, port = proxy(ECHO, [{"type": "latency", "attributes": {"latency": 50}}])
s = connect(port)
print("rtt ms", round(rtt(s)[0] * 1000))
api("PATCH", f"/proxies/{name}/toxics/latency_downstream", {"attributes": {"latency": 400}})
print("rtt ms after PATCH", round(rtt(s)[0] * 1000))
api("DELETE", f"/proxies/{name}/toxics/latency_downstream")
print("rtt ms after DELETE", round(rtt(s)[0] * 1000))
s.close()

section("reset")
api("POST", "/reset")
for nm in list(api("GET", "/proxies")):
    api("DELETE", f"/proxies/{nm}")
print("proxies left", api("GET", "/proxies"))
