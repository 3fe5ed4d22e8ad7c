"""ChatRequest.top_p and .tool_choice (issue 16): checked when built, emitted in each wire format,
and left out (and named) for a model that rejects top_p."""

from __future__ import annotations

import pytest

from routeproof.core.capabilities import ModelCapabilities, fit_request
from routeproof.core.formats.translate import request_to_anthropic, request_to_bedrock_converse, request_to_openai
from routeproof.core.types import ChatRequest, Message, ToolDefinition

TOOLS = (ToolDefinition(name="search"),)


def _req(**kw: object) -> ChatRequest:
    return ChatRequest(messages=(Message.user("hi"),), max_tokens=8, tools=TOOLS, **kw)  # type: ignore[arg-type]


def test_each_wire_format_carries_top_p_and_tool_choice() -> None:
    """Anthropic, OpenAI and Bedrock Converse bodies carry top_p and a named tool_choice in their own shape."""
    req = _req(top_p=0.3, tool_choice=("tool", "search"))
    anthropic = request_to_anthropic(req, "claude")
    assert (anthropic["top_p"], anthropic["tool_choice"]) == (0.3, {"type": "tool", "name": "search"})
    openai = request_to_openai(req, "gpt-4o")
    assert (openai["top_p"], openai["tool_choice"]) == (0.3, {"type": "function", "function": {"name": "search"}})
    converse = request_to_bedrock_converse(req)
    assert converse["inferenceConfig"]["topP"] == 0.3
    assert converse["toolConfig"]["toolChoice"] == {"tool": {"name": "search"}}
    assert request_to_bedrock_converse(_req(tool_choice=("any", "")))["toolConfig"]["toolChoice"] == {"any": {}}
    assert "toolChoice" not in request_to_bedrock_converse(_req(tool_choice=("none", "")))["toolConfig"]


def test_absent_fields_are_not_sent() -> None:
    """Without top_p or tool_choice none of the three bodies names them."""
    req = _req()
    assert not {"top_p", "tool_choice"} & request_to_anthropic(req, "claude").keys()
    assert not {"top_p", "tool_choice"} & request_to_openai(req, "gpt-4o").keys()
    converse = request_to_bedrock_converse(req)
    assert "topP" not in converse["inferenceConfig"]
    assert "toolChoice" not in converse["toolConfig"]


@pytest.mark.parametrize(
    "kw",
    [{"top_p": 1.5}, {"top_p": -0.1}, {"top_p": float("nan")}, {"tool_choice": ("tool", "")},
     {"tool_choice": ("auto", "search")}, {"tool_choice": ("required", "")}],
)  # fmt: skip
def test_bad_values_are_refused_when_built(kw: dict[str, object]) -> None:
    """top_p outside [0, 1] or not finite, and a tool_choice that is not (kind, name-exactly-for-tool), raise."""
    with pytest.raises((ValueError, TypeError)):
        _req(**kw)


def test_a_model_that_rejects_top_p_gets_none_and_it_is_named() -> None:
    """fit_request leaves top_p out of the request for a model without top_p, and names it as dropped."""
    fitted = fit_request(_req(top_p=0.3), ModelCapabilities(top_p=False))
    assert fitted.request.top_p is None
    assert fitted.dropped == ("top_p",)
    assert "top_p" not in request_to_anthropic(fitted.request, "claude")
