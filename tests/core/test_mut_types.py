"""The value types' construction checks: each refusal's exact type and text, each normalisation's result."""

from __future__ import annotations

import enum
import pickle
import re
from collections.abc import Mapping

import pytest

from routeproof.core.frozen import FrozenMap, as_enum, as_tuple, frozen_mapping, require_str
from routeproof.core.identity import (
    PrivacyTier,
    ProviderKind,
    ProviderName,
    as_provider,
    instance_ids,
    name_of,
    parse_provider,
    provider_id,
    spelled_kind,
)
from routeproof.core.messages import (
    ChatRequest,
    Message,
    Role,
    TextBlock,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
)
from routeproof.core.policy import FallbackProvider, TenantPolicy
from routeproof.core.responses import CacheState, CacheStatus, Usage


def _exactly(kind: type[Exception], text: str) -> pytest.RaisesExc[Exception]:
    return pytest.raises(kind, match=f"^{re.escape(text)}$")


_HI = (Message.user("hi"),)


# --- frozen.py -------------------------------------------------------------------------------------


def test_require_str_refusals_name_where_value_and_type() -> None:
    """A non-str is a TypeError showing value and type; an empty str is refused only with empty=False."""
    assert require_str("", "w") == ""
    assert require_str("x", "w", empty=False) == "x"
    with _exactly(TypeError, "Thing.name must be a str, got 3 (int)"):
        require_str(3, "Thing.name")
    with _exactly(ValueError, "Thing.name must not be empty"):
        require_str("", "Thing.name", empty=False)


def test_as_enum_reads_members_values_and_names_in_any_case() -> None:
    """A member is kept; a str matches a value or a member name case-insensitively; others are refused."""
    assert as_enum(Role, Role.USER, "w") is Role.USER
    assert as_enum(Role, Role.USER.value, "w") is Role.USER
    assert as_enum(Role, "user", "w") is Role.USER
    assert as_enum(PrivacyTier, "private", "w") is PrivacyTier.PRIVATE
    assert as_enum(PrivacyTier, "Sovereign", "w") is PrivacyTier.SOVEREIGN
    assert as_enum(CacheStatus, "HIT", "w") is CacheStatus.HIT


def test_as_enum_refusal_lists_the_allowed_spellings() -> None:
    """The refusal names where, the enum, its sorted allowed spellings (lowercase names for int enums) and the value."""
    with _exactly(
        ValueError, "T.tier must be a PrivacyTier or one of ['private', 'sovereign', 'standard'], got 'secret'"
    ):
        as_enum(PrivacyTier, "secret", "T.tier")
    with _exactly(ValueError, "M.role must be a Role or one of ['assistant', 'user'], got 1"):
        as_enum(Role, 1, "M.role")


class _Colour(enum.Enum):
    """A str-valued enum whose values are not its lowercased names."""

    RED = "rouge"
    GREEN = "vert"


def test_as_enum_lists_a_str_enums_values_not_its_names() -> None:
    """For a str-valued enum the refusal lists the values (what a caller may pass), sorted."""
    assert as_enum(_Colour, "rouge", "w") is _Colour.RED
    assert as_enum(_Colour, "green", "w") is _Colour.GREEN
    with _exactly(ValueError, "C.colour must be a _Colour or one of ['rouge', 'vert'], got 'blue'"):
        as_enum(_Colour, "blue", "C.colour")


def test_as_tuple_refuses_strings_and_wrong_items_and_copies_lists() -> None:
    """A str/bytes or non-sequence is a TypeError; a wrong item names its index and type(s); a list is copied."""
    assert as_tuple([1, 2], int, "w") == (1, 2)
    assert as_tuple((), int, "w") == ()
    with _exactly(TypeError, "X.items must be a tuple, got 'ab' (str)"):
        as_tuple("ab", str, "X.items")
    with _exactly(TypeError, "X.items must be a tuple, got b'ab' (bytes)"):
        as_tuple(b"ab", int, "X.items")
    with _exactly(TypeError, "X.items must be a tuple, got {1} (set)"):
        as_tuple({1}, int, "X.items")
    with _exactly(TypeError, "X.items[1] must be a int, got 'b'"):
        as_tuple((1, "b"), int, "X.items")
    with _exactly(TypeError, "X.items[0] must be a int | str, got None"):
        as_tuple([None], (int, str), "X.items")


