"""The content model beyond plain text, and the wire-protocol names: ``from routeproof.content import ...``.

Kept out of ``routeproof.__all__`` (the top level stays small): the blocks, options and protocol
values a request can carry, and the field table saying what each protocol's fields become in another.
"""

from __future__ import annotations

from routeproof.core.field_table import FieldRow, Treatment, treatment_of
from routeproof.core.messages import WireFormat, WireOrigin

__all__ = [
    "FieldRow",
    "Treatment",
    "WireFormat",
    "WireOrigin",
    "treatment_of",
]
