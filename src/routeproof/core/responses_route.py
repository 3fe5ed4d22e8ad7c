"""Which way a Responses API request goes to one provider: OpenAI's own Responses API, verbatim, or
the Chat Completions rewriting (``core/formats/responses_api.py``), or not at all.

=====================================  ==========================  ==================================
the provider                           the request                 path
=====================================  ==========================  ==================================
declares the Responses API             anything                    ``VERBATIM``: the caller's body,
(``responses_api = true``)                                         router fields set, to ``/responses``
has no Responses API                   rewrites to Chat            ``TRANSLATED``: the Chat body
has no Responses API                   a field with no Chat        ``SKIPPED``: a skip naming the field
                                       equivalent (stateful,
                                       hosted tool, unknown)
=====================================  ==========================  ==================================

So a stateful field (``previous_response_id``, ``store: true``, ``conversation``, ``background``,
a hosted tool such as ``web_search``) is carried only to a provider that can honour it; a request
with one is pinned to the Responses-capable providers of its chain (the others are skipped, never
sent a body that pretends the state was kept). With none in the chain the gateway refuses it up
front, naming the field.

The verbatim body (:func:`responses_passthrough_body`) is the caller's with the router's fields
set: ``model`` (the alias resolved), ``stream`` (set for a stream, removed for a plain call, with
``stream_options``). Every other field, including fields newer than this code, goes as received;
``max_output_tokens`` is the caller's (the ledger reserves it, or the chain's documented maximum
when it is absent; none is invented). One exception in ``input``: a reasoning item this gateway
answered with (``rs_rp...``: an Anthropic or Bedrock answer's thinking, sent back by a client that
replays every output item, as the OpenAI Agents SDK does) is left out and named
(:func:`verbatim_dropped`), as on the Chat path: OpenAI does not know its id and would refuse the
whole turn (a 400, terminal) after a failover had answered the turn before.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import icontract

from routeproof.core.errors import TranslationError
from routeproof.core.formats.responses_api import (
    REASONING_ITEM_DROPPED,
    ResponsesRefused,
    own_reasoning,
    responses_to_chat,
)

__all__ = [
    "RESPONSES_ROUTER_OWNED",
    "ResponsesChoice",
    "ResponsesPath",
    "choose_responses_path",
    "responses_passthrough_body",
    "responses_path_for",
    "verbatim_dropped",
]

RESPONSES_ROUTER_OWNED = frozenset({"model", "stream", "stream_options"})
"""The top-level fields of a verbatim Responses body the router sets; every other one passes untouched."""


class ResponsesPath(enum.Enum):
    """How one provider is sent a Responses API request."""

    VERBATIM = "verbatim"
    TRANSLATED = "translated"
    SKIPPED = "skipped"


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponsesChoice:
    """The path for one provider; ``chat_json`` for TRANSLATED, ``field`` and ``why`` for SKIPPED."""

    path: ResponsesPath
    chat_json: str = ""
    field: str = ""
    why: str = ""


def _choose(responses_api: bool, chat_json: str | None, refusal: ResponsesRefused | None) -> ResponsesChoice:
    if responses_api:
        return ResponsesChoice(path=ResponsesPath.VERBATIM)
    if refusal is None and chat_json is not None:
        return ResponsesChoice(path=ResponsesPath.TRANSLATED, chat_json=chat_json)
    if refusal is None:
        field, why = "request", "has no Chat Completions form"
    else:  # a refusal of an empty key ("") still names something
        field, why = refusal.field or "(an empty field name)", refusal.why
    return ResponsesChoice(path=ResponsesPath.SKIPPED, field=field, why=why)


@icontract.require(lambda chat_json, refusal: chat_json is None or refusal is None)
@icontract.ensure(lambda responses_api, result: (result.path is ResponsesPath.VERBATIM) == responses_api)
@icontract.ensure(
    lambda responses_api, chat_json, result: (
        responses_api or (result.path is ResponsesPath.SKIPPED) == (chat_json is None)
    )
)
@icontract.ensure(lambda result: result.path is not ResponsesPath.SKIPPED or result.field != "")
def choose_responses_path(
    *, responses_api: bool, chat_json: str | None, refusal: ResponsesRefused | None
) -> ResponsesChoice:
    """The path for a provider that has (``responses_api``) or lacks OpenAI's Responses API, given the
    request's Chat rewriting (``chat_json``) or why there is none (``refusal``)."""
    return _choose(responses_api, chat_json, refusal)


