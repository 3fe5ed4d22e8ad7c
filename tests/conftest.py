"""Shared test configuration: Hypothesis profiles (HYPOTHESIS_PROFILE) and the stray-loop guard."""

from __future__ import annotations

from tests.support import close_stray_event_loop, load_hypothesis_profiles

__all__ = ["close_stray_event_loop"]  # the autouse fixture, registered by being here

load_hypothesis_profiles()