def test_frozen_map_is_a_read_only_hashable_picklable_copy() -> None:
    """FrozenMap copies its input, reads like a dict, equals any equal mapping, hashes by items and pickles."""
    source = {"a": "1"}
    frozen = frozen_mapping(source)
    source["b"] = "2"
    assert dict(frozen) == {"a": "1"}
    assert frozen["a"] == "1"
    assert list(frozen) == ["a"]
    assert len(frozen) == 1
    assert frozen == {"a": "1"}
    assert frozen != {"a": "2"}
    assert frozen.__eq__([("a", "1")]) is False
    assert hash(frozen) == hash(FrozenMap({"a": "1"}))
    assert repr(frozen) == "FrozenMap({'a': '1'})"
    assert pickle.loads(pickle.dumps(frozen)) == frozen
    assert len(FrozenMap()) == 0
    with pytest.raises(KeyError):
        frozen["b"]


# --- identity.py -----------------------------------------------------------------------------------


def test_every_kind_has_its_value_as_label() -> None:
    """Each kind's metric label is its lowercase value; only Vertex is unsupported; a kind's kind is itself."""
    for kind in ProviderKind:
        assert kind.as_metric_label() == kind.value
        assert kind.kind is kind
        assert kind.is_supported is (kind is not ProviderKind.VERTEX)
    assert str(ProviderKind.LOCAL) == "ProviderKind.LOCAL"
    assert f"{ProviderKind.LOCAL}" == "ProviderKind.LOCAL"


def test_provider_name_refusals_and_accessors() -> None:
    """A blank name or a non-kind is refused naming it; a bound name carries its kind, label, repr and pickle."""
    with _exactly(ValueError, "a provider name must be a non-empty str, got '  '"):
        ProviderName("  ")
    with _exactly(ValueError, "a provider name must be a non-empty str, got 3"):
        ProviderName(3)  # type: ignore[arg-type]
    with _exactly(TypeError, "the kind of provider 'vllm-a' must be a ProviderKind, got 'vllm'"):
        ProviderName("vllm-a", "vllm")  # type: ignore[arg-type]
    name = ProviderName("vllm-a", ProviderKind.VLLM)
    assert name == "vllm-a"
    assert name.value == "vllm-a"
    assert type(name.value) is str
    assert name.kind is ProviderKind.VLLM
    assert name.is_supported is True
    assert name.as_metric_label() == "vllm"
    assert repr(name) == "ProviderName('vllm-a', kind=<ProviderKind.VLLM: 'vllm'>)"
    copy = pickle.loads(pickle.dumps(name))
    assert copy == name
    assert copy.kind is ProviderKind.VLLM
    assert ProviderName("v", ProviderKind.VERTEX).is_supported is False


def test_unbound_provider_name_has_no_label() -> None:
    """An unbound name is supported until bound and refuses a metric label, naming itself."""
    unbound = ProviderName("vllm-a")
    assert unbound.kind is None
    assert unbound.is_supported is True
    with _exactly(ValueError, "provider 'vllm-a' is not bound to a configured provider: it has no label"):
        unbound.as_metric_label()


@pytest.mark.parametrize(
    ("name", "kind"),
    [("openai", ProviderKind.OPENAI), ("OPENAI", ProviderKind.OPENAI), ("Vllm", ProviderKind.VLLM),
     ("realizar", ProviderKind.LOCAL), ("vllm-a", None), ("", None)],
)  # fmt: skip
def test_spelled_kind_reads_value_name_or_alias(name: str, kind: ProviderKind | None) -> None:
    """A value, a member name in any case, or an alias spells a kind; anything else spells none."""
    assert spelled_kind(name) is kind


