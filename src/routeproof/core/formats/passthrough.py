"""Same-protocol passthrough and cross-protocol field decisions, as pure functions.

When the caller and the provider speak the same protocol, the provider's body is the caller's own
body (``WireOrigin.body_json``) with only the fields the router owns set by the router:

==================  ==========================================================================
field               what the router does
==================  ==========================================================================
``model``           the alias resolved to this provider's model id
``stream``          set for a streamed call, removed for a plain one (with OpenAI's
                    ``stream_options``; a stream gets ``stream_options.include_usage = true`` so
                    its usage is billed, the caller's other ``stream_options`` kept)
the output cap      the caller's value kept; OpenAI's ``max_tokens`` is renamed to the field the
                    model takes (``max_completion_tokens``) when the capability table says so; no
                    cap is invented for OpenAI; Anthropic requires ``max_tokens``, so a request
                    without one gets the model's documented maximum, reported in ``filled``
==================  ==========================================================================

Every other field, including fields newer than this code, is sent verbatim, except the parameters
the capability table says the model rejects (``fit_request``'s names), which are left out and
reported. Across protocols, each field the parse could not carry is looked up in the field table
(:func:`routeproof.core.formats.field_table.treatment_of`): DROPPED fields are named, REFUSED fields make
the provider ineligible (the shell skips it, naming the field and the reason).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import icontract

from routeproof.core.formats.field_table import Treatment, treatment_of
from routeproof.core.formats.translate_common import _ANTHROPIC_REQUEST_KEYS, _OPENAI_REQUEST_KEYS
from routeproof.core.formats.translate_emit import _dropped_by_target
from routeproof.core.messages import WireFormat
from routeproof.core.types import ChatRequest

__all__ = [
    "OUTPUT_CAP_FIELDS",
    "ROUTER_OWNED",
    "CrossPlan",
    "Passthrough",
    "PassthroughPlan",
    "cross_protocol_plan",
    "passthrough_body",
    "translation_drops",
    "untranslated_fields",
    "wire_keys_of_drops",
]

OUTPUT_CAP_FIELDS: Mapping[WireFormat, tuple[str, ...]] = {
    WireFormat.OPENAI_CHAT: ("max_completion_tokens", "max_tokens"),
    WireFormat.ANTHROPIC_MESSAGES: ("max_tokens",),
}
"""The output-cap fields of each passthrough protocol, the preferred one first."""

ROUTER_OWNED: Mapping[WireFormat, frozenset[str]] = {
    WireFormat.OPENAI_CHAT: frozenset({"model", "stream", "stream_options", "max_completion_tokens", "max_tokens"}),
    WireFormat.ANTHROPIC_MESSAGES: frozenset({"model", "stream", "max_tokens"}),
}
"""The top-level fields the router sets; every other field of the caller's body passes untouched."""

_STOP_KEY = {WireFormat.OPENAI_CHAT: "stop", WireFormat.ANTHROPIC_MESSAGES: "stop_sequences"}


