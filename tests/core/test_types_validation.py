"""Construction-time input validation: wrong types, non-finite numbers and out-of-range values are
refused with a clear error, strings are accepted for enums, and all of it survives ``python -O``."""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routeproof.core.types import (
    ChatRequest,
    FallbackProvider,
    Message,
    PrivacyTier,
    ProviderKind,
    Role,
    TenantPolicy,
    TextBlock,
    ToolDefinition,
)

HELLO = (Message.user("hello"),)


@pytest.mark.parametrize(
    ("kwargs", "error", "needle"),
    [
        ({"temperature": math.nan}, ValueError, "finite"),
        ({"temperature": math.inf}, ValueError, "finite"),
        ({"temperature": "hot"}, TypeError, "'hot'"),
        ({"temperature": 2.5}, ValueError, "2.5"),
        ({"temperature": True}, TypeError, "True"),
        ({"max_tokens": 1.5}, TypeError, "1.5"),
        ({"max_tokens": True}, TypeError, "True"),
        ({"max_tokens": 0}, ValueError, "> 0"),
        ({"stop_sequences": "END"}, TypeError, r"\('END',\)"),
        ({"stop_sequences": ("END", 3)}, TypeError, r"stop_sequences\[1\]"),
        ({"system": 42}, TypeError, "system"),
        ({"alias": None}, TypeError, "alias"),
        ({"tools": ("search",)}, TypeError, r"tools\[0\]"),
    ],
)
def test_chat_request_refuses_bad_fields(kwargs: dict[str, object], error: type[Exception], needle: str) -> None:
    """Each bad ChatRequest field is refused at construction with its name or value in the message."""
    with pytest.raises(error, match=needle):
        ChatRequest(messages=HELLO, **kwargs)  # type: ignore[arg-type]


def test_chat_request_refuses_non_messages_and_accepts_lists() -> None:
    """messages must hold Message values (a str is refused); a list is copied into a tuple."""
    with pytest.raises(TypeError, match="messages"):
        ChatRequest(messages="hello")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"messages\[0\]"):
        ChatRequest(messages=({"role": "user", "content": "hi"},))  # type: ignore[arg-type]
    req = ChatRequest(messages=list(HELLO), stop_sequences=["END"], temperature=0)  # type: ignore[arg-type]
    assert req.messages == HELLO
    assert req.stop_sequences == ("END",)


def test_message_refuses_non_text_and_accepts_role_strings() -> None:
    """Message.user(None) is a TypeError; a role given as "user" becomes Role.USER; junk roles are named."""
    with pytest.raises(TypeError, match=r"TextBlock\.text must be a str, got None"):
        Message.user(None)  # type: ignore[arg-type]
    assert Message(role="user", content=(TextBlock(text="x"),)).role is Role.USER  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"Message\.role .*'boss'"):
        Message(role="boss", content=(TextBlock(text="x"),))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="content"):
        Message(role=Role.USER, content="x")  # type: ignore[arg-type]


def test_policy_accepts_enum_strings_and_refuses_junk_clearly() -> None:
    """TenantPolicy/FallbackProvider take "private"/"anthropic" strings for enums; junk is named."""
    policy = TenantPolicy(
        privacy_tier="private",  # type: ignore[arg-type]
        primary={"a": ("ollama", "m")},  # type: ignore[dict-item]
        fallback_chain=[FallbackProvider(kind="local", model_alias_map={"a": "l"})],  # type: ignore[arg-type]
    )
    assert policy.privacy_tier is PrivacyTier.PRIVATE
    assert policy.primary["a"] == (ProviderKind.OLLAMA, "m")
    assert policy.fallback_chain[0].kind is ProviderKind.LOCAL
    with pytest.raises(ValueError, match=r"privacy_tier .*'secret'"):
        TenantPolicy(privacy_tier="secret")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"primary\['a'\]\[0\] .*'gpt'"):
        TenantPolicy(primary={"a": ("gpt", "m")})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match=r"primary\['a'\]"):
        TenantPolicy(primary={"a": "anthropic"})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="context_window_failover"):
        TenantPolicy(context_window_failover="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="fallback_chain"):
        TenantPolicy(fallback_chain=(ProviderKind.OPENAI,))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="model_alias_map"):
        FallbackProvider(kind=ProviderKind.OPENAI, model_alias_map={"a": None})  # type: ignore[dict-item]


OPTIMISED = textwrap.dedent(
    """
    import math
    from routeproof.core.kernel import BackoffPolicy
    from routeproof.core.ledger import BudgetLimits
    from routeproof.core.pricing import PricingTable
    from routeproof.core.types import ChatRequest, Message
    from routeproof.errors import ConfigError
    from routeproof.router import Router
    assert False, "this line proves -O is on"  # stripped under -O
    refused = []
    for make in (
        lambda: ChatRequest(messages=(Message.user("x"),), temperature=math.nan),
        lambda: ChatRequest(messages=(Message.user("x"),), max_tokens=1.5),
        lambda: Router([], pricing=PricingTable(prices={}), budget=BudgetLimits(session_limit_pico_usd=-1)),
        lambda: Router([], backoff=BackoffPolicy(full_jitter=True, base_ms=0)),
        lambda: Router([], max_attempts_per_provider=9),
    ):
        try:
            make()
        except (TypeError, ValueError, ConfigError):
            refused.append(True)
        else:
            refused.append(False)
    print(refused)
    """
)


