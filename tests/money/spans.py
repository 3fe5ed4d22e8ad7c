"""Test kit for attempt spans against the ledger: a recording tracer, a log of the ledger's settlements
(one per attempt, in order), and the per-attempt comparison with the mocks' bills."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_ON
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as ga

from routeproof.core.ledger import Reservation
from routeproof.core.types import ProviderKind
from routeproof.mock.journal import Bill
from routeproof.ports import Ledger
from tests.money.exact_money import invoice_pico_usd

__all__ = ["Settlement", "attempt_spans", "check_attempts", "record_settlements", "recording_tracer"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Settlement:
    """One attempt's settlement as the router handed it to the ledger store."""

    provider: str
    booked_pico_usd: int


def recording_tracer(monkeypatch: pytest.MonkeyPatch) -> InMemorySpanExporter:
    """A recording SDK tracer provider for routeproof's spans (the global one may be set already)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_ON)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    return exporter


def record_settlements(monkeypatch: pytest.MonkeyPatch) -> list[Settlement]:
    """Every ``Ledger.settle`` the router makes from now on (one per attempt that reserved), in order."""
    log: list[Settlement] = []
    settle = Ledger.settle

    async def recorded(self: Ledger, reservation: Reservation | None, *, booked_pico_usd: int, succeeded: bool) -> None:
        if reservation is not None:
            log.append(Settlement(provider=reservation.provider.value, booked_pico_usd=booked_pico_usd))
        await settle(self, reservation, booked_pico_usd=booked_pico_usd, succeeded=succeeded)

    monkeypatch.setattr(Ledger, "settle", recorded)
    return log


def attempt_spans(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    """The CLIENT attempt spans, in the order the attempts began (a streamed one ends last)."""
    spans = [s for s in exporter.get_finished_spans() if s.kind is trace.SpanKind.CLIENT]
    return sorted(spans, key=lambda s: s.start_time or 0)


def _bill_tokens(kind: ProviderKind, bill: Bill) -> tuple[int, int]:
    """(input, output) tokens as the provider reported them, in the conventions' sense (input with
    cache reads and writes), from the provider's own field names."""
    if kind is ProviderKind.ANTHROPIC:
        cached = bill.count("cache_read_input_tokens") + bill.count("cache_creation_input_tokens")
        return bill.count("input_tokens") + cached, bill.count("output_tokens")
    return bill.count("prompt_tokens"), bill.count("completion_tokens")


def check_attempts(
    exporter: InMemorySpanExporter,
    settlements: Sequence[Settlement],
    bills: Sequence[tuple[ProviderKind, Bill]],
    *,
    cut_after_usage: bool = False,
) -> list[ReadableSpan]:
    """Attempt by attempt (spans, the ledger's settlements and the mocks' bills, each in attempt
    order): an answered attempt's span carries the tokens its bill reports and the ledger booked that
    bill's invoice; a failed one has no usage on its span and booked nothing. Returns the spans."""
    spans = attempt_spans(exporter)
    assert len(spans) == len(settlements) == len(bills), (len(spans), settlements, bills)
    for n, (span, settled, (kind, bill)) in enumerate(zip(spans, settlements, bills, strict=True), start=1):
        attrs = dict(span.attributes or {})
        where = f"attempt {n} ({kind.value}, HTTP {bill.status}): span {attrs}, ledger {settled}, bill {bill}"
        assert attrs[ga.GEN_AI_PROVIDER_NAME] == kind.value == settled.provider, where
        if bill.status == 200 and (bill.complete or (cut_after_usage and bill.usage)):  # what it invoices
            tokens = (attrs.get(ga.GEN_AI_USAGE_INPUT_TOKENS), attrs.get(ga.GEN_AI_USAGE_OUTPUT_TOKENS))
            assert tokens == _bill_tokens(kind, bill), where
            assert settled.booked_pico_usd == invoice_pico_usd(kind, bill) > 0, where
        else:
            assert ga.GEN_AI_USAGE_INPUT_TOKENS not in attrs, where
            assert settled.booked_pico_usd == 0, where
    return spans
