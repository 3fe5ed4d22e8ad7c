import http.client, json, socket, sys, threading, time

P = int(sys.argv[1])
toxic = json.loads(sys.argv[2])


def api(m, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", P, timeout=5)
    c.request(m, path, body=json.dumps(body) if body is not None else None, headers={"User-Agent": "t"})
    r = c.getresponse()
    b = r.read()
    c.close()
    return r.status, b


srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(4)
up = srv.getsockname()[1]


def h():
    while True:
        c, _ = srv.accept()
        c.sendall(b"x" * 1000)
        time.sleep(3)
        c.close()


threading.Thread(target=h, daemon=True).start()
st, b = api("POST", "/proxies", {"name": "c", "listen": "127.0.0.1:0", "upstream": f"127.0.0.1:{up}"})
port = int(json.loads(b)["listen"].rsplit(":", 1)[1])
print("add toxic", api("POST", "/proxies/c/toxics", toxic))
s = socket.create_connection(("127.0.0.1", port), timeout=2)
got = b""
t0 = time.monotonic()
try:
    while True:
        d = s.recv(4096)
        if not d:
            break
        got += d
except Exception as e:
    print("recv:", type(e).__name__, e)
print("client got", len(got), "bytes in", round(time.monotonic() - t0, 2), "s")
time.sleep(0.3)
try:
    print("server still alive:", api("GET", "/version"))
except Exception as e:
    print("server DEAD:", type(e).__name__, e)
