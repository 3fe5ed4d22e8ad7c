"""The exact-money differential as a Hypothesis state machine (issue 26).

One machine is one store (memory, SQLite or a real redis-server) with one or two real Routers on it
(two replicas: each its own store connection), an Anthropic- and an OpenAI-shaped loopback mock
that journal the usage they report (``MockProviderServer.bills``), and the books the bills say the
ledger must hold. Its rules:

- ``call``: one call along a path (plain, streamed, cut before / after the usage event, retried,
  failed over, cancelled by the caller, past the deadline) through one of the Routers;
- ``a_process_dies_holding_a_reservation`` (durable stores): a reservation granted to a process that
  never settles it (it was killed), on a store connection of its own;
- ``leases_run_out``: the store's clock is moved past those leases (virtual time: every store takes
  ``now_ms``), first checking they are still open one millisecond before.

After every step, per scope (each session, each provider's day, the month), the ledger's spent equals
the bills' usage x ``config/pricing.toml``'s price computed from the providers' own field names, plus
the documented worst cases: a stream cut before its usage event books its reservation
(``core/stream_rules.py``), and a lapsed lease books its reservation (the crash rule,
``ledger_store/protocol.py``). Differences are pico-USD integers and must be 0; the only open
reservations are those of dead processes whose lease has not run out.

The memory store has no crash rule (its books die with the process), so those rules do not apply.
Lease expiry uses the stores' own ``now_ms``: a run near midnight UTC could see the day roll over
inside a 60 s lease; the machine then reports a day-scope difference, not a silent pass.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from routeproof.config import load_config
from routeproof.core.identity import parse_provider
from routeproof.core.ledger import Reservation
from routeproof.core.pricing import worst_case_cost_pico_usd
from routeproof.core.routing import resolve
from routeproof.core.types import ChatRequest, Message, ProviderKind
from routeproof.deadline import deadline_in
from routeproof.errors import RouterError
from routeproof.factory import router_from_config, tenant_policy
from routeproof.ledger_store import LedgerStore
from routeproof.ledger_store.config import load_ledger_config, open_store
from routeproof.mock import MockProviderServer, Scripted, Shape
from routeproof.router import Router
from tests.money.exact_money import (
    AGENT,
    ANTHROPIC_MODEL,
    OPENAI_MODEL,
    PATHS,
    PRICES,
    PRICING_TEXT,
    SESSION,
    Path_,
    _spent_by_scope,
    cut_stream,
    invoice_pico_usd,
)

LEASE_S = 60
"""The machine's lease: outlasts any of its calls on a loaded machine, short enough to step past."""

DEAD_SESSION = "killed-process"
STREAMED = {Path_.STREAMED, Path_.CUT_BEFORE_USAGE, Path_.CUT_AFTER_USAGE}
_fresh = itertools.count()


def _scripts(path: Path_) -> tuple[Scripted, ...]:
    """What the Anthropic mock (the primary) answers on ``path``; the OpenAI mock always answers."""
    return {
        Path_.RETRIED: (Scripted(status=503),),
        Path_.FAILED_OVER: (Scripted(status=500),) * 4,  # every attempt on the primary fails: failover
        Path_.CUT_BEFORE_USAGE: cut_stream(after_usage=False),
        Path_.CUT_AFTER_USAGE: cut_stream(after_usage=True),
        Path_.CANCELLED: (Scripted(hang=True),),  # held until the caller gives up: no answer, no bill
        Path_.PAST_DEADLINE: (Scripted(hang=True),),
    }.get(path, ())


def _ledger_table(backend: str, tmp: Path, redis_url: str | None, tag: str) -> str:
    if backend == "memory":
        return ""
    if backend == "sqlite":
        return f'[ledger]\nbackend = "sqlite"\npath = "{tmp / f"{tag}.sqlite3"}"\nlease_s = {LEASE_S}\n'
    assert redis_url is not None, "the redis column needs a redis-server"
    return f'[ledger]\nbackend = "redis"\nurl = "{redis_url}"\nnamespace = "{tag}"\nlease_s = {LEASE_S}\n'


