"""The caller's own request judged field by field against the field table, for a cross-protocol target.

The Bedrock path's one source of what is dropped or refused (:mod:`routeproof.core.formats.field_table`):
every field the caller set is looked up there, not only the ones the parse could not carry.

- every top-level key of the caller's body;
- every nested row of the table (``tools[].function.strict``, ``messages[].name``,
  ``system[].cache_control.ttl`` ...) whose path is present in the body (one pass along a trie of
  the rows' paths);
- every path the parse recorded as not carried (``WireExtras.untranslated``), indices as ``[]``: its
  row decides, and a TRANSLATED row (``messages[].content[].citations``, carried for documents) is
  named dropped for it, since the parse left this one out. A top-level key among them (``thinking``
  of an unknown type, ``tool_choice`` naming allowed tools) is a form of a translated field the
  content model does not carry: refused, never silently lost.

A DROPPED row names the field (the body is translated without it); a REFUSED row makes the target
ineligible, with the row's reason; a TRANSLATED or VERBATIM row is carried.

The emitter can still leave out a value inside a translated field (``tool_choice: "none"``, an effort
whose thinking budget does not fit under the cap): :func:`with_emitter_drops` adds those, under the
caller's field name, to the table's drops; one the table already named is not named twice.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import icontract

from routeproof.core.errors import TranslationError
from routeproof.core.formats.field_table import ROWS, Treatment, field_pattern, treatment_of
from routeproof.core.formats.passthrough import CrossPlan
from routeproof.core.formats.translate import parse_anthropic_request, parse_openai_request
from routeproof.core.formats.translate_emit import _dropped_by_target, _to_bedrock
from routeproof.core.messages import WireFormat
from routeproof.core.types import ChatRequest

__all__ = [
    "EMITTER_FIELD",
    "bedrock_refusals",
    "caller_fields_plan",
    "judge_caller_fields",
    "with_emitter_drops",
]

EMITTER_FIELD: Mapping[WireFormat, Mapping[str, str]] = {
    WireFormat.OPENAI_CHAT: {
        "tool.strict": "tools[].function.strict",
        "image.detail": "messages[].content[].image_url.detail",
    },
    WireFormat.ANTHROPIC_MESSAGES: {
        "user": "metadata",
        "reasoning_effort": "output_config.effort",
        "tool.strict": "tools[].strict",
        "parallel_tool_calls": "tool_choice.disable_parallel_tool_use",
        "document.context": "messages[].content[].context",
    },
}
"""The caller's field an emitter drop (its neutral name) comes from, per source protocol; a name not
listed is the same in the caller's protocol (``seed``, ``tool_choice``). A drop is already named when
the table named a path ending in it (``system[].cache_control.ttl`` covers ``cache_control.ttl``)."""


_END = ""  # the trie key under which a node holds the row's field (no path segment is empty)
_Trie = dict[str, Any]
_TRIES: dict[tuple[WireFormat, WireFormat], _Trie] = {}


def _trie(source: WireFormat, target: WireFormat) -> _Trie:
    """The table's nested field paths of the pair as a trie of segments, built once per pair (a path
    ending in ``[]`` is a kind of item, judged only when the parse recorded it)."""
    key = (source, target)
    if key not in _TRIES:
        root: _Trie = {}
        for row in ROWS:
            nested = "." in row.field or "[" in row.field
            if row.source is not source or row.target is not target or not nested or row.field.endswith("[]"):
                continue
            node = root
            for segment in row.field.split("."):
                node = node.setdefault(segment, {})
            node[_END] = row.field
        _TRIES[key] = root
    return _TRIES[key]


def _collect(value: object, node: _Trie, found: dict[str, None]) -> None:
    """Every row path of ``node`` present under ``value``, one pass over the body along the trie."""
    if not isinstance(value, dict):
        return
    for segment, child in node.items():
        if segment == _END:
            continue
        listed = segment.endswith("[]")
        key = segment[:-2] if listed else segment
        if key not in value:
            continue
        inner = value[key]
        items = (inner if isinstance(inner, list) else []) if listed else [inner]
        for item in items:
            if _END in child:
                found[child[_END]] = None
            _collect(item, child, found)


def _judge(source: WireFormat, target: WireFormat, body: Mapping[str, Any], untranslated: tuple[str, ...]) -> CrossPlan:
    if source is target:
        return CrossPlan(dropped=(), refused=())
    dropped: dict[str, None] = {}
    refused: dict[str, str] = {}

    def judge(name: str, *, left_out: bool = False) -> None:
        row = treatment_of(source, name, target)
        if row.treatment is Treatment.REFUSED:
            refused.setdefault(name, row.note)
        elif row.treatment is Treatment.DROPPED or left_out:
            dropped[name] = None

    for key in body:
        if not key:
            refused[key] = "an empty field name has no equivalent in another protocol"
        else:
            judge(key)
    found: dict[str, None] = {}
    _collect(body, _trie(source, target), found)
    present = list(found)
    for pattern in present:
        judge(pattern)
    for path in untranslated:
        pattern = field_pattern(path)
        if not pattern:
            refused[pattern] = "an empty field name has no equivalent in another protocol"
        elif pattern in body:
            if pattern not in dropped and pattern not in refused:
                refused[pattern] = f"this form of {pattern!r} has no {target.value} mapping in this version"
        else:
            judge(pattern, left_out=True)  # the parse left this one out: a translated row is no carrier
    return CrossPlan(dropped=tuple(dropped), refused=tuple(refused.items()))


@icontract.ensure(lambda source, target, result: source is not target or (not result.dropped and not result.refused))
@icontract.ensure(lambda result: not set(result.dropped) & {name for name, _ in result.refused})
@icontract.ensure(
    lambda source, target, body, result: (
        set(result.dropped) | {n for n, _ in result.refused}
        >= {
            key
            for key in body
            if key and treatment_of(source, key, target).treatment in (Treatment.DROPPED, Treatment.REFUSED)
        }
    ),
    "every top-level field the table drops or refuses is named",
)
def judge_caller_fields(
    source: WireFormat, target: WireFormat, body: Mapping[str, Any], untranslated: tuple[str, ...]
) -> CrossPlan:
    """The caller's ``body`` (a ``source`` request whose parse did not carry ``untranslated``) sent in
    ``target``: the fields dropped (named) and refused (with the table's reason). See the module docstring."""
    plan = _judge(source, target, body, untranslated)
    refused = {name for name, _ in plan.refused}
    return CrossPlan(dropped=tuple(d for d in plan.dropped if d not in refused), refused=plan.refused)


@icontract.require(lambda table_drops: len(set(table_drops)) == len(table_drops), "the table names a field once")
@icontract.ensure(lambda table_drops, result: result[: len(table_drops)] == table_drops)
@icontract.ensure(lambda result: len(set(result)) == len(result))
def with_emitter_drops(
    source: WireFormat, table_drops: tuple[str, ...], emitter_drops: tuple[str, ...]
) -> tuple[str, ...]:
    """``table_drops`` then each of the emitter's ``emitter_drops`` under the caller's field name
    (:data:`EMITTER_FIELD`), unless the table already named that field (or a path ending in it)."""
    names = EMITTER_FIELD.get(source, {})
    out = dict.fromkeys(table_drops)
    for name in emitter_drops:
        field = names.get(name, name)
        if not any(named == field or named.endswith("." + field) for named in out):
            out[field] = None
    return tuple(out)


def _untranslated(protocol: WireFormat, body: dict[str, Any]) -> tuple[str, ...]:
    if protocol is WireFormat.OPENAI_CHAT:
        return parse_openai_request(body)[1].untranslated
    if protocol is WireFormat.ANTHROPIC_MESSAGES:
        return parse_anthropic_request(body)[1].untranslated
    return ()  # another protocol's parse (the Responses API's) records its own; its keys are judged here


@icontract.ensure(lambda result: len(set(result.dropped)) == len(result.dropped))
@icontract.ensure(lambda request, result: request.origin is not None or not result.refused)
def caller_fields_plan(request: ChatRequest, fitted: ChatRequest, target: WireFormat) -> CrossPlan:
    """What of ``request`` (``fitted``: as the model's capabilities leave it) is dropped or refused in ``target``.

    With the caller's own request (``request.origin``) every field it set is judged by the field
    table (:func:`judge_caller_fields`), and the emitter's value-level drops are added under the
    caller's names; a request built in Python has no caller fields: the emitter's drops, by neutral name.
    """
    emitted = tuple(dict.fromkeys(_dropped_by_target(fitted, target)))
    origin = request.origin
    if origin is None or origin.protocol is target:
        return CrossPlan(dropped=emitted if origin is None else (), refused=())
    # the gateway's parse when it kept one (a plain dict again: the walk below reads dicts), else the text's
    body = dict(origin.parsed) if origin.parsed is not None else json.loads(origin.body_json)
    if not isinstance(body, dict):
        raise TranslationError(f"the caller's body is not a JSON object: {origin.body_json[:80]!r}")
    untranslated = origin.untranslated
    if untranslated is None:
        untranslated = _untranslated(origin.protocol, body)
    plan = judge_caller_fields(origin.protocol, target, body, untranslated)
    return CrossPlan(dropped=with_emitter_drops(origin.protocol, plan.dropped, emitted), refused=plan.refused)


@icontract.ensure(lambda request, result: request.origin is not None or not result or len(result) == 1)
def bedrock_refusals(request: ChatRequest) -> tuple[tuple[str, str], ...]:
    """Why Bedrock Converse cannot take ``request`` (field, reason), or () when it can: the field
    table's refusals of what the caller set, else the emitter's (``n > 1``, an image by http URL),
    named by the field its message starts with. The gateway's check before routing: a request no
    provider of the chain can take is a 400 naming the field, not a skip of every provider."""
    refused = caller_fields_plan(request, request, WireFormat.BEDROCK_CONVERSE).refused
    if refused:
        return refused
    try:
        _to_bedrock(request)
    except TranslationError as exc:
        message = str(exc)
        return ((message.split(":", 1)[0], message),)
    return ()
