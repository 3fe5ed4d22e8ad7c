"""A Hypothesis fuzzer over the gateway's HTTP surface, in process (ASGI) over two loopback mock
providers: every request, however malformed, gets a non-5xx answer in the API's error shape, and no
exception escapes the app or reaches a log. The figures (requests, 5xx, tracebacks) are printed by the
last test (``pytest -s``) and asserted zero."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator, MutableMapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from routeproof.gateway import Backend, GatewayApp
from routeproof.mock import MockProviderServer, Shape
from tests.gateway.conftest import ENVIRON, GATEWAY_KEY, OTHER_KEY, agent_toml

EXAMPLES = 300
"""Per fuzz test; the three run in about 15 s on 2 shared cores."""
PATHS = ("/v1/chat/completions", "/v1/messages", "/v1/models", "/healthz", "/readyz", "/metrics")


@dataclass
class Figures:
    """What the fuzzer sent and saw."""

    requests: int = 0
    by_status: dict[int, int] = field(default_factory=dict)
    escaped: list[str] = field(default_factory=list)  # exceptions that left the app
    logged: list[str] = field(default_factory=list)  # log records carrying a traceback, or ERROR
    deadline_504: int = 0  # a valid request whose own deadline header (1 ms, say) ran out: correct, not a fault

    @property
    def server_errors(self) -> int:
        """Answers with a 5xx status, less the 504s of deadlines the request itself set."""
        return sum(n for status, n in self.by_status.items() if status >= 500) - self.deadline_504


class _Catch(logging.Handler):
    def __init__(self, figures: Figures) -> None:
        super().__init__(logging.DEBUG)
        self.figures = figures

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info or record.levelno >= logging.ERROR:
            self.figures.logged.append(f"{record.name}: {record.getMessage()[:200]}")


@dataclass
class Gateway:
    """The app, the loop it runs on, and the figures."""

    runner: asyncio.Runner
    app: GatewayApp
    figures: Figures


FIGURES = Figures()


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """The gateway app over two mock providers, on one event loop kept for the module."""
    runner = asyncio.Runner()
    stack = AsyncExitStack()
    catch = _Catch(FIGURES)
    loggers = [logging.getLogger(name) for name in ("", "routeproof", "uvicorn", "uvicorn.error", "httpx", "httpcore")]

    async def start() -> GatewayApp:
        anthropic = await stack.enter_async_context(MockProviderServer(Shape.ANTHROPIC))
        openai = await stack.enter_async_context(MockProviderServer(Shape.OPENAI))
        path = tmp_path_factory.mktemp("fuzz") / "agent.toml"
        path.write_text(agent_toml(anthropic.base_url, openai.base_url))
        app = GatewayApp(Backend.load(Path(path), environ=ENVIRON))
        await app.backend.start()
        app.ready = True
        stack.push_async_callback(app.backend.aclose)
        return app

    for logger in loggers:
        logger.addHandler(catch)
    try:
        app = runner.run(start())
        asyncio.set_event_loop(None)  # not current between tests, or the stray-loop guard closes it after the first
        yield Gateway(runner=runner, app=app, figures=FIGURES)
        runner.run(stack.aclose())
    finally:
        for logger in loggers:
            logger.removeHandler(catch)
        runner.close()


async def _drive(app: GatewayApp, scope: dict[str, Any], body: bytes) -> tuple[int, bytes]:
    """One request through the ASGI app; its status and body (a stream's events joined)."""
    sent: list[dict[str, Any]] = []
    never = asyncio.Event()
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await never.wait()  # the client stays: no disconnect
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))

    async with asyncio.timeout(30):
        await app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    return start["status"], b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


def _run(gw: Gateway, method: str, path: str, headers: list[tuple[str, str]], body: bytes) -> tuple[int, bytes]:
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "path": path,
        "raw_path": path.encode("utf-8", "surrogateescape"), "query_string": b"", "root_path": "",
        "scheme": "http", "server": ("127.0.0.1", 8080), "client": ("127.0.0.1", 5555),
        "headers": [(k.lower().encode("latin-1"), v.encode()) for k, v in headers],  # UTF-8 on the wire
    }  # fmt: skip
    figures = gw.figures
    figures.requests += 1
    try:
        status, answer = gw.runner.run(_drive(gw.app, scope, body))
        asyncio.set_event_loop(None)  # the stray-loop guard (tests/support.py) would close the module's loop
    except Exception as exc:  # the finding: anything that escapes the app is a plain-text 500
        figures.escaped.append(f"{method} {path}: {type(exc).__name__}: {exc}"[:300])
        raise
    figures.by_status[status] = figures.by_status.get(status, 0) + 1
    return status, answer


# --- strategies --------------------------------------------------------------------------------------

