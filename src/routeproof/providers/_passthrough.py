"""The providers' side of the caller's own request (``ChatRequest.origin``): passthrough and drops.

Same protocol (an OpenAI-compatible provider for an ``OPENAI_CHAT`` origin, Anthropic for
``ANTHROPIC_MESSAGES``): the body is the caller's, with the router's few fields set
(:func:`routeproof.core.formats.passthrough.passthrough_body`), and the allowed feature headers the gateway
kept go along. Another protocol: the body is translated from the neutral request as before; each
field the parse could not carry is looked up in the field table: dropped fields are named,
a refused one raises :class:`RefusedFields` (a ``TranslationError``), which the attempt boundary
turns into a skip of this provider naming the field. Feature headers never cross protocols: they
are named as dropped (``header:anthropic-beta``).

Every drop is logged (``router_parameters_dropped``) and returned, so the provider reports it in
``ProviderResponse.dropped_parameters`` (and the gateway in ``x-routeproof-dropped``).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from opentelemetry import metrics

from routeproof.core.capabilities import FittedRequest, ModelCapabilities
from routeproof.core.errors import TranslationError
from routeproof.core.formats.cross_fields import caller_fields_plan
from routeproof.core.formats.passthrough import (
    OUTPUT_CAP_FIELDS,
    PassthroughPlan,
    passthrough_body,
)
from routeproof.core.formats.responses_api import ResponsesRefused
from routeproof.core.formats.wire import decode_json
from routeproof.core.messages import WireFormat, WireOrigin
from routeproof.core.responses_route import ResponsesPath, responses_path_for
from routeproof.core.types import ChatRequest, ProviderKind

__all__ = [
    "DROPPED_METRIC",
    "HEADER_DROP_PREFIX",
    "Outgoing",
    "RefusedFields",
    "chat_view",
    "log_dropped",
    "outgoing_body",
]

logger = logging.getLogger("routeproof")

DROPPED_METRIC = "ai_router_parameters_dropped_total"
"""Counter of request fields left out, by provider and parameter (a closed set: capability names,
the field table's DROPPED rows, the emitters' drops and the allow-listed headers; unknown fields are
refused, never dropped)."""

HEADER_DROP_PREFIX = "header:"
"""How a feature header that could not go to this provider is named among the dropped parameters."""


class RefusedFields(TranslationError):
    """A field of the caller's request that this provider's protocol cannot take: skip the provider."""

    def __init__(self, target: WireFormat, refused: tuple[tuple[str, str], ...]) -> None:
        detail = "; ".join(f"{name!r}: {why}" for name, why in refused)
        super().__init__(f"{target.value} cannot carry {detail}", fields=tuple(name for name, _ in refused))
        self.target = target
        self.refused = refused


@dataclass(frozen=True, slots=True, kw_only=True)
class Outgoing:
    """What a provider sends: the body (None: translate the neutral request), headers, and what was dropped."""

    body: dict[str, Any] | None
    headers: tuple[tuple[str, str], ...]
    dropped: tuple[str, ...]
    filled: tuple[str, ...] = ()
    max_tokens: int | None = None  # a translated body's output cap, when the router chose it (caller set none)
    relay: bool = False  # the caller's own protocol, passed through: its stream is relayed (core/formats/relay.py)


def chat_view(request: ChatRequest) -> ChatRequest:
    """``request`` as a provider without OpenAI's Responses API takes it: a Responses origin becomes its
    Chat Completions rewriting (``core/responses_route.py``); any other request is unchanged.

    :raises ResponsesRefused: the request has a field only the Responses API can carry (skip this provider).
    """
    origin = request.origin
    if origin is None or origin.protocol is not WireFormat.OPENAI_RESPONSES:
        return request
    choice = responses_path_for(origin.body_json, responses_api=False)
    if choice.path is ResponsesPath.SKIPPED:
        raise ResponsesRefused(choice.field, choice.why)
    chat = WireOrigin(protocol=WireFormat.OPENAI_CHAT, body_json=choice.chat_json, headers=origin.headers)
    return replace(request, origin=chat)


def outgoing_body(
    request: ChatRequest,
    fitted: FittedRequest,
    caps: ModelCapabilities,
    *,
    target: WireFormat,
    model: str,
    stream: bool,
) -> Outgoing:
    """The body and headers for ``model`` in ``target`` when ``request`` carries the caller's own request.

    Without an origin (a request built in Python) the body is translated and only the capability
    drops are reported. :raises RefusedFields: a field ``target`` cannot carry (skip this provider).
    """
    own = request.origin is not None and request.origin.protocol is target  # not a Responses caller's Chat form
    request = chat_view(request)  # a Responses request reaching a provider without the Responses API
    origin = request.origin
    if origin is None:
        return Outgoing(body=None, headers=(), dropped=fitted.dropped)
    # the gateway's own parse when it kept one (not decoded twice); else the text, NaN refused as at the edge
    caller_body = origin.parsed if origin.parsed is not None else decode_json(origin.body_json)
    if not isinstance(caller_body, Mapping):  # pragma: no cover - the gateway parsed it as a request object
        raise TranslationError(f"the caller's body is not a JSON object: {origin.body_json[:80]!r}")
    if origin.protocol is target:
        cap_field = "max_tokens" if target is WireFormat.ANTHROPIC_MESSAGES else caps.max_tokens_field
        plan = PassthroughPlan(
            protocol=target,
            model=model,
            stream=stream,
            max_tokens_field=cap_field,
            default_max_tokens=request.max_tokens,
            drops=fitted.dropped,
            kept_stops=fitted.request.stop_sequences,
        )
        sent = passthrough_body(caller_body, plan)
        return Outgoing(body=sent.body, headers=origin.headers, dropped=sent.dropped, filled=sent.filled, relay=own)
    # every field the caller set, nested ones included, judged by the field table (core/formats/cross_fields.py):
    # a dropped one is named, a refused one skips this provider; the emitter's value-level drops are added
    cross = caller_fields_plan(request, fitted.request, target)
    if cross.refused:
        raise RefusedFields(target, cross.refused)
    headers = tuple(f"{HEADER_DROP_PREFIX}{name}" for name, _ in origin.headers)
    dropped = fitted.dropped + tuple(d for d in cross.dropped if d not in fitted.dropped) + headers
    if target is WireFormat.ANTHROPIC_MESSAGES and not any(
        k in caller_body for k in OUTPUT_CAP_FIELDS[origin.protocol]
    ):
        # Anthropic requires max_tokens and the caller set no cap: the model's documented maximum
        cap = min(request.max_tokens, caps.max_output_tokens or request.max_tokens)
        return Outgoing(body=None, headers=(), dropped=dropped, filled=("max_tokens",), max_tokens=cap)
    return Outgoing(body=None, headers=(), dropped=dropped)


@functools.cache
def _dropped_counter(provider: metrics.MeterProvider) -> metrics.Counter:
    meter = provider.get_meter("routeproof")
    return meter.create_counter(DROPPED_METRIC, description="Request fields left out, by provider and parameter")


def log_dropped(kind: ProviderKind, model: str, dropped: tuple[str, ...]) -> None:
    """The one log line (and metric) naming what was left out of a request for ``model``."""
    if not dropped:
        return
    counter = _dropped_counter(metrics.get_meter_provider())
    for name in dropped:
        counter.add(1, {"provider": kind.as_metric_label(), "parameter": name})
    logger.info(
        "router_parameters_dropped provider=%s model=%s dropped=%s",
        kind.as_metric_label(),
        model,
        ",".join(dropped),
        extra={"provider": kind.as_metric_label(), "model": model, "dropped_parameters": dropped},
    )