def test_validation_survives_python_dash_o() -> None:
    """Under ``python -O`` (contracts and asserts stripped) bad requests, budgets and backoffs are still refused."""
    done = subprocess.run(
        [sys.executable, "-O", "-c", OPTIMISED], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[True, True, True, True, True]"


def test_a_message_and_its_text_block_normalise_or_refuse_what_they_are_given() -> None:
    """A role given by name becomes the Role, content given as a list becomes a tuple, a Role and a tuple
    are kept as they are; a text block's cache marker is a CacheControl or nothing, anything else refused."""
    from routeproof.core.blocks import CacheControl

    block = TextBlock(text="hi", cache_control=CacheControl())
    given = (block,)
    message = Message(role=Role.USER, content=given)
    assert message.role is Role.USER
    assert message.content is given
    named = Message(role="assistant", content=[block])  # type: ignore[arg-type]  # what the check normalises
    assert named.role is Role.ASSISTANT
    assert named.content == given
    assert type(named.content) is tuple
    with pytest.raises(TypeError, match=r"TextBlock\.cache_control"):
        TextBlock(text="hi", cache_control={"type": "ephemeral"})  # type: ignore[arg-type]  # what it refuses
    with pytest.raises(TypeError, match=r"Message\.content\[1\]"):
        Message(role=Role.USER, content=(block, "text"))  # type: ignore[arg-type]  # what it refuses


_OPTIONS_REFUSED = [
    ("response_format", "json", TypeError),
    ("reasoning", "high", TypeError),
    ("user", 7, TypeError),
    ("service_tier", 1, TypeError),
    ("cache_affinity_key", "", ValueError),
    ("cache_affinity_key", 3, TypeError),
    ("seed", 2**64, ValueError),
    ("seed", 1.5, TypeError),
    ("n", 0, ValueError),
    ("n", True, TypeError),
    ("top_logprobs", 21, ValueError),
    ("top_k", 0, ValueError),
    ("parallel_tool_calls", 1, TypeError),
    ("logprobs", "yes", TypeError),
    ("frequency_penalty", 2.5, ValueError),
    ("presence_penalty", math.nan, TypeError),
    ("top_p", 1.5, ValueError),
    ("tool_choice", ("tool", ""), ValueError),
]


@pytest.mark.parametrize(
    ("name", "value", "error"), _OPTIONS_REFUSED, ids=[f"{n}={v!r}" for n, v, _ in _OPTIONS_REFUSED]
)
def test_each_option_is_checked_when_it_alone_is_set(name: str, value: object, error: type[Exception]) -> None:
    """Every option is checked even when it is the only one set (ChatRequest skips the checks of a
    request that sets none, the usual case: each must still count as set)."""
    with pytest.raises(error, match=rf"ChatRequest\.{name}"):
        ChatRequest(messages=HELLO, **{name: value})  # type: ignore[arg-type]


def test_the_options_accept_their_values() -> None:
    req = ChatRequest(
        messages=HELLO, user="u", service_tier="flex", cache_affinity_key="k", seed=-1, n=2, top_logprobs=20,
        top_k=1, parallel_tool_calls=False, logprobs=True, frequency_penalty=-2, presence_penalty=2.0, top_p=0,
        tool_choice=("auto", ""),
    )  # fmt: skip
    assert (req.seed, req.n, req.top_k, req.tool_choice) == (-1, 2, 1, ("auto", ""))


def test_lists_become_tuples_and_tuples_are_kept() -> None:
    """A list given for a tuple field is made a tuple; a tuple already of its items is kept as given."""
    blocks = (TextBlock(text="be brief"),)
    req = ChatRequest(messages=list(HELLO), tools=[], stop_sequences=["END"], system_blocks=list(blocks))  # type: ignore[arg-type]
    assert (req.messages, req.tools, req.stop_sequences, req.system_blocks) == (HELLO, (), ("END",), blocks)
    assert req.system == "be brief"
    stops = ("END", "STOP")
    kept = ChatRequest(messages=HELLO, stop_sequences=stops, system_blocks=blocks)
    assert kept.messages is HELLO
    assert kept.stop_sequences is stops
    assert kept.system_blocks is blocks
    tool = ToolDefinition(name="search")
    assert ChatRequest(messages=HELLO, tools=[tool]).tools == (tool,)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"ChatRequest.tools\[0\]"):
        ChatRequest(messages=HELLO, tools=["search"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"ChatRequest\.tools"):
        ChatRequest(messages=HELLO, tools=None)  # type: ignore[arg-type]


class _Subclassed(str):
    """A str subclass: Message.user takes the checked construction for it."""


@given(text=st.text(), subclassed=st.booleans())
def test_a_text_turn_made_fast_is_the_checked_one(text: str, subclassed: bool) -> None:
    """Message.user / .assistant make a plain turn without re-running its checks: the same value,
    every field of both types set (a field added to either without the fast make fails here)."""
    given_text = _Subclassed(text) if subclassed else text
    for fast, role in ((Message.user(given_text), Role.USER), (Message.assistant(given_text), Role.ASSISTANT)):
        checked = Message(role=role, content=(TextBlock(text=given_text),))
        assert fast == checked
        for made, model in ((fast, checked), (fast.content[0], checked.content[0])):
            assert {f.name: getattr(made, f.name) for f in dataclasses.fields(made)} == {
                f.name: getattr(model, f.name) for f in dataclasses.fields(model)
            }


def test_a_text_turn_still_refuses_what_is_no_text() -> None:
    with pytest.raises(TypeError, match=r"TextBlock\.text"):
        Message.user(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"TextBlock\.text"):
        Message.assistant(None)  # type: ignore[arg-type]
