"""core/types.py's own rules: validation at construction, the frozen mapping, the small helpers.

These are the checks the ``types`` mutation shard selects (tools/mutation_gate.py): each pins a
boundary or a message that a mutant of types.py would change.
"""

from __future__ import annotations

import pickle
import re
from typing import Any

import pytest

from routeproof.core.types import (
    CacheState,
    CacheStatus,
    ChatRequest,
    FallbackProvider,
    FrozenMap,
    Message,
    ProviderKind,
    Role,
    TenantPolicy,
    TextBlock,
    Usage,
    frozen_mapping,
)


def exactly(message: str) -> str:
    """A ``pytest.raises(match=...)`` pattern for this whole message, nothing around it."""
    return f"^{re.escape(message)}$"


def test_frozen_map_reads_like_the_dict_it_copied() -> None:
    """FrozenMap: item access, iteration order, length and repr are the copied dict's."""
    source = {"a": "1", "b": "2"}
    frozen = FrozenMap(source)
    source["c"] = "3"  # a later change to the caller's dict does not reach the copy
    assert frozen["a"] == "1"
    assert list(frozen) == ["a", "b"]
    assert len(frozen) == 2
    assert repr(frozen) == "FrozenMap({'a': '1', 'b': '2'})"
    assert FrozenMap() == {}
    assert len(FrozenMap(None)) == 0


def test_frozen_map_equality_and_hash() -> None:
    """FrozenMap: equal to any mapping with the same items, unequal to non-mappings; equal maps hash equal."""
    one, two = FrozenMap({"a": "1", "b": "2"}), FrozenMap({"b": "2", "a": "1"})
    assert one == two
    assert one == {"a": "1", "b": "2"}
    assert hash(one) == hash(two) == hash(frozenset({("a", "1"), ("b", "2")}))
    assert one != FrozenMap({"a": "1"})
    assert one != [("a", "1"), ("b", "2")]
    assert (one == "ab") is False


def test_frozen_map_pickles_to_an_equal_frozen_map() -> None:
    """FrozenMap: a pickle round trip gives an equal FrozenMap (``__reduce__``)."""
    frozen = FrozenMap({"a": "1"})
    assert frozen.__reduce__() == (FrozenMap, ({"a": "1"},))
    back = pickle.loads(pickle.dumps(frozen))
    assert type(back) is FrozenMap
    assert back == frozen
    assert isinstance(frozen_mapping({"x": "y"}), FrozenMap)


def test_cache_state_validation_boundaries() -> None:
    """CacheState: saved_tokens 0 is fine for any status, > 0 only on a hit, < 0 never."""
    assert CacheState().saved_tokens == 0
    assert CacheState(status=CacheStatus.HIT, saved_tokens=0).saved_tokens == 0
    assert CacheState(status=CacheStatus.HIT, saved_tokens=5).saved_tokens == 5
    with pytest.raises(ValueError, match=exactly("saved_tokens must be >= 0, got -1")):
        CacheState(status=CacheStatus.HIT, saved_tokens=-1)
    with pytest.raises(ValueError, match=exactly("saved_tokens=1 without a cache hit")):
        CacheState(status=CacheStatus.NONE, saved_tokens=1)


COUNTS = ["prompt_tokens", "completion_tokens", "cached_input_tokens", "cache_creation_tokens"]


@pytest.mark.parametrize("field", COUNTS)
def test_usage_rejects_negative_bool_and_non_int(field: str) -> None:
    """Usage: every count is a non-negative int; -1, True and 1.0 are rejected, naming the field and value."""
    zero: dict[str, Any] = {field: 0}  # Usage also has a str field (service_tier)
    assert getattr(Usage(**zero), field) == 0
    bad_values: tuple[Any, ...] = (-1, True, 1.0)  # what a careless wire parser might hand over
    for bad in bad_values:
        with pytest.raises(ValueError, match=exactly(f"Usage.{field} must be a non-negative int, got {bad!r}")):
            Usage(**{field: bad})


def test_chat_request_validation_boundaries() -> None:
    """ChatRequest: needs a message, every message needs content, max_tokens must be >= 1."""
    hello = Message.user("hi")
    assert ChatRequest(messages=(hello,), max_tokens=1).max_tokens == 1
    with pytest.raises(ValueError, match=exactly("ChatRequest.messages must not be empty")):
        ChatRequest(messages=())
    with pytest.raises(ValueError, match=exactly("ChatRequest.messages[1] has no content")):
        ChatRequest(messages=(hello, Message(role=Role.USER, content=())))
    with pytest.raises(ValueError, match=exactly("ChatRequest.max_tokens must be > 0, got 0")):
        ChatRequest(messages=(hello,), max_tokens=0)


def test_message_constructors() -> None:
    """Message.user / Message.assistant: the role and one text block with the text."""
    assert Message.user("q") == Message(role=Role.USER, content=(TextBlock(text="q"),))
    assert Message.assistant("a") == Message(role=Role.ASSISTANT, content=(TextBlock(text="a"),))


def test_provider_kind_labels_and_support() -> None:
    """ProviderKind: the metric label is the lowercase value; only Vertex is unsupported."""
    assert [k.as_metric_label() for k in ProviderKind] == [k.value for k in ProviderKind]
    assert [k for k in ProviderKind if not k.is_supported] == [ProviderKind.VERTEX]


def test_policies_freeze_their_mappings() -> None:
    """FallbackProvider and TenantPolicy copy their maps into FrozenMaps; model_for looks the alias up."""
    aliases = {"fast": "m1"}
    fallback = FallbackProvider(kind=ProviderKind.OPENAI, model_alias_map=aliases)
    aliases["fast"] = "changed"
    assert isinstance(fallback.model_alias_map, FrozenMap)
    assert fallback.model_for("fast") == "m1"
    assert fallback.model_for("slow") is None
    primary = {"fast": (ProviderKind.ANTHROPIC, "m")}
    policy = TenantPolicy(primary=primary)
    primary.clear()
    assert isinstance(policy.primary, FrozenMap)
    assert policy.primary["fast"] == (ProviderKind.ANTHROPIC, "m")