_HEADER_TEXT = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"), max_size=40)
_ANY_TEXT = st.text(max_size=20) | st.text(st.characters(exclude_categories=()), max_size=4)  # lone surrogates too
_JSON_LEAF = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _ANY_TEXT
_JSON = st.recursive(
    _JSON_LEAF, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=12), c, max_size=4)
)
_AUTH = st.sampled_from(
    [("authorization", f"Bearer {GATEWAY_KEY}"), ("x-api-key", GATEWAY_KEY), ("x-api-key", OTHER_KEY),
     ("authorization", "Bearer nope"), ("authorization", "Basic x"), ("authorization", "Bearer ")]
)  # fmt: skip
_OPTIONAL_HEADERS = st.lists(
    st.sampled_from(["content-type", "x-routeproof-deadline-ms", "anthropic-version", "traceparent",
                     "tracestate", "content-length", "x-api-key", "accept"]).flatmap(
        lambda name: st.tuples(st.just(name), _HEADER_TEXT | st.sampled_from(
            ["application/json", "text/plain", "5000", "²", "9" * 50, "00-" + "0" * 32 + "-" + "0" * 16 + "-01"]
        ))
    ),
    max_size=4,
)  # fmt: skip
_MESSAGE_BASE: dict[str, Any] = {"model": "chat", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}
_FIELDS = ["model", "max_tokens", "messages", "stream", "system", "tools", "tool_choice", "temperature",
           "top_p", "stop", "stop_sequences", "max_completion_tokens", "stream_options", "response_format"]  # fmt: skip
_DEADLINES = (
    st.integers(-5, 10**12).map(str)
    | st.text(st.sampled_from("0123456789²³¹٣൬ +-_.e"), min_size=1, max_size=12)
    | st.integers(10, 6_000).map(lambda n: "9" * n)
)
_CHAT_HEADERS = st.lists(
    st.tuples(st.just("x-routeproof-deadline-ms"), _DEADLINES)
    | st.tuples(st.just("content-type"), st.sampled_from(["application/json", "text/plain", "application/x-ndjson"]))
    | st.tuples(st.just("anthropic-version"), st.just("2023-06-01")),
    max_size=2,
)


@st.composite
def _mutated_request(draw: st.DrawFn) -> bytes:
    """A valid chat request with some fields replaced by arbitrary JSON (the parsers' edge cases)."""
    body: dict[str, Any] = json.loads(json.dumps(_MESSAGE_BASE))
    for name in draw(st.lists(st.sampled_from(_FIELDS), max_size=2)):
        body[name] = draw(_JSON)
    if draw(st.integers(0, 3)) == 0:
        message = draw(st.dictionaries(st.sampled_from(["role", "content", "name", "tool_calls", "tool_call_id"]),
                                       _JSON | st.sampled_from(["user", "assistant", "system", "tool"])))  # fmt: skip
        body["messages"] = [message]
    return json.dumps(body).encode()


_BODIES = st.one_of(
    st.binary(max_size=200),
    _JSON.map(lambda v: json.dumps(v).encode()),
    _mutated_request(),
    st.integers(1, 2000).map(lambda n: b"[" * n + b"]" * n),
    st.just(json.dumps({**_MESSAGE_BASE, "messages": [{"role": "user", "content": "\ud800"}]}).encode()),
)
_FUZZ = settings(
    max_examples=EXAMPLES, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)  # fmt: skip


def _assert_structured(figures: Figures, status: int, answer: bytes, headers: list[tuple[str, str]]) -> None:
    if status == 504 and any(name == "x-routeproof-deadline-ms" for name, _ in headers):
        assert json.loads(answer)["routeproof"]["code"] == "deadline_exceeded"
        figures.deadline_504 += 1
        return
    assert status < 500, (status, answer[:300])
    if status >= 400:
        body = json.loads(answer)
        assert isinstance(body["error"]["message"], str)


@_FUZZ
@given(
    method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "OPTIONS"]),
    path=st.sampled_from(PATHS) | st.text(max_size=30).map(lambda p: "/" + p),
    auth=_AUTH,
    headers=_OPTIONAL_HEADERS,
    body=_BODIES,
)
def test_fuzz_any_request(  # noqa: PLR0917 - one argument per drawn part of the request
    gateway: Gateway, method: str, path: str, auth: tuple[str, str], headers: list[tuple[str, str]], body: bytes
) -> None:
    """Any method, path, headers and body: no 5xx, errors in the API's JSON shape, nothing escapes."""
    status, answer = _run(gateway, method, path, [auth, *headers], body)
    _assert_structured(gateway.figures, status, answer, headers)


@_FUZZ
@given(path=st.sampled_from(PATHS[:2]), body=_mutated_request() | _BODIES, headers=_CHAT_HEADERS)
def test_fuzz_chat_requests(gateway: Gateway, path: str, body: bytes, headers: list[tuple[str, str]]) -> None:
    """Authenticated chat requests: mutated fields, deep nesting, surrogates, odd deadlines and content
    types; a 2xx or a structured 4xx, never a 5xx."""
    status, answer = _run(gateway, "POST", path, [("x-api-key", GATEWAY_KEY), *headers], body)
    _assert_structured(gateway.figures, status, answer, headers)


def test_zz_fuzz_figures(gateway: Gateway, capsys: pytest.CaptureFixture[str]) -> None:
    """The figures of the fuzz tests above: requests sent, 5xx answers (0), tracebacks logged (0)."""
    figures = gateway.figures
    with capsys.disabled():
        print(
            f"\nfuzz figures: requests={figures.requests} 5xx={figures.server_errors} "
            f"own_deadline_504={figures.deadline_504} "
            f"escaped={len(figures.escaped)} tracebacks_logged={len(figures.logged)} "
            f"by_status={sorted(figures.by_status.items())}"
        )
    assert figures.server_errors == 0
    assert figures.escaped == []
    assert figures.logged == []
