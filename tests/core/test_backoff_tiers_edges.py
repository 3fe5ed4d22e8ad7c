"""Edges of backoff.py and tiers.py that the mutation shards showed unpinned (tools/mutation_gate.py)."""

from __future__ import annotations

from routeproof.core.backoff import UNIT_SCALE, full_jitter_ms, jitter_ms
from routeproof.core.tiers import endpoint_tier, filter_chain
from routeproof.core.types import ChainEntry, PrivacyTier, ProviderKind


def test_jitter_of_one_ms_moves_the_delay() -> None:
    """jitter_ms: a jitter band of exactly 1 ms still moves the delay (5 ms at 20 %: 4..6 ms)."""
    assert jitter_ms(5, 20, 0.0) == 4
    assert jitter_ms(5, 20, 1.0) == 6
    assert jitter_ms(4, 20, 0.0) == 4  # 4 x 20 % rounds down to no band at all


def test_zero_draw_is_zero_even_for_a_huge_cap() -> None:
    """full_jitter_ms: u = 0 gives 0 however large the cap (the draw's numerator is 0, not 1)."""
    assert full_jitter_ms(0, UNIT_SCALE, UNIT_SCALE, 0.0) == 0
    assert full_jitter_ms(0, UNIT_SCALE, UNIT_SCALE, 1.0) == UNIT_SCALE


def test_allow_list_entries_with_a_trailing_dot_match() -> None:
    """endpoint_tier: an allow-listed FQDN written with its trailing dot vouches for the host."""
    assert endpoint_tier(ProviderKind.OLLAMA, "http://gpu-box:11434", frozenset({"gpu-box."})) is PrivacyTier.PRIVATE
    assert endpoint_tier(ProviderKind.OLLAMA, "http://gpu-box:11434", frozenset({".gpu-box"})) is PrivacyTier.STANDARD


def test_local_without_an_endpoint_entry_is_sovereign() -> None:
    """filter_chain: LOCAL missing from endpoint_tiers is Sovereign by default and kept under Sovereign."""
    local = ChainEntry(provider=ProviderKind.LOCAL, model="m", fallback_position=0)
    assert filter_chain((local,), PrivacyTier.SOVEREIGN, {}) == ((local,), ())