def test_provider_id_is_the_kind_when_the_name_spells_it() -> None:
    """A name spelling its own kind gives the kind; another name a bound ProviderName; another kind is refused."""
    assert provider_id("openai", ProviderKind.OPENAI) is ProviderKind.OPENAI
    ident = provider_id("vllm-a", ProviderKind.VLLM)
    assert isinstance(ident, ProviderName)
    assert ident.kind is ProviderKind.VLLM
    with _exactly(ValueError, "provider name 'openai' spells the kind 'openai', but the provider is 'vllm'"):
        provider_id("openai", ProviderKind.VLLM)
    with _exactly(TypeError, "the kind of provider 'x' must be a ProviderKind, got 'vllm'"):
        provider_id("x", "vllm")  # type: ignore[arg-type]
    with _exactly(TypeError, "a provider name must be a str, got 3"):
        provider_id(3, ProviderKind.VLLM)  # type: ignore[arg-type]


def test_parse_provider_and_as_provider() -> None:
    """parse_provider gives a kind or an unbound name; as_provider keeps ids, reads kinds and refuses a bare name."""
    assert parse_provider("bedrock") is ProviderKind.BEDROCK
    parsed = parse_provider("vllm-a")
    assert isinstance(parsed, ProviderName)
    assert parsed.kind is None
    name = ProviderName("vllm-a")
    assert as_provider(name, "w") is name
    assert as_provider(ProviderKind.OLLAMA, "w") is ProviderKind.OLLAMA
    assert as_provider("ollama", "w") is ProviderKind.OLLAMA
    kinds = sorted(k.value for k in ProviderKind)
    for bad in ("vllm-a", 3):
        with _exactly(
            ValueError,
            f"P.kind must be a ProviderKind, one of {kinds}, or a ProviderName (an instance's name), got {bad!r}",
        ):
            as_provider(bad, "P.kind")


def test_instance_ids_collapse_a_lone_instance_to_its_kind() -> None:
    """The only instance of a kind is the kind; several get named ids; the spelled name keeps the kind."""
    ids = instance_ids([("main", ProviderKind.OPENAI), ("vllm", ProviderKind.VLLM), ("vllm-b", ProviderKind.VLLM)])
    assert ids["main"] is ProviderKind.OPENAI
    assert ids["vllm"] is ProviderKind.VLLM
    assert isinstance(ids["vllm-b"], ProviderName)
    assert ids["vllm-b"].kind is ProviderKind.VLLM
    assert instance_ids([]) == {}


def test_instance_ids_refusals_name_the_value() -> None:
    """Blank names, non-kinds, duplicate names and two instances sharing one identity are refused by name."""
    with _exactly(ValueError, "a provider name must be a non-empty str, got ' '"):
        instance_ids([(" ", ProviderKind.VLLM)])
    with _exactly(ValueError, "a provider name must be a non-empty str, got 3"):
        instance_ids([(3, ProviderKind.VLLM)])  # type: ignore[list-item]
    with _exactly(ValueError, "the kind of provider 'a' must be a ProviderKind, got 'vllm'"):
        instance_ids([("a", "vllm")])  # type: ignore[list-item]
    with _exactly(ValueError, "two providers named 'a': each provider instance needs its own name"):
        instance_ids([("a", ProviderKind.VLLM), ("a", ProviderKind.OLLAMA)])
    with _exactly(
        ValueError,
        "providers 'vllm' and 'VLLM' are both the 'vllm' provider: with several 'vllm' instances, "
        "name them apart (a name other than 'vllm')",
    ):
        instance_ids([("vllm", ProviderKind.VLLM), ("VLLM", ProviderKind.VLLM)])


# --- messages.py -----------------------------------------------------------------------------------


