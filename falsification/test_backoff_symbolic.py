"""FALSIFY-MPA-004 on the CrossHair backend: a solver, not a sampler, looks for a delay past the cap.

Own module: importing the backend switches icontract off for the rest of the process, and the
module is skipped where hypothesis-crosshair is not installed.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routeproof.core.backoff import full_jitter_ms

pytestmark = pytest.mark.falsify
pytest.importorskip("hypothesis_crosshair_provider")


@settings(backend="crosshair", max_examples=100, deadline=None, database=None)
@given(st.integers(0, 2**70), st.integers(1, 10**9), st.integers(0, 10**9), st.floats(0.0, 1.0))
def test_mpa_004_symbolic(attempt: int, base_ms: int, extra_ms: int, u: float) -> None:
    """FALSIFY-MPA-004 on the CrossHair backend: a solver searches for a delay above the cap."""
    cap_ms = base_ms + extra_ms
    delay = full_jitter_ms(attempt, base_ms, cap_ms, u)
    assert 0 <= delay <= cap_ms  # asserted here: under this backend icontract checks are off
