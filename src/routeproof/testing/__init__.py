"""A test kit: a scripted in-process provider, and the checks any Provider implementation must pass.

- :class:`ScriptedProvider` answers, fails or stalls per call as scripted (steps :class:`Reply`,
  :class:`Failure`, :class:`Stall`), in process, honouring ``timeout_at`` and cancellation like a
  real client. It journals every call. Use it to test code that sits on a Router.
- :func:`check_provider` is the behaviour every :class:`~routeproof.providers.Provider` must show,
  modelled on ``trio.testing.check_one_way_stream``: a factory puts the provider under test in each
  :class:`Scenario` and the check asserts the contract — an answer is normalised and a stream ends
  in exactly one ``MessageStop``; failures are classified (``ProviderCallFailed`` with the right
  kind and status); ``timeout_at`` is honoured; cancellation propagates and closes the response;
  and no secret (the API key) appears in any exception's message or repr, nor the provider's repr.
- :func:`wire_scenario` plays each scenario as an ``httpx.MockTransport`` in one of the three wire
  shapes (Anthropic, OpenAI-compatible, Bedrock), so an httpx-based provider can be checked
  without a network; routeproof runs it against every shipped provider.

Run :func:`check_provider` under virtual time (looptime) or accept about a second of real waiting.

The kit is a package of one module a role, and everything public is re-exported here (import from
``routeproof.testing``): ``scripted`` (the scripted provider), ``scenario`` (the scenarios and the
subject a factory builds), ``conformance`` (the check) and ``wire`` (scenarios as mock transports).
"""

from __future__ import annotations

from routeproof.mock.script import Shape
from routeproof.testing.provider_check import (
    CHECK_TIMEOUT_S,
    TIMEOUT_KINDS,
    TIMEOUT_SLACK_S,
    ProviderCheckFailed,
    check_provider,
)
from routeproof.testing.scenario import Factory, Scenario, Subject
from routeproof.testing.scripted import Failure, Reply, ScriptedProvider, Stall, Step
from routeproof.testing.wire import WireScenario, wire_scenario

__all__ = [
    "CHECK_TIMEOUT_S",
    "TIMEOUT_KINDS",
    "TIMEOUT_SLACK_S",
    "Factory",
    "Failure",
    "ProviderCheckFailed",
    "Reply",
    "Scenario",
    "ScriptedProvider",
    "Shape",
    "Stall",
    "Step",
    "Subject",
    "WireScenario",
    "check_provider",
    "wire_scenario",
]