def test_blocks_refuse_non_str_fields_by_name() -> None:
    """Each block names its field when given a non-str, and a tool result its non-bool is_error."""
    with _exactly(TypeError, "TextBlock.text must be a str, got None (NoneType)"):
        TextBlock(text=None)  # type: ignore[arg-type]
    with _exactly(TypeError, "ToolUseBlock.id must be a str, got 1 (int)"):
        ToolUseBlock(id=1, name="n")  # type: ignore[arg-type]
    with _exactly(TypeError, "ToolUseBlock.name must be a str, got 1 (int)"):
        ToolUseBlock(id="i", name=1)  # type: ignore[arg-type]
    with _exactly(TypeError, "ToolUseBlock.input_json must be a str, got {} (dict)"):
        ToolUseBlock(id="i", name="n", input_json={})  # type: ignore[arg-type]
    assert ToolUseBlock(id="i", name="n").input_json == "{}"
    with _exactly(TypeError, "ToolResultBlock.tool_use_id must be a str, got 1 (int)"):
        ToolResultBlock(tool_use_id=1, content="c")  # type: ignore[arg-type]
    with _exactly(TypeError, "ToolResultBlock.content must be a str, got 1 (int)"):
        ToolResultBlock(tool_use_id="t", content=1)  # type: ignore[arg-type]
    with _exactly(TypeError, "ToolResultBlock.is_error must be a bool, got 1"):
        ToolResultBlock(tool_use_id="t", content="c", is_error=1)  # type: ignore[arg-type]
    assert ToolResultBlock(tool_use_id="t", content="c").is_error is False


def test_message_normalises_role_and_content() -> None:
    """A role spelled as a str becomes the member; a content list becomes a tuple; wrong items are named."""
    message = Message(role="assistant", content=[TextBlock(text="a")])  # type: ignore[arg-type]
    assert message.role is Role.ASSISTANT
    assert message.content == (TextBlock(text="a"),)
    assert Message.user("u") == Message(role=Role.USER, content=(TextBlock(text="u"),))
    assert Message.assistant("a").role is Role.ASSISTANT
    names = "TextBlock | ToolUseBlock | ToolResultBlock | ImageBlock | DocumentBlock | ThinkingBlock"
    names += " | RedactedThinkingBlock"
    with _exactly(TypeError, f"Message.content[0] must be a {names}, got 'x'"):
        Message(role=Role.USER, content=("x",))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^Message\.role must be a Role"):
        Message(role="system", content=())  # type: ignore[arg-type]


def test_chat_request_refusals_are_exact() -> None:
    """Each ChatRequest refusal is the documented type with a message naming the field and value."""
    with _exactly(ValueError, "ChatRequest.messages must not be empty"):
        ChatRequest(messages=())
    with _exactly(ValueError, "ChatRequest.messages[1] has no content"):
        ChatRequest(messages=(Message.user("a"), Message(role=Role.USER, content=())))
    with _exactly(TypeError, "ChatRequest.messages[0] must be a Message, got 'a'"):
        ChatRequest(messages=("a",))  # type: ignore[arg-type]
    for bad in (True, 1.0):
        with _exactly(TypeError, f"ChatRequest.max_tokens must be an int, got {bad!r}"):
            ChatRequest(messages=_HI, max_tokens=bad)  # type: ignore[arg-type]
    for bad_int in (0, -1):
        with _exactly(ValueError, f"ChatRequest.max_tokens must be > 0, got {bad_int!r}"):
            ChatRequest(messages=_HI, max_tokens=bad_int)
    assert ChatRequest(messages=_HI, max_tokens=1).max_tokens == 1
    with _exactly(TypeError, "ChatRequest.system must be a str, got 1 (int)"):
        ChatRequest(messages=_HI, system=1)  # type: ignore[arg-type]
    assert ChatRequest(messages=_HI, system="").system == ""
    with _exactly(TypeError, "ChatRequest.tools[0] must be a ToolDefinition, got 'x'"):
        ChatRequest(messages=_HI, tools=("x",))  # type: ignore[arg-type]
    with _exactly(
        TypeError,
        "ChatRequest.stop_sequences must be a tuple of str, got the str 'END' (it would be split into "
        "characters); pass ('END',)",
    ):
        ChatRequest(messages=_HI, stop_sequences="END")  # type: ignore[arg-type]
    with _exactly(TypeError, "ChatRequest.stop_sequences[0] must be a str, got 1"):
        ChatRequest(messages=_HI, stop_sequences=(1,))  # type: ignore[arg-type]
    with _exactly(TypeError, "ChatRequest.alias must be a str, got None (NoneType)"):
        ChatRequest(messages=_HI, alias=None)  # type: ignore[arg-type]


