"""The field table's lookup rules (rows are pinned against the installed SDKs further down)."""

from __future__ import annotations

import pytest

from routeproof.core.field_table import FieldRow, Treatment, treatment_of
from routeproof.core.messages import WireFormat, WireOrigin


def test_same_protocol_is_verbatim() -> None:
    """A field sent out in its own protocol goes verbatim, whatever it is."""
    row = treatment_of(WireFormat.OPENAI_CHAT, "no_such_field", WireFormat.OPENAI_CHAT)
    assert (row.treatment, row.note) == (Treatment.VERBATIM, "same protocol")


def test_unknown_field_to_other_protocol_is_refused() -> None:
    """A field with no row for another protocol is refused, naming the target protocol."""
    row = treatment_of(WireFormat.OPENAI_CHAT, "no_such_field", WireFormat.ANTHROPIC_MESSAGES)
    assert row.treatment is Treatment.REFUSED
    assert row.note == "no mapping to anthropic-messages in this version"


def test_field_row_names_bad_values() -> None:
    """A row with an empty field or an unknown treatment is refused at construction, naming it."""
    with pytest.raises(ValueError, match=r"FieldRow\.field"):
        FieldRow(
            source=WireFormat.OPENAI_CHAT, field="", target=WireFormat.OPENAI_CHAT, treatment=Treatment.DROPPED, note=""
        )
    with pytest.raises(ValueError, match=r"FieldRow\.treatment"):
        FieldRow(source=WireFormat.OPENAI_CHAT, field="x", target=WireFormat.OPENAI_CHAT, treatment="eaten", note="")


def test_wire_origin_checks_headers() -> None:
    """WireOrigin takes lower-case (name, value) str pairs and names a bad one."""
    assert WireOrigin(protocol="openai-chat", body_json="{}").protocol is WireFormat.OPENAI_CHAT
    with pytest.raises(ValueError, match="lower-case"):
        WireOrigin(protocol=WireFormat.OPENAI_CHAT, body_json="{}", headers=(("X-A", "b"),))
    with pytest.raises(TypeError, match=r"headers\[0\]"):
        WireOrigin(protocol=WireFormat.OPENAI_CHAT, body_json="{}", headers=(("x-a",),))
