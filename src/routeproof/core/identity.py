"""Who a provider is: its kind (the family, the metric label) and its name (the instance).

Providers are configured and addressed by name (``[driver.providers.NAME]``); a kind is a property
of an instance. Chains, health, latency, budgets, attempt records and skips all refer to instances.
Low churn by design: :class:`ProviderKind` is a ``StrEnum``, so a kind compares and hashes like its
value. An instance is identified by its kind member itself when its name spells the kind
(``openai``; ``realizar`` for ``local``) or when it is the only instance of its kind (so a
configuration with one provider per kind keeps every record, ledger key and label it had). Any
other instance is a :class:`ProviderName`: a ``str`` that compares and hashes as the name and
carries the kind it is an instance of, so metric labels stay the seed's closed set (the kind's
value, never an instance name). :func:`instance_ids` is the one rule; a chain may address an
instance by its identity or by its name.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TypeAlias

__all__ = [
    "KIND_ALIASES",
    "PrivacyTier",
    "ProviderId",
    "ProviderKind",
    "ProviderName",
    "as_provider",
    "instance_ids",
    "name_of",
    "parse_provider",
    "provider_id",
    "spelled_kind",
]


class ProviderKind(enum.StrEnum):
    """The provider families routeproof can call."""

    ANTHROPIC = "anthropic"
    OPENAI = "openai"
    OPENROUTER = "openrouter"
    OLLAMA = "ollama"
    VLLM = "vllm"
    BEDROCK = "bedrock"
    LOCAL = "local"
    VERTEX = "vertex"  # declared, refused until implemented (see is_supported)
    AZURE = "azure"  # Azure OpenAI: OpenAI's protocol at deployment URLs (providers/azure.py)
    GEMINI = "gemini"  # Google Gemini's OpenAI-compatible endpoint (providers/gemini.py)

    # str() and format() stay an Enum's ("ProviderKind.LOCAL", as before the StrEnum): only
    # equality and hashing follow the value. Labels come from as_metric_label, stores use .value.
    __str__ = enum.Enum.__str__
    __format__ = enum.Enum.__format__

    def as_metric_label(self) -> str:
        """The fixed lowercase metric label: never a repr, stable across renames of the member."""
        return _METRIC_LABELS[self]

    @property
    def is_supported(self) -> bool:
        """Whether routeproof ships a client for this kind (Vertex does not, yet)."""
        return self is not ProviderKind.VERTEX

    @property
    def kind(self) -> ProviderKind:
        """A default-named provider's identity is its kind: its kind is itself."""
        return self


_METRIC_LABELS: Mapping[ProviderKind, str] = MappingProxyType(
    {
        ProviderKind.ANTHROPIC: "anthropic",
        ProviderKind.OPENAI: "openai",
        ProviderKind.OPENROUTER: "openrouter",
        ProviderKind.OLLAMA: "ollama",
        ProviderKind.VLLM: "vllm",
        ProviderKind.BEDROCK: "bedrock",
        ProviderKind.LOCAL: "local",
        ProviderKind.VERTEX: "vertex",
        ProviderKind.AZURE: "azure",
        ProviderKind.GEMINI: "gemini",
    }
)

KIND_ALIASES: Mapping[str, ProviderKind] = MappingProxyType({"realizar": ProviderKind.LOCAL})
"""Names that spell a kind besides its value (seed 003 calls the local runtime ``realizar``)."""


class ProviderName(str):
    """A named provider instance (``vllm-a``): compares and hashes as its name, carries its kind.

    ``kind`` is None only for a name a tenant policy mentions before a Router has bound it to a
    configured provider (the Router binds every configured name when it plans a call); an unbound
    name is never attempted, so it never reaches a metric label.
    """

    _kind: ProviderKind | None

    def __new__(cls, name: str, kind: ProviderKind | None = None) -> ProviderName:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"a provider name must be a non-empty str, got {name!r}")
        if kind is not None and not isinstance(kind, ProviderKind):
            raise TypeError(f"the kind of provider {name!r} must be a ProviderKind, got {kind!r}")
        self = super().__new__(cls, name)
        self._kind = kind
        return self

    @property
    def kind(self) -> ProviderKind | None:
        """The kind this instance is of (None: not bound to a configured provider yet)."""
        return self._kind

    @property
    def is_supported(self) -> bool:
        """Whether routeproof ships a client for the kind (an unbound name: decided when bound)."""
        return self._kind is None or self._kind.is_supported

    @property
    def value(self) -> str:
        """The name, as ``ProviderKind.value`` is a kind's name."""
        return str(self)

    def as_metric_label(self) -> str:
        """The kind's metric label: instance names never become labels (a closed label set)."""
        if self._kind is None:
            raise ValueError(f"provider {str(self)!r} is not bound to a configured provider: it has no label")
        return self._kind.as_metric_label()

    def __repr__(self) -> str:
        return f"ProviderName({str(self)!r}, kind={self._kind!r})"

    def __reduce__(self) -> tuple[type[ProviderName], tuple[str, ProviderKind | None]]:
        return (type(self), (str(self), self._kind))


