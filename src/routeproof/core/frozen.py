"""Construction checks and the frozen mapping every value type of :mod:`routeproof.core.types` uses.

The checks are plain code (not ``assert``, not icontract), so ``python -O`` keeps them.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from typing import TypeVar

__all__ = ["FrozenMap", "as_enum", "as_tuple", "frozen_mapping", "require_str", "set_field"]

_K = TypeVar("_K")
_V = TypeVar("_V")
_E = TypeVar("_E", bound=enum.Enum)


def require_str(value: object, where: str, *, empty: bool = True) -> str:
    """``value`` when it is a str (non-empty unless ``empty``); TypeError/ValueError naming ``where``."""
    if not isinstance(value, str):
        raise TypeError(f"{where} must be a str, got {value!r} ({type(value).__name__})")
    if not empty and not value:
        raise ValueError(f"{where} must not be empty")
    return value


def as_enum(cls: type[_E], value: object, where: str) -> _E:
    """``value`` as a member of ``cls``: a member as is, a string by value or (case-insensitive) name."""
    if isinstance(value, cls):
        return value
    if isinstance(value, str):
        for member in cls:
            if value == member.value or value.upper() == member.name:
                return member
    allowed = sorted(m.name.lower() if not isinstance(m.value, str) else m.value for m in cls)
    raise ValueError(f"{where} must be a {cls.__name__} or one of {allowed}, got {value!r}")


def as_tuple(value: object, item: type | tuple[type, ...], where: str) -> tuple[object, ...]:
    """A tuple (or list, copied) whose items are all ``item``; a str is refused, not split."""
    if type(value) is tuple:  # the usual case, checked in one pass: the tuple itself when every item is one
        for element in value:
            if not isinstance(element, item):
                break
        else:
            return value
    if isinstance(value, str | bytes) or not isinstance(value, tuple | list):
        raise TypeError(f"{where} must be a tuple, got {value!r} ({type(value).__name__})")
    for index, element in enumerate(value):
        if not isinstance(element, item):
            names = item.__name__ if isinstance(item, type) else " | ".join(t.__name__ for t in item)
            raise TypeError(f"{where}[{index}] must be a {names}, got {element!r}")
    return tuple(value)


def set_field(obj: object, name: str, value: object) -> None:
    """Set a field of a frozen dataclass from its own ``__post_init__`` (a normalised value)."""
    object.__setattr__(obj, name, value)


class FrozenMap(Mapping[_K, _V]):
    """An immutable, hashable, picklable mapping (a read-only copy made at construction)."""

    __slots__ = ("_data",)

    def __init__(self, items: Mapping[_K, _V] | None = None) -> None:
        self._data: dict[_K, _V] = dict(items or {})

    def __getitem__(self, key: _K) -> _V:
        return self._data[key]

    def __iter__(self) -> Iterator[_K]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        return hash(frozenset(self._data.items()))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self._data) == dict(other)

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"

    def __reduce__(self) -> tuple[type[FrozenMap[_K, _V]], tuple[dict[_K, _V]]]:
        return (type(self), (dict(self._data),))


def frozen_mapping(items: Mapping[str, str]) -> Mapping[str, str]:
    """A read-only copy of ``items``: later changes to the caller's dict cannot reach it."""
    return FrozenMap(items)