def test_chat_request_normalises_lists_to_tuples() -> None:
    """Messages, tools and stop sequences given as lists are stored as tuples."""
    tool = ToolDefinition(name="t", description="d", input_schema_json="{}")
    request = ChatRequest(messages=list(_HI), tools=[tool], stop_sequences=["a"])  # type: ignore[arg-type]
    assert request.messages == _HI
    assert request.tools == (tool,)
    assert request.stop_sequences == ("a",)


@pytest.mark.parametrize("value", [0, 0.0, 2, 2.0, 1.5, None])
def test_temperature_bounds_are_inclusive(value: float | None) -> None:
    """Temperatures 0 and 2 (int or float) and None are accepted."""
    assert ChatRequest(messages=_HI, temperature=value).temperature == value


def test_temperature_refusals_are_exact() -> None:
    """A bool/non-number is a TypeError, a non-finite or out-of-range value a ValueError, each naming it."""
    with _exactly(TypeError, "ChatRequest.temperature must be a number or None, got True"):
        ChatRequest(messages=_HI, temperature=True)
    with _exactly(TypeError, "ChatRequest.temperature must be a number or None, got '1'"):
        ChatRequest(messages=_HI, temperature="1")  # type: ignore[arg-type]
    with _exactly(ValueError, "ChatRequest.temperature must be finite, got nan"):
        ChatRequest(messages=_HI, temperature=float("nan"))
    for bad in (-0.01, 2.01, float("inf")):
        expected = "finite" if bad == float("inf") else "in [0.0, 2.0]"
        with pytest.raises(ValueError, match=re.escape(f"ChatRequest.temperature must be {expected}")):
            ChatRequest(messages=_HI, temperature=bad)
    with _exactly(ValueError, "ChatRequest.temperature must be in [0.0, 2.0], got -1"):
        ChatRequest(messages=_HI, temperature=-1)


@pytest.mark.parametrize("value", [0, 1, 0.5, 1.0, None])
def test_top_p_bounds_are_inclusive(value: float | None) -> None:
    """top_p of 0, 1 and None are accepted."""
    assert ChatRequest(messages=_HI, top_p=value).top_p == value


def test_top_p_refusals_are_exact() -> None:
    """A bool/non-number/non-finite top_p is a TypeError, one outside [0, 1] a ValueError, each naming it."""
    for bad in (True, "0.5", float("nan"), float("inf")):
        with _exactly(TypeError, f"ChatRequest.top_p must be a finite number or None, got {bad!r}"):
            ChatRequest(messages=_HI, top_p=bad)  # type: ignore[arg-type]
    for out in (-0.1, 1.1):
        with _exactly(ValueError, f"ChatRequest.top_p must be in [0, 1], got {out!r}"):
            ChatRequest(messages=_HI, top_p=out)


@pytest.mark.parametrize("choice", [("auto", ""), ("any", ""), ("none", ""), ("tool", "get"), None])
def test_tool_choice_accepted_shapes(choice: tuple[str, str] | None) -> None:
    """Each kind with an empty name, 'tool' with a name, and None are accepted."""
    assert ChatRequest(messages=_HI, tool_choice=choice).tool_choice == choice


@pytest.mark.parametrize(
    "choice",
    [("tool", ""), ("auto", "get"), ("required", ""), ["auto", ""], ("auto",), ("auto", "", ""), ("tool", 1)],
)
def test_tool_choice_refusals_are_exact(choice: object) -> None:
    """A wrong kind, a name where none belongs (or none where one does), or a wrong shape is refused with its value."""
    with _exactly(
        ValueError,
        "ChatRequest.tool_choice must be (kind, tool name) with kind in ('auto', 'any', 'none', 'tool') and a "
        f"name exactly for 'tool', got {choice!r}",
    ):
        ChatRequest(messages=_HI, tool_choice=choice)  # type: ignore[arg-type]


# --- responses.py ----------------------------------------------------------------------------------


def test_cache_state_refusals_are_exact() -> None:
    """Negative saved tokens, or saved tokens without a hit, are refused showing the count."""
    assert CacheState(status=CacheStatus.HIT, saved_tokens=5).saved_tokens == 5
    assert CacheState(status=CacheStatus.HIT).saved_tokens == 0
    with _exactly(ValueError, "saved_tokens must be >= 0, got -1"):
        CacheState(status=CacheStatus.HIT, saved_tokens=-1)
    with _exactly(ValueError, "saved_tokens=3 without a cache hit"):
        CacheState(status=CacheStatus.MISS, saved_tokens=3)


