"""hold_back's exact decisions: the hold and the open-tool flag it carries to the next event (a bool)."""

from __future__ import annotations

from routeproof.core.stream_rules import Held, Hold, hold_back
from routeproof.core.types import BlockStop, TextDelta


def test_whole_turn_holds_and_keeps_the_flag() -> None:
    """Holding the whole turn keeps the open-tool flag as it was, exactly False or True."""
    assert hold_back(TextDelta(text="a"), in_tool=False, whole_turn=True) == Held(hold=Hold.HOLD, in_tool=False)
    assert hold_back(TextDelta(text="a"), in_tool=True, whole_turn=True) == Held(hold=Hold.HOLD, in_tool=True)


def test_closing_a_tool_block_releases_and_clears_the_flag() -> None:
    """The BlockStop of an open tool block releases what was held and leaves the flag exactly False."""
    assert hold_back(BlockStop(), in_tool=True, whole_turn=False) == Held(hold=Hold.RELEASE, in_tool=False)


def test_text_outside_a_tool_is_emitted_with_the_flag_kept() -> None:
    """Text outside a tool block is emitted at once, the flag exactly False."""
    assert hold_back(TextDelta(text="a"), in_tool=False, whole_turn=False) == Held(hold=Hold.EMIT, in_tool=False)
