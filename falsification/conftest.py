"""Shared test configuration: Hypothesis profiles chosen with HYPOTHESIS_PROFILE."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=100)
settings.register_profile("ci", max_examples=200, deadline=None, print_blob=True)
settings.register_profile("mutation", max_examples=50, derandomize=True, database=None, deadline=None)
settings.register_profile(
    "falsify", max_examples=2_000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
