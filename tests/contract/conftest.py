"""Contract tests: list the pending bindings at the end of the run, so nobody mistakes them for bound."""

from __future__ import annotations

from _pytest.terminal import TerminalReporter

from tests.contract.bindings import binding_codes, load_contract, pending_items, resolve_code


def pytest_terminal_summary(terminalreporter: TerminalReporter) -> None:
    """Print every pending contract item with the code and checks meant to discharge it."""
    pending = pending_items(load_contract())
    if not pending:
        return
    terminalreporter.section(f"provider-routing-v1: {len(pending)} pending bindings")
    for item in pending:
        binding = item.binding or {}
        codes = binding_codes(binding)
        exists = " (code exists)" if codes and all(resolve_code(c) is None for c in codes) else ""
        intended = ", ".join(binding.get("intended_checks") or []) or "-"
        terminalreporter.write_line(f"{item.id}: code {', '.join(codes)}{exists}; intended checks {intended}")
