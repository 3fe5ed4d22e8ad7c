import http.client, json, socket, sys, threading, time

P = int(sys.argv[1])


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
seen = []


def h():
    while True:
        c, _ = srv.accept()
        got = b""
        while True:
            d = c.recv(100)
            if not d:
                break
            got += d
        time.sleep(0.05)
        try:
            c.sendall(b"reply-to-" + got)
            seen.append("upstream sent reply")
        except OSError as e:
            seen.append(f"upstream send failed {e}")
        c.close()


threading.Thread(target=h, daemon=True).start()


def trial(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=3)
    s.sendall(b"ping")
    s.shutdown(socket.SHUT_WR)
    got = b""
    try:
        while True:
            d = s.recv(100)
            if not d:
                break
            got += d
        end = "eof"
    except ConnectionResetError:
        end = "ECONNRESET"
    s.close()
    return got, end


print("direct:", trial(up))
st, b = api("POST", "/proxies", {"name": "hc", "listen": "127.0.0.1:0", "upstream": f"127.0.0.1:{up}"})
port = int(json.loads(b)["listen"].rsplit(":", 1)[1])
print("via toxiproxy:", trial(port))
time.sleep(0.2)
print("upstream:", seen)
api("DELETE", "/proxies/hc")
