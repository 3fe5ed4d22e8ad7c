"""The exact-money differential: real routers over real sockets, the mocks' own bills as the truth.

Every path a call can take — plain, streamed, retried, failed over, a stream cut before or after its
usage event, cancelled, past the deadline — runs against Anthropic- and OpenAI-shaped mock servers
that journal the usage they reported (``MockProviderServer.bills``). The ledger's spent counters,
per scope (the session, each provider's day, the month), are compared with what the bills say the
provider will invoice: the reported usage times ``config/pricing.toml``'s price, computed here from
the providers' own field names (not by routeproof's normaliser). A stream cut before its usage
event has no bill to compare with; the documented rule (``core/stream_rules.py``) books its
reserved worst case, and that is what is expected for it. Differences are reported in pico-USD.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from routeproof.config import load_config
from routeproof.core.pricing import Price, PricingTable, load_pricing
from routeproof.core.routing import resolve
from routeproof.core.types import ChatRequest, Message, ProviderKind
from routeproof.deadline import deadline_in
from routeproof.errors import RouterError
from routeproof.factory import router_from_config, tenant_policy
from routeproof.ledger_store import LedgerTotals
from routeproof.ledger_store.config import load_ledger_config, open_store
from routeproof.mock import CutMode, MockProviderServer, Scripted, Shape
from routeproof.mock.journal import Bill
from routeproof.mock.shapes import RequestView, default_stream
from routeproof.router import Router

ROOT = Path(__file__).resolve().parents[2]
PRICING_TEXT = (ROOT / "config" / "pricing.toml").read_text(encoding="utf-8")
PRICES: PricingTable = load_pricing(PRICING_TEXT)
ANTHROPIC_MODEL, OPENAI_MODEL = "claude-sonnet-4-20250514", "gpt-4o"
SESSION = "exact-money"


class Path_(enum.Enum):
    """The paths a call can take."""

    PLAIN = "plain"
    STREAMED = "streamed"
    RETRIED = "retried"
    FAILED_OVER = "failed over"
    CUT_BEFORE_USAGE = "cut before usage"
    CUT_AFTER_USAGE = "cut after usage"
    CANCELLED = "cancelled"
    PAST_DEADLINE = "past deadline"


PATHS = tuple(Path_)

AGENT = """
pricing = "{pricing}"
[driver.providers.anthropic]
base_url = "{anthropic}"
model = "{anthropic_model}"
[driver.providers.openai]
base_url = "{openai}"
model = "{openai_model}"
[driver.backoff]
policy = "full_jitter"
base_ms = 1
cap_ms = 2
max_retries = 3
[driver.failover]
failure_threshold = 1000
[driver.budget]
session_usd = 100.00
monthly_usd = 1000.00
{ledger}
"""


def ledger_table(backend: str, tmp: Path, redis_url: str | None) -> str:
    """The ``[ledger]`` table of one store."""
    if backend == "memory":
        return ""
    if backend == "sqlite":
        return f'[ledger]\nbackend = "sqlite"\npath = "{tmp / "ledger.sqlite3"}"\n'
    assert redis_url is not None
    return f'[ledger]\nbackend = "redis"\nurl = "{redis_url}"\nnamespace = "exact-{tmp.name}"\n'


def _anthropic_usage(price: Price, bill: Bill) -> int:
    """Anthropic's invoice for a reported usage, from its own field names."""
    written = bill.count("cache_creation_input_tokens")
    one_hour = bill.count("cache_creation.ephemeral_1h_input_tokens")
    return (
        bill.count("input_tokens") * price.input_micro_usd_per_mtok
        + bill.count("output_tokens") * price.output_micro_usd_per_mtok
        + bill.count("cache_read_input_tokens") * price.cache_read_micro_usd_per_mtok
        + (written - one_hour) * price.cache_write_micro_usd_per_mtok
        + one_hour * price.cache_write_1h_rate
    )


def _openai_usage(price: Price, bill: Bill) -> int:
    """OpenAI's invoice: prompt_tokens includes its cached part, billed at the cache-read rate."""
    cached = bill.count("prompt_tokens_details.cached_tokens")
    return (
        (bill.count("prompt_tokens") - cached) * price.input_micro_usd_per_mtok
        + cached * price.cache_read_micro_usd_per_mtok
        + bill.count("completion_tokens") * price.output_micro_usd_per_mtok
    )