@icontract.ensure(lambda responses_api, result: (result.path is ResponsesPath.VERBATIM) == responses_api)
def responses_path_for(body_json: str, *, responses_api: bool) -> ResponsesChoice:
    """The path of the caller's Responses request (its JSON text) to a provider with or without the API."""
    if responses_api:
        return choose_responses_path(responses_api=True, chat_json=None, refusal=None)
    try:
        chat_json = responses_to_chat(json.loads(body_json)).chat_json
    except ResponsesRefused as refused:
        return choose_responses_path(responses_api=False, chat_json=None, refusal=refused)
    except (TranslationError, ValueError) as exc:  # malformed: only OpenAI's API can say what it means
        return choose_responses_path(
            responses_api=False, chat_json=None, refusal=ResponsesRefused("request", f"has no Chat form: {exc}")
        )
    return choose_responses_path(responses_api=False, chat_json=chat_json, refusal=None)


def _own_items(items: object) -> bool:
    # JSON-parsed items are exactly dicts (and CrossHair's other Mappings crash in their own .get)
    return isinstance(items, list) and any(type(i) is dict and own_reasoning(i) for i in items)


def _input_kept(items: object) -> object:
    """``items`` without this gateway's own reasoning items (the same object when it has none)."""
    if not _own_items(items):
        return items
    assert isinstance(items, list)
    return [i for i in items if not (type(i) is dict and own_reasoning(i))]


@icontract.ensure(lambda body, result: (result == (REASONING_ITEM_DROPPED,)) == _own_items(body.get("input")))
@icontract.ensure(lambda result: result in ((), (REASONING_ITEM_DROPPED,)))
def verbatim_dropped(body: Mapping[str, Any]) -> tuple[str, ...]:
    """What the verbatim body leaves out of the caller's: this gateway's own reasoning items, named."""
    return (REASONING_ITEM_DROPPED,) if _own_items(body.get("input")) else ()


def _passthrough_body(body: Mapping[str, Any], model: str, stream: bool) -> dict[str, Any]:
    out = {key: value for key, value in body.items() if key not in RESPONSES_ROUTER_OWNED}
    if "input" in out:
        out["input"] = _input_kept(out["input"])
    out["model"] = model
    if stream:
        out["stream"] = True
        if body.get("stream_options") is not None:
            out["stream_options"] = body["stream_options"]
    return out


@icontract.ensure(
    lambda body, result: all(result[k] is body[k] for k in body if k not in RESPONSES_ROUTER_OWNED and k != "input"),
    "every field the router does not own is the caller's, untouched",
)
@icontract.ensure(
    lambda body, result: "input" not in body or (result["input"] is body["input"]) != _own_items(body["input"]),
    "input is the caller's own object unless it holds this gateway's reasoning items",
)
@icontract.ensure(
    lambda result: not _own_items(result.get("input")), "no reasoning item of this gateway's is sent to OpenAI"
)
@icontract.ensure(lambda body, result: set(result) - RESPONSES_ROUTER_OWNED == set(body) - RESPONSES_ROUTER_OWNED)
@icontract.ensure(lambda model, stream, result: result["model"] == model and ("stream" in result) == stream)
def responses_passthrough_body(body: Mapping[str, Any], *, model: str, stream: bool) -> dict[str, Any]:
    """The caller's Responses body for ``model`` with the router's fields set (see the module doc)."""
    return _passthrough_body(body, model, stream)
