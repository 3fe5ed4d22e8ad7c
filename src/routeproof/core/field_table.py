"""The field table: what happens to each request field of one wire protocol sent out in another.

A row says, for a top-level request key (or a dotted path such as ``tools[].function.strict``) of
``source`` sent to a ``target`` protocol, whether it goes VERBATIM, is TRANSLATED (``note`` is the
mapping), DROPPED (``note`` is the reason; reported to the caller) or REFUSED (``note`` is the reason).
Same protocol is VERBATIM; a field with no row for another protocol is REFUSED. Pure data and lookup.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from routeproof.core.frozen import as_enum, require_str, set_field
from routeproof.core.messages import WireFormat

__all__ = ["ROWS", "FieldRow", "Treatment", "treatment_of"]


class Treatment(enum.Enum):
    """What the router does with one field crossing from one protocol to another."""

    VERBATIM = "verbatim"
    TRANSLATED = "translated"
    DROPPED = "dropped"
    REFUSED = "refused"


@dataclass(frozen=True, slots=True, kw_only=True)
class FieldRow:
    """One field of ``source`` sent to ``target``: its treatment, and the mapping or the reason."""

    source: WireFormat
    field: str
    target: WireFormat
    treatment: Treatment
    note: str

    def __post_init__(self) -> None:
        set_field(self, "source", as_enum(WireFormat, self.source, "FieldRow.source"))
        set_field(self, "target", as_enum(WireFormat, self.target, "FieldRow.target"))
        set_field(self, "treatment", as_enum(Treatment, self.treatment, "FieldRow.treatment"))
        require_str(self.field, "FieldRow.field", empty=False)
        require_str(self.note, "FieldRow.note")


ROWS: tuple[FieldRow, ...] = ()
"""Every known (source, field, target) treatment; filled per protocol pair."""

_INDEX: dict[tuple[WireFormat, str, WireFormat], FieldRow] = {}


def _index() -> dict[tuple[WireFormat, str, WireFormat], FieldRow]:
    if len(_INDEX) != len(ROWS):
        _INDEX.clear()
        _INDEX.update({(row.source, row.field, row.target): row for row in ROWS})
    return _INDEX


def treatment_of(source: WireFormat, field: str, target: WireFormat) -> FieldRow:
    """The row for ``field`` of ``source`` sent to ``target``: same protocol is VERBATIM; no row is REFUSED."""
    source = as_enum(WireFormat, source, "treatment_of source")
    target = as_enum(WireFormat, target, "treatment_of target")
    require_str(field, "treatment_of field", empty=False)
    if source is target:
        return FieldRow(source=source, field=field, target=target, treatment=Treatment.VERBATIM, note="same protocol")
    row = _index().get((source, field, target))
    if row is not None:
        return row
    return FieldRow(
        source=source,
        field=field,
        target=target,
        treatment=Treatment.REFUSED,
        note=f"no mapping to {target.value} in this version",
    )
