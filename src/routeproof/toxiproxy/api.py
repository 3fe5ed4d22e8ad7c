"""The HTTP API of Toxiproxy 2.12.0 (``api.go``): routes, status codes, JSON bodies, error envelopes."""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import random
import secrets
import urllib.parse
from collections.abc import Awaitable, Callable
from types import TracebackType

from routeproof.mock.http import BadRequest, HttpRequest, read_request, response_head
from routeproof.toxiproxy.model import (
    ATTRIBUTES,
    ApiError,
    Toxic,
    decode_attributes,
    decode_body,
    go_bool,
    go_float32,
    go_str,
    refuse_nonsense,
)
from routeproof.toxiproxy.proxy import Proxy, parse_listen, resolved

__all__ = ["LOOPBACK_HOSTS", "VERSION", "ToxiproxyServer"]

VERSION = "2.12.0"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost"})
_XID_ALPHABET = "0123456789abcdefghijklmnopqrstuv"

_Response = tuple[int, list[tuple[str, str]], bytes]
_Handler = Callable[[HttpRequest, list[str]], Awaitable[_Response]]


def _json(status: int, text: str, content_type: str = "application/json") -> _Response:
    return status, [("Content-Type", content_type)], text.encode()


def _error(exc: ApiError) -> _Response:
    body = json.dumps({"error": exc.message, "status": exc.status}, separators=(",", ":")) + "\n"
    return (
        exc.status,
        [("Content-Type", "text/plain; charset=utf-8"), ("X-Content-Type-Options", "nosniff")],
        body.encode(),
    )


def _toxic_body(req: HttpRequest) -> dict[str, object]:
    """A toxic's create or update body: a JSON object, or the 400 Toxiproxy's Go decoder gives."""
    body = decode_body(req.body)
    if not isinstance(body, dict):
        kind = "array" if isinstance(body, list) else ("string" if isinstance(body, str) else "number")
        go_type = "toxics.ToxicWrapper"
        raise ApiError(400, f"bad request body: json: cannot unmarshal {kind} into Go value of type {go_type}")
    return body


def _empty(status: int) -> _Response:
    return status, [], b""


