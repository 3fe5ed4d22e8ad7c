"""What tests/ and falsification/ share: the Hypothesis profiles and the stray-loop guard."""

from __future__ import annotations

import asyncio
import os
import warnings
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, Phase, settings


def load_hypothesis_profiles() -> None:
    """Register the dev/ci/mutation/falsify profiles and load the one HYPOTHESIS_PROFILE names."""
    settings.register_profile("dev", max_examples=100)
    settings.register_profile("ci", max_examples=200, deadline=None, print_blob=True)
    # mutation shards (tools/mutation_gate.py): a killed mutant needs no shrunk example, only a failure
    settings.register_profile(
        "mutation",
        max_examples=25,
        derandomize=True,
        database=None,
        deadline=None,
        phases=(Phase.explicit, Phase.generate),
        suppress_health_check=[HealthCheck.too_slow],
    )
    settings.register_profile(
        "falsify", max_examples=2_000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    # planted breaks (tools/teeth.py): the ci profile's search, so a break is caught exactly where ci
    # catches it, without shrinking the failure it finds (a caught row needs no minimal example)
    settings.register_profile(
        "teeth",
        parent=settings.get_profile("ci"),
        phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target),
    )
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture(autouse=True)
def close_stray_event_loop(request: pytest.FixtureRequest) -> Iterator[None]:
    """Close the loop looptime 0.9 creates for a *sync* test (``policy.get_event_loop()`` in its
    ``pytest_pyfunc_call``); left open it is garbage-collected in a later test as a ResourceWarning,
    which ``filterwarnings = error`` turns into a failure of whichever test happens to be running.

    The loop is made here, before the test, so it is this guard's to close: a test that calls
    ``asyncio.run`` unsets the current loop, and a loop looked up only afterwards was not found (the
    EXACT-MONEY row run alone, the first test of its process, ended rc 1 on its unclosed loop)."""
    if request.node.get_closest_marker("asyncio") is not None:
        yield
        return
    policy = asyncio.get_event_loop_policy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop: asyncio.AbstractEventLoop | None = policy.get_event_loop()  # looptime's lookup finds this one
        except RuntimeError:  # a loop was set and unset before (asyncio.run): get_event_loop makes none
            loop = None
    yield
    if loop is None or loop.is_running():
        return
    loop.close()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            current = policy.get_event_loop()
        except RuntimeError:
            return
    if current is loop:
        policy.set_event_loop(None)
