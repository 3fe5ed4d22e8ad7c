"""The official SDKs' request types as oracle: every body the emitters print for the whole content model validates."""

from __future__ import annotations

import random

import pydantic
from anthropic.types import message_create_params as anthropic_params
from openai.types.chat import completion_create_params as openai_params

from falsification.test_mpa005_translation import message_tree
from routeproof.core.formats.translate import parse_anthropic_request, request_to_anthropic
from routeproof.core.formats.translate_emit import _to_openai

_ANTHROPIC = pydantic.TypeAdapter(anthropic_params.MessageCreateParamsNonStreaming)
_OPENAI = pydantic.TypeAdapter(openai_params.CompletionCreateParamsNonStreaming)


def test_emitted_bodies_validate_against_the_sdk_request_types() -> None:
    """200 trees (images, PDFs, signed thinking, cache markers, options): Anthropic bodies validate against the
    anthropic SDK's MessageCreateParams; the OpenAI-carriable ones' OpenAI bodies against CompletionCreateParams."""
    rng = random.Random(31)
    for serial in range(200):
        full = serial % 2 == 1
        req, extras = parse_anthropic_request(message_tree(rng, serial, full=full))
        _ANTHROPIC.validate_python(request_to_anthropic(req, "claude-sonnet-4-5"))
        if not full:
            _OPENAI.validate_python(_to_openai(req, extras))
