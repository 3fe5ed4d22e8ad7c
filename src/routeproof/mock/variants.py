"""The mock's OpenAI-protocol variants: Azure OpenAI and Google Gemini's OpenAI-compatible endpoint.

Both answer with OpenAI's Chat Completions bodies and streams (``shapes.py``); what differs is
here, following the services' public references (cited in ``docs/responses-and-provider-variants.md``):

- **Azure** routes ``POST /openai/deployments/{deployment}/chat/completions?api-version=...`` (the
  deployment is the model; a missing ``api-version`` is a 404, as Azure answers) and
  ``POST /openai/v1/chat/completions``; takes an ``api-key`` header or a Bearer token; errors are
  ``{"error": {"code": "429", "message": ...}}`` (the code a string), a 429 carries
  ``retry-after``, ``retry-after-ms`` and ``x-ratelimit-remaining-*``; a filtered prompt is a 400
  with ``code: "content_filter"`` and ``innererror.content_filter_result``; answers carry
  ``prompt_filter_results`` and per-choice ``content_filter_results``.
- **Gemini** routes ``POST /v1beta/openai/chat/completions``; takes a Bearer key; errors are a
  list holding one Google error object: ``[{"error": {"code": 429, "message": ...,
  "status": "RESOURCE_EXHAUSTED"}}]``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from routeproof.mock.script import Shape

__all__ = [
    "AZURE_CONTENT_FILTER",
    "OPENAI_VARIANTS",
    "azure_filter_annotations",
    "variant_auth_present",
    "variant_error",
    "variant_route",
]

OPENAI_VARIANTS = frozenset({Shape.AZURE, Shape.GEMINI})
"""Shapes that speak OpenAI's Chat Completions bodies and streams."""

_AZURE_DEPLOYMENT = re.compile(r"^/openai/deployments/([^/]+)/chat/completions$")
_GEMINI_PATHS = ("/v1beta/openai/chat/completions",)
_GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_NO_FILTER = {"filtered": False, "severity": "safe"}
AZURE_CONTENT_FILTER: dict[str, object] = {
    "error": {
        "message": "The response was filtered due to the prompt triggering Azure OpenAI's content management "
        "policy. Please modify your prompt and retry.",
        "type": None,
        "param": "prompt",
        "code": "content_filter",
        "status": 400,
        "innererror": {
            "code": "ResponsibleAIPolicyViolation",
            "content_filter_result": {
                "hate": _NO_FILTER, "self_harm": _NO_FILTER, "sexual": _NO_FILTER,
                "violence": {"filtered": True, "severity": "high"},
            },
        },
    }
}  # fmt: skip
"""Azure's 400 for a prompt its content filter refused (script it as a 400 body)."""


def variant_route(shape: Shape, path: str, body: Mapping[str, object]) -> tuple[str, bool] | int:
    """(model, stream) for a variant's chat route, or the status (404) when the path is not one."""
    route, _, query = path.partition("?")
    model = str(body.get("model", "mock-model"))
    if shape is Shape.AZURE:
        match = _AZURE_DEPLOYMENT.match(route)
        if match is not None:
            if "api-version=" not in query:
                return 404
            model = match.group(1)
        elif route != "/openai/v1/chat/completions":
            return 404
    elif route not in _GEMINI_PATHS:
        return 404
    return model, body.get("stream") is True


def variant_auth_present(shape: Shape, headers: Mapping[str, str]) -> bool:
    """Azure: an ``api-key`` header or a Bearer token; Gemini: a Bearer key."""
    auth = headers.get("authorization", "")
    bearer = auth.startswith("Bearer ") and len(auth) > len("Bearer ")
    return bearer or (shape is Shape.AZURE and bool(headers.get("api-key")))


def variant_error(shape: Shape, status: int, message: str) -> tuple[object, tuple[tuple[str, str], ...]]:
    """The variant's error body for ``status`` and the headers that come with it."""
    if shape is Shape.GEMINI:
        google = {"code": status, "message": message, "status": _GOOGLE_STATUS.get(status, "UNKNOWN")}
        return [{"error": google}], ()
    headers: tuple[tuple[str, str], ...] = ()
    if status == 429:  # Azure's throttle: both waits (ms wins) and the spent limit
        headers = (("retry-after", "1"), ("retry-after-ms", "20"),
                   ("x-ratelimit-remaining-requests", "0"), ("x-ratelimit-remaining-tokens", "1000"))  # fmt: skip
        message = message or "Requests to the ChatCompletions_Create Operation have exceeded call rate limit."
    return {"error": {"code": str(status), "message": message}}, headers


def azure_filter_annotations(body: dict[str, object]) -> dict[str, object]:
    """Azure's content-filter annotations added to an OpenAI answer (none filtered)."""
    results = {"hate": _NO_FILTER, "self_harm": _NO_FILTER, "sexual": _NO_FILTER, "violence": _NO_FILTER}
    choices = body.get("choices")
    if isinstance(choices, list):
        for choice in choices:
            if isinstance(choice, dict):
                choice["content_filter_results"] = results
    return {**body, "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": results}]}