def invoice_pico_usd(kind: ProviderKind, bill: Bill) -> int:
    """What the provider bills for one complete answer it reported."""
    if kind is ProviderKind.ANTHROPIC:
        return _anthropic_usage(PRICES.price_for(kind, ANTHROPIC_MODEL), bill)
    return _openai_usage(PRICES.price_for(kind, OPENAI_MODEL), bill)


def cut_stream(*, after_usage: bool) -> tuple[Scripted, ...]:
    """The default Anthropic stream, cut right after its message_delta (the usage), before
    message_stop; or (``after_usage=False``) after its first text, before any output usage."""
    view = RequestView(model=ANTHROPIC_MODEL, stream=True, tool_name=None, include_usage=False)
    events = default_stream(Shape.ANTHROPIC, view)
    if not after_usage:  # message_start, ping, block start, two text deltas (committed): no output usage
        return (Scripted(cut_after_items=5, cut_mode=CutMode.RESET),)
    return (Scripted(cut_after_items=len(events) - 1, cut_mode=CutMode.RESET),)


@dataclass(frozen=True, slots=True, kw_only=True)
class Row:
    """One path on one store: the ledger's spent per scope against the bills', in pico-USD."""

    path: Path_
    store: str
    expected_pico_usd: int
    differences: tuple[tuple[str, int], ...]  # (scope, ledger - expected) per scope
    open_reservations: int

    @property
    def exact(self) -> bool:
        """Every scope equal to the bills, and nothing left reserved."""
        return all(diff == 0 for _, diff in self.differences) and self.open_reservations == 0


def _spent_by_scope(totals: LedgerTotals) -> dict[str, int]:
    scopes = {"month": totals.monthly.spent_pico_usd}
    scopes.update({f"session {name}": account.spent_pico_usd for name, account in totals.sessions})
    scopes.update({f"day {p.as_metric_label()!s}": a.spent_pico_usd for p, a in totals.provider_daily})
    return scopes


async def run_path(path: Path_, backend: str, tmp: Path, redis_url: str | None, *, replicas: int = 1) -> Row:
    """Run one call along ``path`` on a fresh store — one per replica with ``replicas`` routers sharing
    the store, one after the other, each with its own connection — and compare the ledger with the
    mocks' bills."""
    assert replicas == 1 or backend != "memory", "memory stores are per router: nothing is shared"
    _write(tmp / "pricing.toml", PRICING_TEXT)
    async with MockProviderServer(Shape.ANTHROPIC) as anthropic, MockProviderServer(Shape.OPENAI) as openai:
        agent = tmp / "agent.toml"
        _write(
            agent,
            AGENT.format(
                pricing=tmp / "pricing.toml",
                anthropic=anthropic.base_url,
                openai=openai.base_url + "/v1",
                anthropic_model=ANTHROPIC_MODEL,
                openai_model=OPENAI_MODEL,
                ledger=ledger_table(backend, tmp, redis_url),
            ),
        )
        config = load_config(agent, environ={"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"})
        ledger_config, limits = load_ledger_config(agent, environ={})
        assert ledger_config.backend == backend, ledger_config
        routers = [router_from_config(config) for _ in range(replicas)]  # [ledger] read from the file itself
        policy = tenant_policy(config, "chat")
        resolved = resolve("chat", policy)
        req = ChatRequest(messages=(Message.user("2+2?"),), max_tokens=64, alias="chat")
        streamed = path in {Path_.STREAMED, Path_.CUT_BEFORE_USAGE, Path_.CUT_AFTER_USAGE}
        deadline_s = 20.0
        scripts: dict[Path_, tuple[Scripted, ...]] = {
            Path_.RETRIED: (Scripted(status=503),),
            Path_.FAILED_OVER: (Scripted(status=500),) * 3,
            Path_.CUT_BEFORE_USAGE: cut_stream(after_usage=False),
            Path_.CUT_AFTER_USAGE: cut_stream(after_usage=True),
            Path_.CANCELLED: (Scripted(delay_before_headers_s=5.0),),
            Path_.PAST_DEADLINE: (Scripted(delay_before_headers_s=5.0),),
        }
        anthropic.script(*scripts.get(path, ()) * replicas)
        if path is Path_.PAST_DEADLINE:
            deadline_s = 0.3
        reserved = 0

        async def call(router: Router) -> None:
            if streamed:
                stream = router.call_provider_streaming(
                    req, resolved, deadline_in(deadline_s), policy, session_id=SESSION
                )
                async for _ in stream:
                    pass
            else:
                await router.call_provider(req, resolved, deadline_in(deadline_s), policy, session_id=SESSION)

        try:
            for n, router in enumerate(routers, start=1):
                if path is Path_.CANCELLED:
                    task = asyncio.create_task(call(router))
                    await anthropic.wait_for_requests(n)
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)
                else:
                    with contextlib.suppress(RouterError):  # a cut stream or a deadline ends in an error
                        await call(router)
        finally:
            for router in routers:
                await router.aclose()
        # read back through a fresh connection: what a new process (routeproof cost) would see
        store = open_store(ledger_config, limits) if backend != "memory" else routers[0].ledger_store
        assert store is not None
        totals = await store.totals(now_ms=_now_ms(routers[0]))
        if backend != "memory":
            await store.aclose()
        bills = [(ProviderKind.ANTHROPIC, b) for b in anthropic.bills] + [
            (ProviderKind.OPENAI, b) for b in openai.bills
        ]
    # A bill counts when the answer was complete, or (cut after usage) when its usage event was written.
    counted = [(k, b) for k, b in bills if b.complete or (path is Path_.CUT_AFTER_USAGE and b.usage)]
    expected = sum(invoice_pico_usd(kind, bill) for kind, bill in counted)
    if path is Path_.CUT_BEFORE_USAGE:  # no usage reported: the documented rule books the reserved worst case
        reserved = _worst_case(req) * replicas
        expected += reserved
    by_provider: dict[str, int] = {}
    for kind, bill in counted:
        by_provider[f"day {kind.value}"] = by_provider.get(f"day {kind.value}", 0) + invoice_pico_usd(kind, bill)
    if reserved:
        by_provider["day anthropic"] = by_provider.get("day anthropic", 0) + reserved
    want = {"month": expected, f"session {SESSION}": expected, **by_provider}
    got = _spent_by_scope(totals)
    scopes = sorted(set(want) | {k for k, v in got.items() if v})
    differences = tuple((scope, got.get(scope, 0) - want.get(scope, 0)) for scope in scopes)
    return Row(
        path=path,
        store=backend if replicas == 1 else f"{backend} x{replicas} routers",
        expected_pico_usd=expected,
        differences=differences,
        open_reservations=len(totals.open_reservations),
    )