_USAGE_FIELDS = ["prompt_tokens", "completion_tokens", "cached_input_tokens", "cache_creation_tokens"]


@pytest.mark.parametrize("field", _USAGE_FIELDS)
@pytest.mark.parametrize("bad", [-1, True, 1.0])
def test_usage_refuses_each_non_count_field(field: str, bad: object) -> None:
    """Every Usage count refuses a negative, a bool or a float, naming the field and value."""
    with _exactly(ValueError, f"Usage.{field} must be a non-negative int, got {bad!r}"):
        Usage(**{field: bad})  # type: ignore[arg-type]


def test_usage_keeps_zero_and_counts() -> None:
    """Zero and positive counts are kept as given."""
    usage = Usage(prompt_tokens=0, completion_tokens=1, cached_input_tokens=2, cache_creation_tokens=3)
    assert (usage.prompt_tokens, usage.completion_tokens, usage.cached_input_tokens, usage.cache_creation_tokens) == (
        0,
        1,
        2,
        3,
    )


# --- policy.py -------------------------------------------------------------------------------------


def test_fallback_provider_checks_and_freezes_its_map() -> None:
    """The kind is read, the map is checked key and value, copied read-only, and model_for reads it."""
    source = {"fast": "gpt-4o-mini"}
    entry = FallbackProvider(kind="openai", model_alias_map=source)  # type: ignore[arg-type]
    source["slow"] = "x"
    assert entry.kind is ProviderKind.OPENAI
    assert dict(entry.model_alias_map) == {"fast": "gpt-4o-mini"}
    assert entry.model_for("fast") == "gpt-4o-mini"
    assert entry.model_for("slow") is None
    assert FallbackProvider(kind=ProviderKind.OPENAI).model_alias_map == {}
    with _exactly(TypeError, "FallbackProvider.model_alias_map must be a mapping, got [('a', 'b')]"):
        FallbackProvider(kind=ProviderKind.OPENAI, model_alias_map=[("a", "b")])  # type: ignore[arg-type]
    with _exactly(TypeError, "FallbackProvider.model_alias_map key must be a str, got 1 (int)"):
        FallbackProvider(kind=ProviderKind.OPENAI, model_alias_map={1: "m"})  # type: ignore[dict-item]
    with _exactly(ValueError, "FallbackProvider.model_alias_map['a'] must not be empty"):
        FallbackProvider(kind=ProviderKind.OPENAI, model_alias_map={"a": ""})
    with pytest.raises(ValueError, match=r"^FallbackProvider\.kind must be a ProviderKind"):
        FallbackProvider(kind="vllm-a")  # type: ignore[arg-type]