ProviderId: TypeAlias = ProviderKind | ProviderName
"""A provider instance's identity: its kind when its name spells the kind, else its name."""

name_of: Callable[[str], str] = str.__str__
"""A provider's name as a plain ``str``: ``provider.value`` (a kind's value, an instance's name), in
C (``str``'s own ``__str__``; a kind's ``__str__`` is the Enum's), without the Enum property's two
Python calls, for the per-attempt paths (issue 25)."""


def spelled_kind(name: str) -> ProviderKind | None:
    """The kind ``name`` spells (its value, its member name in any case, or an alias), else None."""
    for member in ProviderKind:
        if name == member.value or name.upper() == member.name:
            return member
    return KIND_ALIASES.get(name)


def provider_id(name: str, kind: ProviderKind) -> ProviderId:
    """The identity of the provider of ``kind`` named ``name``: the kind itself when the name
    spells it, else a :class:`ProviderName` bound to ``kind``. A name spelling another kind is refused."""
    if not isinstance(kind, ProviderKind):
        raise TypeError(f"the kind of provider {name!r} must be a ProviderKind, got {kind!r}")
    if not isinstance(name, str):
        raise TypeError(f"a provider name must be a str, got {name!r}")
    spelled = spelled_kind(name)
    if spelled is kind:
        return kind
    if spelled is not None:
        raise ValueError(
            f"provider name {name!r} spells the kind {spelled.value!r}, but the provider is {kind.value!r}"
        )
    return ProviderName(name, kind)


def parse_provider(text: str) -> ProviderId:
    """A provider as a store or a configuration writes it: the kind it spells, else an instance name."""
    spelled = spelled_kind(text)
    return spelled if spelled is not None else ProviderName(text)


def as_provider(value: object, where: str) -> ProviderId:
    """A policy's provider reference: a kind (a member, or a str spelling one) or an instance
    addressed by name, which says so: ``ProviderName("vllm-a")`` (a bare str that spells no kind
    is refused, as a typo of a kind would be)."""
    if isinstance(value, ProviderKind | ProviderName):
        return value
    spelled = spelled_kind(value) if isinstance(value, str) else None
    if spelled is None:
        raise ValueError(
            f"{where} must be a ProviderKind, one of {sorted(k.value for k in ProviderKind)}, "
            f"or a ProviderName (an instance's name), got {value!r}"
        )
    return spelled


def instance_ids(instances: Iterable[tuple[str, ProviderKind]]) -> dict[str, ProviderId]:
    """Each configured instance's identity, by name: the kind for a name spelling it or for the
    only instance of its kind, else a :class:`ProviderName` bound to the kind. ValueError (naming
    the value) for a duplicate name, a name spelling another kind, or two instances one identity."""
    pairs = list(instances)
    per_kind: dict[ProviderKind, int] = {}
    for name, kind in pairs:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"a provider name must be a non-empty str, got {name!r}")
        if not isinstance(kind, ProviderKind):
            raise ValueError(f"the kind of provider {name!r} must be a ProviderKind, got {kind!r}")
        per_kind[kind] = per_kind.get(kind, 0) + 1
    ids: dict[str, ProviderId] = {}
    taken: dict[ProviderId, str] = {}
    for name, kind in pairs:
        if name in ids:
            raise ValueError(f"two providers named {name!r}: each provider instance needs its own name")
        ident = provider_id(name, kind)
        if per_kind[kind] == 1:
            ident = kind
        if ident in taken:
            raise ValueError(
                f"providers {taken[ident]!r} and {name!r} are both the {kind.value!r} provider: "
                f"with several {kind.value!r} instances, name them apart (a name other than {kind.value!r})"
            )
        ids[name] = ident
        taken[ident] = name
    return ids


class PrivacyTier(enum.IntEnum):
    """How far a request's data may travel; a total order Sovereign < Private < Standard."""

    SOVEREIGN = 0
    PRIVATE = 1
    STANDARD = 2
