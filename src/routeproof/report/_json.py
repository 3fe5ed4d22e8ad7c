"""Reading the suites' JSON files: typed accessors that name the offending value when a shape is wrong."""

from __future__ import annotations

import json
import math
from pathlib import Path

__all__ = ["ReportInputError", "as_bool", "as_dict", "as_int", "as_list", "as_number", "as_str", "load", "rows_of"]


class ReportInputError(ValueError):
    """A report input file is missing a field or has one of the wrong type."""


def load(path: Path) -> object:
    """The parsed JSON of ``path``; a parse error becomes a :class:`ReportInputError` naming the file."""
    try:
        parsed: object = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportInputError(f"{path.name}: cannot be read as JSON: {exc}") from exc
    return parsed


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def as_dict(value: object, where: str) -> dict[str, object]:
    """``value`` as a JSON object."""
    if not isinstance(value, dict):
        raise ReportInputError(f"{where}: expected an object, got {_show(value)}")
    return {str(k): v for k, v in value.items()}


def as_list(value: object, where: str) -> list[object]:
    """``value`` as a JSON array."""
    if not isinstance(value, list):
        raise ReportInputError(f"{where}: expected an array, got {_show(value)}")
    return list(value)


def as_str(value: object, where: str) -> str:
    """``value`` as a string."""
    if not isinstance(value, str):
        raise ReportInputError(f"{where}: expected a string, got {_show(value)}")
    return value


def as_bool(value: object, where: str) -> bool:
    """``value`` as a boolean."""
    if not isinstance(value, bool):
        raise ReportInputError(f"{where}: expected true or false, got {_show(value)}")
    return value


def as_number(value: object, where: str) -> float:
    """``value`` as a finite number (booleans are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ReportInputError(f"{where}: expected a finite number, got {_show(value)}")
    return float(value)


def as_int(value: object, where: str) -> int:
    """``value`` as an integer."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ReportInputError(f"{where}: expected an integer, got {_show(value)}")
    return value


def rows_of(document: object, key: str, where: str) -> list[dict[str, object]]:
    """The list of objects a suite wrote: the document itself, or the list under ``key`` of an object."""
    if isinstance(document, dict) and key in document:
        document = document[key]
    return [as_dict(row, f"{where}[{i}]") for i, row in enumerate(as_list(document, where))]
