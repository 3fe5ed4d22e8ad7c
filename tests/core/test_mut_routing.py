"""Routing details: a skip's public record and resolve's refusal of a non-string alias."""

from __future__ import annotations

from typing import Any

import pytest

from routeproof.core.routing import Skipped, SkipReason, resolve
from routeproof.core.types import ChainEntry, ProviderKind, SkipRecord


def test_a_skip_record_names_the_entry_and_the_reason() -> None:
    """Skipped.as_record keeps the entry's provider, model and position and the reason's value."""
    entry = ChainEntry(provider=ProviderKind.OPENAI, model="gpt-x", fallback_position=2)
    reason = next(iter(SkipReason))
    assert Skipped(entry=entry, reason=reason).as_record() == SkipRecord(
        provider=ProviderKind.OPENAI, model="gpt-x", fallback_position=2, reason=reason.value
    )


def test_resolve_refuses_a_non_string_alias_showing_it() -> None:
    """resolve(5, ...) is a TypeError that shows the value given."""
    policy: Any = None
    with pytest.raises(TypeError, match=r"^resolve\(alias\): alias must be a str, got 5$"):
        resolve(5, policy)  # type: ignore[arg-type]