class ToxiproxyServer:
    """A Toxiproxy-compatible server on 127.0.0.1 (``port`` 0 picks a free one).

    Only loopback is served: a ``host`` other than 127.0.0.1/localhost is refused, and every proxy
    listens on 127.0.0.1 whatever host its ``listen`` names.
    """

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, seed: int | None = None) -> None:
        if host not in LOOPBACK_HOSTS:
            raise ValueError(f"the embedded Toxiproxy serves loopback only, got host {host!r}")
        self._requested_port = port
        self._server: asyncio.Server | None = None
        self._port: int | None = None
        self.proxies: dict[str, Proxy] = {}
        self._rng = random.Random(seed)
        self._lock = asyncio.Lock()
        self._routes: list[tuple[tuple[str, ...], dict[str, _Handler]]] = [
            (("version",), {"GET": self._version}),
            (("reset",), {"POST": self._reset}),
            (("populate",), {"POST": self._populate}),
            (("proxies",), {"GET": self._list, "POST": self._create}),
            (
                ("proxies", "*"),
                {"GET": self._show, "POST": self._update, "PATCH": self._update, "DELETE": self._delete},
            ),
            (("proxies", "*", "toxics"), {"GET": self._toxics, "POST": self._toxic_create}),
            (
                ("proxies", "*", "toxics", "*"),
                {
                    "GET": self._toxic_show,
                    "POST": self._toxic_update,
                    "PATCH": self._toxic_update,
                    "DELETE": self._toxic_delete,
                },
            ),
        ]

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Bind the API on 127.0.0.1."""
        self._server = await asyncio.start_server(self._on_connection, "127.0.0.1", self._requested_port)
        self._port = int(self._server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        """Stop every proxy (closing its connections) and the API listener; idempotent."""
        for proxy in list(self.proxies.values()):
            await proxy.stop()
        self.proxies.clear()
        server, self._server = self._server, None
        if server is not None:
            server.close()

    async def __aenter__(self) -> ToxiproxyServer:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    @property
    def port(self) -> int:
        """The API's bound port."""
        if self._port is None:
            raise RuntimeError("the Toxiproxy server is not started")
        return self._port

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    async def populate_from(self, entries: object) -> None:
        """Apply a ``/populate`` array (the ``-config`` file); raises ApiError on a bad entry."""
        await self._apply_populate(entries)

    # -- HTTP -----------------------------------------------------------------------------------

    async def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    req = await read_request(reader)
                except BadRequest:
                    writer.write(response_head(400, [("Content-Length", "0"), ("Connection", "close")]))
                    return
                if req is None:
                    return
                status, headers, body = await self._dispatch(req)
                headers = [*headers, ("Date", email.utils.formatdate(usegmt=True)), ("Content-Length", str(len(body)))]
                if not req.keep_alive:
                    headers.append(("Connection", "close"))
                writer.write(response_head(status, headers) + body)
                await writer.drain()
                if not req.keep_alive:
                    return
        except ConnectionError:
            return
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _dispatch(self, req: HttpRequest) -> _Response:
        path = urllib.parse.unquote(req.target.split("?", 1)[0])
        parts = path.split("/")
        if len(parts) < 2 or parts[0] != "" or any(p == "" for p in parts[1:]):
            return _json(404, "404 page not found\n", "text/plain; charset=utf-8")
        segments = parts[1:]
        for pattern, methods in self._routes:
            if len(pattern) == len(segments) and all(p in {"*", s} for p, s in zip(pattern, segments, strict=True)):
                handler = methods.get(req.method)
                if handler is None:
                    return _empty(405)
                request_id = ("X-Toxiproxy-Request-Id", "".join(secrets.choice(_XID_ALPHABET) for _ in range(20)))
                if (req.header("user-agent") or "").startswith("Mozilla/"):
                    status, headers, body = 403, [("Content-Type", "text/plain; charset=utf-8")], b""
                    headers.append(("X-Content-Type-Options", "nosniff"))
                    return status, [*headers, request_id], b"User agent not allowed\n"
                args = [s for p, s in zip(pattern, segments, strict=True) if p == "*"]
                try:
                    async with self._lock:
                        status, headers, body = await handler(req, args)
                except ApiError as exc:
                    status, headers, body = _error(exc)
                return status, [*headers, request_id], body
        return _json(404, "404 page not found\n", "text/plain; charset=utf-8")

    # -- handlers -------------------------------------------------------------------------------

    async def _version(self, req: HttpRequest, args: list[str]) -> _Response:
        return _json(200, f'{{"version": "{VERSION}"}}\n', "application/json;charset=utf-8")

    def _proxy(self, name: str) -> Proxy:
        proxy = self.proxies.get(name)
        if proxy is None:
            raise ApiError(404, "proxy not found")
        return proxy

    async def _list(self, req: HttpRequest, args: list[str]) -> _Response:
        items = ",".join(f"{json.dumps(n)}:{self.proxies[n].to_json_text()}" for n in sorted(self.proxies))
        return _json(200, "{" + items + "}")

    @staticmethod
    def _proxy_input(
        value: object, *, name: str, listen: str, upstream: str, enabled: bool
    ) -> tuple[str, str, str, bool]:
        if not isinstance(value, dict):
            kind = "array" if isinstance(value, list) else ("string" if isinstance(value, str) else "number")
            raise ApiError(
                400, f"bad request body: json: cannot unmarshal {kind} into Go value of type toxiproxy.Proxy"
            )
        return (
            go_str(value.get("name"), "Proxy.name", name),
            go_str(value.get("listen"), "Proxy.listen", listen),
            go_str(value.get("upstream"), "Proxy.upstream", upstream),
            go_bool(value.get("enabled"), "Proxy.enabled", enabled),
        )

    async def _new_proxy(self, name: str, listen: str, upstream: str, enabled: bool) -> Proxy:
        proxy = Proxy(name, listen or "127.0.0.1:0", upstream, rng=self._rng)
        if enabled:
            await proxy.start()
        return proxy

    async def _create(self, req: HttpRequest, args: list[str]) -> _Response:
        name, listen, upstream, enabled = self._proxy_input(
            decode_body(req.body), name="", listen="", upstream="", enabled=True
        )
        if not name:
            raise ApiError(400, "missing required field: name")
        if not upstream:
            raise ApiError(400, "missing required field: upstream")
        if name in self.proxies:
            raise ApiError(409, "proxy already exists")
        proxy = await self._new_proxy(name, listen, upstream, enabled)
        self.proxies[name] = proxy
        return _json(201, proxy.to_json_text())

    async def _show(self, req: HttpRequest, args: list[str]) -> _Response:
        return _json(200, self._proxy(args[0]).to_json_text())

    async def _update(self, req: HttpRequest, args: list[str]) -> _Response:
        proxy = self._proxy(args[0])
        _, listen, upstream, enabled = self._proxy_input(
            decode_body(req.body), name=proxy.name, listen=proxy.listen, upstream=proxy.upstream, enabled=proxy.enabled
        )
        if resolved(listen) != proxy.listen or upstream != proxy.upstream:
            was_enabled = proxy.enabled
            await proxy.stop()
            proxy.listen, proxy.upstream = listen, upstream
            if was_enabled:
                await proxy.start()
        if enabled and not proxy.enabled:
            await proxy.start()
        elif not enabled and proxy.enabled:
            await proxy.stop()
        return _json(200, proxy.to_json_text())

    async def _delete(self, req: HttpRequest, args: list[str]) -> _Response:
        proxy = self._proxy(args[0])
        await proxy.stop()
        del self.proxies[proxy.name]
        return _empty(204)

    async def _reset(self, req: HttpRequest, args: list[str]) -> _Response:
        for proxy in self.proxies.values():
            if not proxy.enabled:
                await proxy.start()
            for toxic in list(proxy.toxics):
                await proxy.remove_toxic(toxic)
        return _empty(204)

    async def _populate(self, req: HttpRequest, args: list[str]) -> _Response:
        created: list[Proxy] = []
        try:
            entries = decode_body(req.body)
            created = await self._apply_populate(entries)
        except _PopulateFailed as failed:
            return self._populate_error(failed.error, failed.created)
        except ApiError as exc:
            return self._populate_error(exc, created)
        listed = "null" if not created else "[" + ",".join(p.to_json_text() for p in created) + "]"
        return _json(201, f'{{"proxies":{listed}}}')

    @staticmethod
    def _populate_error(exc: ApiError, created: list[Proxy]) -> _Response:
        listed = "null" if not created else "[" + ",".join(p.to_json_text() for p in created) + "]"
        body = f'{{"error":{json.dumps(exc.message)},"status":{exc.status},"proxies":{listed}}}'
        return _json(exc.status, body)

    async def _apply_populate(self, entries: object) -> list[Proxy]:
        if not isinstance(entries, list):
            kind = "object" if isinstance(entries, dict) else ("string" if isinstance(entries, str) else "number")
            raise ApiError(
                400,
                f"bad request body: json: cannot unmarshal {kind} into Go value of type []struct {{ "
                'toxiproxy.Proxy; Enabled *bool "json:\\"enabled\\"" }',
            )
        parsed = [
            self._proxy_input(e, name="", listen="", upstream="", enabled=True)
            for e in entries  # every entry is decoded (and checked) before anything is created
        ]
        for index, (name, _, upstream, _) in enumerate(parsed, start=1):
            if not name:
                raise ApiError(400, f"missing required field: name at proxy {index}")
            if not upstream:
                raise ApiError(400, f"missing required field: upstream at proxy {index}")
        created: list[Proxy] = []
        for name, listen, upstream, enabled in parsed:
            existing = self.proxies.get(name)
            try:
                if existing is not None:
                    if resolved(listen or "127.0.0.1:0") == existing.listen and upstream == existing.upstream:
                        created.append(existing)
                        continue
                    await existing.stop()
                    del self.proxies[name]
                proxy = await self._new_proxy(name, listen, upstream, enabled)
            except ApiError as exc:
                raise _PopulateFailed(exc, created) from exc
            self.proxies[name] = proxy
            created.append(proxy)
        return created

    async def _toxics(self, req: HttpRequest, args: list[str]) -> _Response:
        return _json(200, self._proxy(args[0]).toxics_json_text())

    async def _toxic_create(self, req: HttpRequest, args: list[str]) -> _Response:
        proxy = self._proxy(args[0])
        body = _toxic_body(req)
        name = go_str(body.get("name"), "ToxicWrapper.name", "")
        type_name = go_str(body.get("type"), "ToxicWrapper.type", "")
        stream = go_str(body.get("stream"), "ToxicWrapper.stream", "downstream")
        toxicity = go_float32(body.get("toxicity"), "ToxicWrapper.toxicity", 1.0)
        if stream.lower() not in {"upstream", "downstream"}:
            raise ApiError(400, "stream was invalid, can be either upstream or downstream")
        if not name:
            name = f"{type_name}_{stream}"
        if type_name not in ATTRIBUTES:
            raise ApiError(400, "invalid toxic type")
        if any(t.name == name for t in proxy.toxics):
            raise ApiError(409, "toxic already exists")
        attributes = decode_attributes(type_name, body.get("attributes"))
        refuse_nonsense(type_name, attributes)
        toxic = Toxic(name=name, type=type_name, stream=stream, toxicity=toxicity, attributes=attributes)
        proxy.add_toxic(toxic)
        return _json(200, toxic.to_json_text())

    @staticmethod
    def _toxic(proxy: Proxy, name: str) -> Toxic:
        toxic = next((t for t in proxy.toxics if t.name == name), None)
        if toxic is None:
            raise ApiError(404, "toxic not found")
        return toxic

    async def _toxic_show(self, req: HttpRequest, args: list[str]) -> _Response:
        return _json(200, self._toxic(self._proxy(args[0]), args[1]).to_json_text())

    async def _toxic_update(self, req: HttpRequest, args: list[str]) -> _Response:
        toxic = self._toxic(self._proxy(args[0]), args[1])
        proxy = self._proxy(args[0])
        body = _toxic_body(req)
        toxicity = go_float32(body.get("toxicity"), "ToxicWrapper.toxicity", toxic.toxicity)
        attributes = decode_attributes(toxic.type, body.get("attributes"), toxic.attributes)
        refuse_nonsense(toxic.type, attributes)
        toxic.toxicity, toxic.attributes = toxicity, attributes
        proxy.update_toxic(toxic)
        return _json(200, toxic.to_json_text())

    async def _toxic_delete(self, req: HttpRequest, args: list[str]) -> _Response:
        proxy = self._proxy(args[0])
        await proxy.remove_toxic(self._toxic(proxy, args[1]))
        return _empty(204)


class _PopulateFailed(Exception):
    def __init__(self, error: ApiError, created: list[Proxy]) -> None:
        super().__init__(error.message)
        self.error = error
        self.created = created


def loopback_listen(listen: str) -> str:
    """``listen`` with its host replaced by 127.0.0.1 (what the embedded server binds)."""
    _, port = parse_listen(listen)
    return f"127.0.0.1:{port}"