@dataclass(slots=True)
class Books:
    """What the ledger must hold, per scope, in pico-USD; and a count of the steps taken per path."""

    spent: Counter[str] = field(default_factory=Counter)
    paths: Counter[str] = field(default_factory=Counter)

    def book(self, amount: int, *, session: str, provider: str) -> None:
        for scope in ("month", f"session {session}", f"day {provider}"):
            self.spent[scope] += amount


class MoneyMachine(RuleBasedStateMachine):
    """See the module docstring. Configure with :meth:`configure` before running."""

    backend = "memory"
    tmp = Path(".")
    redis_url: str | None = None
    replicas = 1
    seen: ClassVar[Counter[str]] = Counter()  # paths taken over every example of the run (the row's evidence)

    @classmethod
    def configure(cls, backend: str, tmp: Path, redis_url: str | None, replicas: int = 1) -> type[MoneyMachine]:
        """A machine class for one store (``replicas`` routers share a durable one)."""
        assert replicas == 1 or backend != "memory", "a memory ledger is per router: nothing is shared"
        return type(
            f"MoneyMachine_{backend}_x{replicas}",
            (cls,),
            {"backend": backend, "tmp": tmp, "redis_url": redis_url, "replicas": replicas, "seen": Counter()},
        )

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.books = Books()
        self.dead: list[tuple[Reservation, int]] = []  # reservations of killed processes, with their grant time
        self.req = ChatRequest(messages=(Message.user("2+2?"),), max_tokens=64, alias="chat")
        self.worst_case = worst_case_cost_pico_usd(PRICES.price_for(ProviderKind.ANTHROPIC, ANTHROPIC_MODEL), self.req)
        self.routers: list[Router] = []
        self.other: LedgerStore | None = None  # the killed processes' own connection
        self.loop.run_until_complete(self._start())

    async def _start(self) -> None:
        self.anthropic = MockProviderServer(Shape.ANTHROPIC)
        self.openai = MockProviderServer(Shape.OPENAI)
        await self.anthropic.start()
        await self.openai.start()
        tag = f"money-machine-{self.backend}-{next(_fresh)}-{id(self)}"
        self.tmp.mkdir(parents=True, exist_ok=True)
        (self.tmp / "pricing.toml").write_text(PRICING_TEXT, encoding="utf-8")
        agent = self.tmp / f"{tag}.toml"
        agent.write_text(
            AGENT.format(
                pricing=self.tmp / "pricing.toml",
                anthropic=self.anthropic.base_url,
                openai=self.openai.base_url + "/v1",
                anthropic_model=ANTHROPIC_MODEL,
                openai_model=OPENAI_MODEL,
                ledger=_ledger_table(self.backend, self.tmp, self.redis_url, tag),
            ),
            encoding="utf-8",
        )
        config = load_config(agent, environ={"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"})
        self.routers = [router_from_config(config) for _ in range(self.replicas)]  # [ledger] from the file
        self.policy = tenant_policy(config, "chat")
        self.resolved = resolve("chat", self.policy)
        if self.backend != "memory":
            ledger_config, limits = load_ledger_config(agent, environ={})
            self.other = open_store(ledger_config, limits)

    def teardown(self) -> None:
        async def stop() -> None:
            for router in self.routers:
                await router.aclose()
            if self.other is not None:
                await self.other.aclose()
            await self.anthropic.stop()
            await self.openai.stop()

        try:
            self.loop.run_until_complete(stop())
        finally:
            self.loop.close()

    @property
    def store(self) -> LedgerStore:
        """The store the first router books in (read back through it)."""
        store = self.routers[0].ledger_store
        assert store is not None
        return store

    def wall_ms(self) -> int:
        return int(self.routers[0]._ports.ledger.wall_ms())

    # --- rules -------------------------------------------------------------------------------------

    @rule(path=st.sampled_from(PATHS), replica=st.integers(0, 1))
    def call(self, path: Path_, replica: int) -> None:
        """One call along ``path`` through one of the routers; the bills it leaves are booked."""
        router = self.routers[replica % len(self.routers)]
        self.anthropic.reset()
        self.openai.reset()
        self.anthropic.script(*_scripts(path))
        self.loop.run_until_complete(self._call(router, path))
        self.seen[path.value] += 1
        bills = [(ProviderKind.ANTHROPIC, b) for b in self.anthropic.bills]
        bills += [(ProviderKind.OPENAI, b) for b in self.openai.bills]
        for kind, bill in bills:
            if bill.complete or (path is Path_.CUT_AFTER_USAGE and bill.usage):
                self.books.book(invoice_pico_usd(kind, bill), session=SESSION, provider=kind.value)
        if path is Path_.CUT_BEFORE_USAGE:  # no usage reported: the documented worst case
            self.books.book(self.worst_case, session=SESSION, provider="anthropic")

    async def _call(self, router: Router, path: Path_) -> None:
        deadline = deadline_in(0.3 if path is Path_.PAST_DEADLINE else 20.0)

        async def run() -> None:
            if path in STREAMED:
                stream = router.call_provider_streaming(
                    self.req, self.resolved, deadline, self.policy, session_id=SESSION
                )
                async for _ in stream:
                    pass
            else:
                await router.call_provider(self.req, self.resolved, deadline, self.policy, session_id=SESSION)

        if path is Path_.CANCELLED:
            task = asyncio.create_task(run())
            async with asyncio.timeout(20):
                await self.anthropic.wait_for_requests(1)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            return
        with contextlib.suppress(RouterError):  # a cut stream and a deadline end in an error
            await run()

    @precondition(lambda self: self.backend != "memory")
    @rule()
    def a_process_dies_holding_a_reservation(self) -> None:
        """A process reserves the worst case on its own connection and is killed before settling."""
        assert self.other is not None
        now = self.wall_ms()
        granted = self.loop.run_until_complete(
            self.other.try_reserve(
                session_id=DEAD_SESSION,
                provider=parse_provider("anthropic"),
                amount_pico_usd=self.worst_case,
                now_ms=now,
            )
        )
        assert isinstance(granted, Reservation), granted
        self.dead.append((granted, now))
        self.seen["killed holding a reservation"] += 1

    @precondition(lambda self: bool(self.dead))
    @rule()
    def leases_run_out(self) -> None:
        """Still open 1 ms before the first lease ends; all committed (worst case) once the last has."""
        lease_ms = LEASE_S * 1000
        first = min(granted for _, granted in self.dead)
        last = max(granted for _, granted in self.dead)
        before = self.loop.run_until_complete(self.store.totals(now_ms=first + lease_ms - 1))
        open_ids = {r.reservation_id for r in before.open_reservations}
        assert all(r.reservation_id in open_ids for r, _ in self.dead), "a lease ended before its time"
        self.loop.run_until_complete(self.store.roll_over(now_ms=last + lease_ms))
        for _ in self.dead:
            self.books.book(self.worst_case, session=DEAD_SESSION, provider="anthropic")
        self.dead.clear()
        self.seen["leases ran out"] += 1

    # --- the invariant -------------------------------------------------------------------------------

    def differences(self) -> dict[str, int]:
        """Ledger minus books, per scope, pico-USD (only non-zero entries)."""
        totals = self.loop.run_until_complete(self.store.totals(now_ms=self.wall_ms()))
        got = {k: v for k, v in _spent_by_scope(totals).items() if v}
        want = {k: v for k, v in self.books.spent.items() if v}
        return {s: got.get(s, 0) - want.get(s, 0) for s in sorted(set(got) | set(want)) if got.get(s) != want.get(s)}

    @invariant()
    def the_ledger_equals_the_bills(self) -> None:
        """Every scope exact, and only dead processes' unexpired reservations open."""
        diff = self.differences()
        assert diff == {}, f"{self.backend} x{self.replicas}: ledger - bills per scope (pico-USD): {diff}"
        totals = self.loop.run_until_complete(self.store.totals(now_ms=self.wall_ms()))
        assert len(totals.open_reservations) == len(self.dead), totals.open_reservations
