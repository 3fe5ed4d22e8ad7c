"""A Chat Completions answer's token log probabilities and URL citations in the Responses API's shape.

A Responses request asking for logprobs (``top_logprobs``, ``include: ["message.output_text.logprobs"]``)
answered through its Chat rewriting gets the provider's ``choices[].logprobs.content`` back on its
``output_text`` parts and text deltas, entry for entry:

==============================================  ============================================
Chat Completions (``logprobs.content[i]``)      Responses
==============================================  ============================================
``token``, ``logprob``, ``bytes``               the same, on the ``output_text`` part's
``top_logprobs[j]`` {token, logprob, bytes}     ``logprobs`` (``bytes: null`` becomes the token's
                                                UTF-8 bytes, which the part requires)
the same                                        ``response.output_text.delta``'s ``logprobs``:
                                                token, logprob, ``top_logprobs`` {token, logprob}
``logprobs.refusal``                            none (a refusal part has no logprobs)
==============================================  ============================================

A logprobs object that is not the documented shape gives no entries rather than a wrong one.

A Chat answer's ``message.annotations`` (OpenAI's search models: ``{type: url_citation,
url_citation: {url, title, start_index, end_index}}``) become the ``output_text`` part's
``annotations`` (``{type: url_citation, url, title, start_index, end_index}``); an annotation of
another type has no Responses form here and is left out (:func:`responses_annotations` says how many).
"""

from __future__ import annotations

import json
from typing import Any

import icontract

__all__ = ["chat_answer_logprobs", "responses_annotations", "responses_delta_logprobs", "responses_part_logprobs"]


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _entry(raw: object) -> dict[str, Any] | None:
    """One Chat logprob entry as a Responses part entry (bytes filled in), or None when malformed."""
    if not isinstance(raw, dict) or not isinstance(raw.get("token"), str) or not _number(raw.get("logprob")):
        return None
    token: str = raw["token"]
    raw_bytes = raw.get("bytes")
    ok_bytes = isinstance(raw_bytes, list) and all(isinstance(b, int) and not isinstance(b, bool) for b in raw_bytes)
    return {"token": token, "logprob": raw["logprob"], "bytes": raw_bytes if ok_bytes else list(token.encode())}


def _part_logprobs(chat_logprobs_json: str | None) -> list[dict[str, Any]]:
    if chat_logprobs_json is None:
        return []
    try:
        logprobs = json.loads(chat_logprobs_json)
    except ValueError:
        return []
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list):
        return []
    out = []
    for raw in content:
        entry = _entry(raw)
        if entry is None:
            return []  # not the documented shape: no entries rather than wrong ones
        tops = raw.get("top_logprobs") or []
        top_entries = [_entry(t) for t in tops] if isinstance(tops, list) else [None]
        if any(t is None for t in top_entries):
            return []
        out.append({**entry, "top_logprobs": top_entries})
    return out


@icontract.ensure(lambda result: all(set(e) == {"token", "logprob", "bytes", "top_logprobs"} for e in result))
@icontract.ensure(lambda result: all(isinstance(e["token"], str) and isinstance(e["bytes"], list) for e in result))
def responses_part_logprobs(chat_logprobs_json: str | None) -> list[dict[str, Any]]:
    """A Chat ``logprobs`` object (compact JSON; None: none) as an ``output_text`` part's ``logprobs``."""
    return _part_logprobs(chat_logprobs_json)


def _delta_logprobs(chat_logprobs_json: str | None) -> list[dict[str, Any]]:
    return [
        {
            "token": e["token"],
            "logprob": e["logprob"],
            "top_logprobs": [{"token": t["token"], "logprob": t["logprob"]} for t in e["top_logprobs"]],
        }
        for e in _part_logprobs(chat_logprobs_json)
    ]


@icontract.ensure(
    lambda chat_logprobs_json, result: (
        [e["token"] for e in result] == [e["token"] for e in responses_part_logprobs(chat_logprobs_json)]
    )
)
def responses_delta_logprobs(chat_logprobs_json: str | None) -> list[dict[str, Any]]:
    """A Chat ``logprobs`` object as a ``response.output_text.delta`` event's ``logprobs``."""
    return _delta_logprobs(chat_logprobs_json)


def _chat_answer_logprobs(wire_body_json: str | None) -> str | None:
    if wire_body_json is None:
        return None
    try:
        body = json.loads(wire_body_json)
    except ValueError:
        return None
    choices = body.get("choices") if isinstance(body, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    logprobs = first.get("logprobs") if isinstance(first, dict) else None
    return json.dumps(logprobs, separators=(",", ":")) if isinstance(logprobs, dict) else None


@icontract.ensure(lambda result: result is None or result.startswith("{"))
def chat_answer_logprobs(wire_body_json: str | None) -> str | None:
    """The first choice's ``logprobs`` object (compact JSON) of a Chat Completions answer body, or None."""
    return _chat_answer_logprobs(wire_body_json)


def _url_citation(raw: object) -> dict[str, Any] | None:
    if not isinstance(raw, dict) or raw.get("type") != "url_citation" or not isinstance(raw.get("url_citation"), dict):
        return None
    cite = raw["url_citation"]
    fields = {"url": cite.get("url"), "title": cite.get("title", ""), "start_index": cite.get("start_index"),
              "end_index": cite.get("end_index")}  # fmt: skip
    strings = isinstance(fields["url"], str) and isinstance(fields["title"], str)
    indices = all(isinstance(fields[k], int) and not isinstance(fields[k], bool) for k in ("start_index", "end_index"))
    return {"type": "url_citation", **fields} if strings and indices else None


def _responses_annotations(annotations_json: str | None) -> tuple[list[dict[str, Any]], int]:
    if annotations_json is None:
        return [], 0
    try:
        raw = json.loads(annotations_json)
    except ValueError:
        return [], 0
    items = raw if isinstance(raw, list) else []
    out = [a for a in (_url_citation(item) for item in items) if a is not None]
    return out, len(items) - len(out)


@icontract.ensure(lambda result: result[1] >= 0 and all(a["type"] == "url_citation" for a in result[0]))
def responses_annotations(annotations_json: str | None) -> tuple[list[dict[str, Any]], int]:
    """A Chat message's ``annotations`` (compact JSON) as ``output_text`` annotations, and how many had no form."""
    return _responses_annotations(annotations_json)