def test_tenant_policy_normalises_and_refuses_exactly() -> None:
    """Tier and primary targets are read and frozen; each malformed field is refused naming it."""
    policy = TenantPolicy(
        privacy_tier="private",  # type: ignore[arg-type]
        primary={"fast": ["openai", "gpt-4o"]},  # type: ignore[dict-item]
        fallback_chain=[FallbackProvider(kind=ProviderKind.OLLAMA)],  # type: ignore[arg-type]
    )
    assert policy.privacy_tier is PrivacyTier.PRIVATE
    assert policy.primary == {"fast": (ProviderKind.OPENAI, "gpt-4o")}
    assert isinstance(policy.primary, FrozenMap)
    assert isinstance(policy.primary["fast"], tuple)
    assert isinstance(policy.fallback_chain, tuple)
    assert TenantPolicy().tenant_id == "default"
    with _exactly(
        ValueError,
        "TenantPolicy.privacy_tier must be a PrivacyTier or one of ['private', 'sovereign', 'standard'], got 'open'",
    ):
        TenantPolicy(privacy_tier="open")  # type: ignore[arg-type]
    with _exactly(TypeError, "TenantPolicy.tenant_id must be a str, got 1 (int)"):
        TenantPolicy(tenant_id=1)  # type: ignore[arg-type]
    with _exactly(TypeError, "TenantPolicy.primary must be a mapping alias -> (provider, model), got ()"):
        TenantPolicy(primary=())  # type: ignore[arg-type]
    with _exactly(TypeError, "TenantPolicy.primary key must be a str, got 1 (int)"):
        TenantPolicy(primary={1: (ProviderKind.OPENAI, "m")})  # type: ignore[dict-item]
    for target in ("openai", ("openai",), ("openai", "m", "x")):
        with _exactly(TypeError, f"TenantPolicy.primary['a'] must be a (provider, model) pair, got {target!r}"):
            TenantPolicy(primary={"a": target})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match=re.escape("TenantPolicy.primary['a'][0] must be a ProviderKind")):
        TenantPolicy(primary={"a": ("nope", "m")})  # type: ignore[dict-item]
    with _exactly(ValueError, "TenantPolicy.primary['a'][1] must not be empty"):
        TenantPolicy(primary={"a": (ProviderKind.OPENAI, "")})
    with _exactly(TypeError, "TenantPolicy.fallback_chain[0] must be a FallbackProvider, got 'x'"):
        TenantPolicy(fallback_chain=("x",))  # type: ignore[arg-type]
    with _exactly(TypeError, "TenantPolicy.context_window_failover must be a bool, got 1"):
        TenantPolicy(context_window_failover=1)  # type: ignore[arg-type]
    assert isinstance(TenantPolicy().primary, Mapping)


def test_name_of_is_the_value_as_a_plain_str() -> None:
    """name_of (str's own __str__, for the per-attempt traffic paths) is every kind's ``.value`` and
    an instance's name, as a plain str; never the Enum's ``str()`` ("ProviderKind.OPENAI")."""
    named = ProviderName("eu-openai", ProviderKind.OPENAI)
    for provider in (*ProviderKind, named, ProviderName("unbound")):
        assert name_of(provider) == provider.value
        assert type(name_of(provider)) is str
    assert name_of(ProviderKind.OPENAI) == "openai"
    assert name_of(named) == "eu-openai"


def test_with_call_is_replace_of_the_call_fields_keeping_every_other() -> None:
    """ProviderResponse.with_call names every field (not dataclasses.replace; issue 25): it equals the
    replace() of the call's fields on an answer with no field at its default, and the fixture is
    checked to stay so (a field added later must be set here, and so kept by with_call)."""
    from dataclasses import MISSING, fields, replace

    from routeproof.core.types import (
        AttemptRecord,
        AttemptStatus,
        CacheState,
        CacheStatus,
        Choice,
        FinishReason,
        ProviderResponse,
        SkipRecord,
        Usage,
    )

    full = ProviderResponse(
        id="r1",
        usage=Usage(prompt_tokens=5, completion_tokens=2),
        choices=(Choice(content="hi"),),
        finish_reason=FinishReason.LENGTH,
        latency_ms=9,
        cache_state=CacheState(status=CacheStatus.HIT, saved_tokens=3),
        attempts=(
            AttemptRecord(
                provider=ProviderKind.OPENAI, model="m", attempt_num=1, fallback_position=0,
                status=AttemptStatus.SUCCEEDED, elapsed_ms=1,
            ),
        ),
        provider=ProviderKind.ANTHROPIC,
        model="answered-model",
        skipped=(SkipRecord(provider=ProviderKind.BEDROCK, model="b", fallback_position=1, reason="tier"),),
        dropped_parameters=("seed",),
        cost_pico_usd=7,
        budget_turn_warning=True,
        wire_body_json='{"id": "r1"}',
    )  # fmt: skip
    for f in fields(ProviderResponse):
        default = f.default_factory() if f.default_factory is not MISSING else f.default
        assert getattr(full, f.name) != default, f.name
    call = {
        "attempts": (),
        "latency_ms": 42,
        "provider": ProviderKind.OPENAI,
        "model": "m",
        "skipped": (),
        "cost_pico_usd": None,
        "budget_turn_warning": False,
    }
    made = full.with_call(**call)  # type: ignore[arg-type]
    assert made == replace(full, **call)  # type: ignore[arg-type]