def _worst_case(req: ChatRequest) -> int:
    from routeproof.core.pricing import worst_case_cost_pico_usd

    return worst_case_cost_pico_usd(PRICES.price_for(ProviderKind.ANTHROPIC, ANTHROPIC_MODEL), req)


def _now_ms(router: object) -> int:
    wall: Callable[[], int] = router._ports.ledger.wall_ms  # type: ignore[attr-defined]  # the store's own clock
    return wall()


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


STORE_COLUMNS = ("memory", "sqlite", "redis", "sqlite x2 routers", "redis x2 routers")


async def matrix(tmp: Path, redis_url: str | None) -> list[Row]:
    """Every path on every store (one router), and on each shared store with two routers."""
    stores = ["memory", "sqlite"] + (["redis"] if redis_url is not None else [])
    rows = [
        await run_path(path, store, tmp / f"{store}-{path.name.lower()}", redis_url)
        for store in stores
        for path in PATHS
    ]
    rows += [  # two routers sharing one store, each with its own connection
        await run_path(path, store, tmp / f"{store}-x2-{path.name.lower()}", redis_url, replicas=2)
        for store in stores
        if store != "memory"
        for path in PATHS
    ]
    return rows


def render_matrix(rows: list[Row], extra: dict[str, dict[str, int]] | None = None) -> str:
    """The path x store matrix as markdown: each cell the ledger - bill difference in pico-USD (the
    largest in magnitude over the cell's scopes; 0 means every scope is exact and nothing is left open).
    ``extra`` adds rows (name -> column -> difference), e.g. the two-process kill -9 run."""
    cells: dict[str, dict[str, str]] = {}
    for row in rows:
        worst = max((diff for _, diff in row.differences), key=abs, default=0)
        text = f"{worst:+,d}" if worst else "0"
        if row.open_reservations:
            text += f" ({row.open_reservations} open)"
        cells.setdefault(row.path.value, {})[row.store] = text
    for name, columns in (extra or {}).items():
        cells[name] = {column: f"{diff:+,d}" if diff else "0" for column, diff in columns.items()}
    head = "| path | " + " | ".join(STORE_COLUMNS) + " |\n|---|" + "---|" * len(STORE_COLUMNS) + "\n"
    return head + "".join(
        f"| {path} | " + " | ".join(columns.get(c, "-") for c in STORE_COLUMNS) + " |\n"
        for path, columns in cells.items()
    )