@dataclass(frozen=True, slots=True, kw_only=True)
class PassthroughPlan:
    """What the router sets on a same-protocol body for one provider attempt.

    ``drops`` are ``fit_request``'s names of the parameters the model rejects (``temperature``,
    ``top_p``, ``stop_sequences`` or ``stop_sequences[N:]``); ``kept_stops`` the stop sequences the
    model takes when only a tail was dropped. ``max_tokens_field`` is the cap field the model takes;
    ``default_max_tokens`` is filled in when an Anthropic body has no ``max_tokens``.
    """

    protocol: WireFormat
    model: str
    stream: bool
    max_tokens_field: str
    default_max_tokens: int | None = None
    drops: tuple[str, ...] = ()
    kept_stops: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.protocol not in ROUTER_OWNED:
            known = sorted(p.value for p in ROUTER_OWNED)
            raise ValueError(f"PassthroughPlan.protocol must be one of {known}, got {self.protocol!r}")
        if self.max_tokens_field not in OUTPUT_CAP_FIELDS[self.protocol]:
            raise ValueError(
                f"PassthroughPlan.max_tokens_field must be one of {OUTPUT_CAP_FIELDS[self.protocol]}, "
                f"got {self.max_tokens_field!r}"
            )
        if self.default_max_tokens is not None and self.default_max_tokens <= 0:
            raise ValueError(f"PassthroughPlan.default_max_tokens must be > 0, got {self.default_max_tokens!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Passthrough:
    """The body to send, the caller's fields left out (capability drops), and fields the router filled."""

    body: dict[str, Any]
    dropped: tuple[str, ...]
    filled: tuple[str, ...]


def wire_keys_of_drops(protocol: WireFormat, drops: tuple[str, ...]) -> frozenset[str]:
    """The top-level body keys ``fit_request``'s ``drops`` name in ``protocol``'s wire shape."""
    keys = set()
    for name in drops:
        keys.add(_STOP_KEY[protocol] if name.startswith("stop_sequences") else name)
    return frozenset(keys)


def _passthrough(origin: Mapping[str, Any], plan: PassthroughPlan) -> Passthrough:
    body = dict(origin)  # a shallow copy: the caller's order and every nested value as received
    body["model"] = plan.model
    filled: list[str] = []
    if plan.stream:
        body["stream"] = True
        if plan.protocol is WireFormat.OPENAI_CHAT:
            options = body.get("stream_options")
            body["stream_options"] = {**(options if isinstance(options, dict) else {}), "include_usage": True}
    else:
        body.pop("stream", None)
        if plan.protocol is WireFormat.OPENAI_CHAT:  # router-owned there; any other protocol's is the caller's
            body.pop("stream_options", None)
    caps = OUTPUT_CAP_FIELDS[plan.protocol]
    present = [name for name in caps if name in body]
    if present:
        value = body[present[0]]
        for name in present:
            del body[name]
        body[plan.max_tokens_field] = value
    elif plan.default_max_tokens is not None and plan.protocol is WireFormat.ANTHROPIC_MESSAGES:
        body["max_tokens"] = plan.default_max_tokens
        filled.append("max_tokens")
    dropped: list[str] = []
    stop_key = _STOP_KEY[plan.protocol]
    for name in plan.drops:
        key = stop_key if name.startswith("stop_sequences") else name
        if key not in body or key in ROUTER_OWNED[plan.protocol]:
            continue  # a field the router sets is never a capability drop
        if name.startswith("stop_sequences[") and plan.kept_stops:
            body[key] = list(plan.kept_stops)
        else:
            del body[key]
        dropped.append(key + name[len("stop_sequences") :] if name.startswith("stop_sequences") else name)
    return Passthrough(body=body, dropped=tuple(dropped), filled=tuple(filled))


@icontract.ensure(lambda plan, result: result.body["model"] == plan.model)
@icontract.ensure(lambda plan, result: ("stream" in result.body) == plan.stream)
@icontract.ensure(
    lambda origin, plan, result: all(
        result.body[key] == value
        for key, value in origin.items()
        if key not in ROUTER_OWNED[plan.protocol] and key not in wire_keys_of_drops(plan.protocol, plan.drops)
    ),
    "every field the router does not own and the model does not reject is sent as received",
)
@icontract.ensure(
    lambda origin, plan, result: (
        plan.protocol is not WireFormat.OPENAI_CHAT
        or any(k in origin for k in OUTPUT_CAP_FIELDS[plan.protocol])
        or not any(k in result.body for k in OUTPUT_CAP_FIELDS[plan.protocol])
    ),
    "no output cap is invented for an OpenAI request",
)
def passthrough_body(origin: Mapping[str, Any], plan: PassthroughPlan) -> Passthrough:
    """The caller's body ``origin`` with the router-owned fields set by ``plan`` (see the module docstring)."""
    return _passthrough(origin, plan)


@dataclass(frozen=True, slots=True, kw_only=True)
class CrossPlan:
    """Fields of another protocol's request: the ones sent without (named) and the ones refused (with why)."""

    dropped: tuple[str, ...]
    refused: tuple[tuple[str, str], ...]


def _cross(source: WireFormat, target: WireFormat, fields: tuple[str, ...]) -> CrossPlan:
    dropped: list[str] = []
    refused: list[tuple[str, str]] = []
    if source is target:
        return CrossPlan(dropped=(), refused=())  # same protocol: every field verbatim
    for name in fields:
        if not name:  # a JSON body may hold the key "": no field of any protocol, so no mapping
            refused.append((name, "an empty field name has no equivalent in another protocol"))
            continue
        row = treatment_of(source, name, target)
        if row.treatment is Treatment.DROPPED:
            dropped.append(name)
        elif row.treatment is Treatment.REFUSED:
            refused.append((name, row.note))
    return CrossPlan(dropped=tuple(dropped), refused=tuple(refused))


@icontract.ensure(lambda source, target, result: source is not target or (not result.dropped and not result.refused))
@icontract.ensure(lambda fields, result: set(result.dropped) | {f for f, _ in result.refused} <= set(fields))
def cross_protocol_plan(source: WireFormat, target: WireFormat, fields: tuple[str, ...]) -> CrossPlan:
    """What happens to ``fields`` (the parse's untranslated fields of a ``source`` request) sent in ``target``."""
    return _cross(source, target, fields)


_PARSED_KEYS: Mapping[WireFormat, frozenset[str]] = {
    WireFormat.OPENAI_CHAT: _OPENAI_REQUEST_KEYS,
    WireFormat.ANTHROPIC_MESSAGES: _ANTHROPIC_REQUEST_KEYS,
}


@icontract.ensure(lambda body, result: set(result) <= set(body))
def untranslated_fields(protocol: WireFormat, body: Mapping[str, Any]) -> tuple[str, ...]:
    """The top-level fields of a ``protocol`` request body that the neutral request does not carry."""
    known = _PARSED_KEYS.get(protocol)
    return () if known is None else tuple(key for key in body if key not in known)


@icontract.ensure(lambda result: len(set(result)) == len(result))
def translation_drops(req: ChatRequest, target: WireFormat) -> tuple[str, ...]:
    """What the translation to ``target`` leaves out of the neutral ``req`` (the emitters' own list), to be named."""
    return tuple(dict.fromkeys(_dropped_by_target(req, target)))
