"""The provider-routing-v1 conformance suite: cases as data, run against any router through a
JSON-lines harness or an OpenAI-compatible gateway, judged from the outside (see conformance/)."""

from __future__ import annotations

from routeproof.conformance.cases import CaseError, load_cases, select
from routeproof.conformance.run import CaseResult, RunResult, run_suite

__all__ = ["CaseError", "CaseResult", "RunResult", "load_cases", "run_suite", "select"]
