"""H0-COST: "cost estimation error exceeds 5 % on known pricing", against an independent exact truth."""

from __future__ import annotations

import random
import tomllib
from fractions import Fraction
from pathlib import Path

import pytest

from falsification.report import record_verdict
from routeproof.core.ledger import PICO_USD_PER_USD, cost_pico_usd, load_pricing
from routeproof.core.types import ProviderKind, Usage

pytestmark = pytest.mark.falsify

PRICING_TEXT = (Path(__file__).resolve().parents[1] / "config" / "pricing.toml").read_text(encoding="utf-8")
FIELDS = ("input_per_mtok", "output_per_mtok", "cache_read_per_mtok", "cache_write_per_mtok")


def test_h0_cost_estimation_error() -> None:
    """H0-COST: 1,000 generated usages over the pricing table; ledger cost vs Fraction truth from the TOML text."""
    table = load_pricing(PRICING_TEXT)
    truth_rates = tomllib.loads(PRICING_TEXT, parse_float=Fraction)  # independent parse: Fraction, not Decimal
    models = [(ProviderKind(p), m) for p, ms in truth_rates.items() for m in ms]
    rng = random.Random(5)
    errors: list[Fraction] = []
    for _ in range(1_000):
        kind, model = rng.choice(models)
        tokens = (
            rng.randrange(0, 200_000),
            rng.randrange(0, 8_192),
            rng.randrange(0, 100_000),
            rng.randrange(0, 50_000),
        )
        usage = Usage(
            prompt_tokens=tokens[0],
            completion_tokens=tokens[1],
            cached_input_tokens=tokens[2],
            cache_creation_tokens=tokens[3],
        )
        rates = truth_rates[kind.value][model]
        truth_usd = (
            sum((Fraction(t) * Fraction(rates[f]) for t, f in zip(tokens, FIELDS, strict=True)), Fraction(0)) / 10**6
        )
        estimate_usd = Fraction(cost_pico_usd(table.price_for(kind, model), usage), PICO_USD_PER_USD)
        errors.append(abs(estimate_usd - truth_usd) / truth_usd if truth_usd else abs(estimate_usd))
    mean_error = sum(errors, Fraction(0)) / len(errors)
    max_error = max(errors)
    survived = mean_error < Fraction(2, 100) and max_error < Fraction(5, 100)
    record_verdict(
        "H0-COST",
        evidence=(
            f"1000 usages over {len(models)} models: mean relative error {float(mean_error):.3e}, "
            f"max {float(max_error):.3e} (exact integer pico-USD vs Fraction truth; no live provider bills)"
        ),
        survived=survived,
    )
    assert survived
