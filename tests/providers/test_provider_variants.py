"""core/provider_variants.py: which wait a throttled answer names (retry-after-ms, Retry-After, Google's
RetryInfo, x-ratelimit-reset-*), durations, error objects, usage and Azure URLs."""

from __future__ import annotations

import pytest

from routeproof.core.provider_variants import (
    azure_chat_url,
    counted_output_tokens,
    error_object,
    parse_duration_ms,
    wait_hint_ms,
)

NOW_MS = 1_700_000_000_000
RETRY_INFO = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}


@pytest.mark.parametrize(
    ("headers", "body", "expected"),
    [
        ({"retry-after-ms": "20", "retry-after": "1"}, None, 20),
        ({"retry-after": "3"}, None, 3000),
        ({"retry-after-ms": "soon", "retry-after": "2"}, None, 2000),
        ({}, [{"error": {"code": 429, "details": [RETRY_INFO]}}], 37_000),
        ({"retry-after": "1"}, {"error": {"details": [RETRY_INFO]}}, 1000),
        ({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6m0s"}, None, 360_000),
        ({"x-ratelimit-remaining-tokens": "5", "x-ratelimit-reset-tokens": "6m0s"}, None, None),
        (
            {
                "x-ratelimit-remaining-requests": "0",
                "x-ratelimit-reset-requests": "1s",
                "x-ratelimit-remaining-tokens": "0",
                "x-ratelimit-reset-tokens": "250ms",
            },
            None,
            1000,
        ),
        ({}, {"error": {"message": "x"}}, None),
        ({"retry-after-ms": "86400000"}, None, 86_400_000),
        ({"retry-after-ms": "86400001", "retry-after": "2"}, None, 2000),
        (
            {},
            [{"error": {"details": ["x", {"@type": "type.googleapis.com/google.rpc.QuotaFailure"}, RETRY_INFO]}}],
            37_000,
        ),
        ({}, {"error": {"details": [{"@type": RETRY_INFO["@type"], "retryDelay": 37}]}}, None),
        ({"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "250ms"}, None, 250),
    ],
)
def test_the_first_usable_wait_wins(headers: dict[str, str], body: object, expected: int | None) -> None:
    """retry-after-ms, then Retry-After, then RetryInfo, then a spent limit's reset; else no wait."""
    assert wait_hint_ms(headers, body, NOW_MS) == expected


@pytest.mark.parametrize(
    ("text", "ms"),
    [("37s", 37_000), ("6m0s", 360_000), ("1.5s", 1500), ("20ms", 20), ("1h", 3_600_000), ("2m", 120_000),
     ("24h", 86_400_000), ("", None), ("soon", None), ("-1s", None), ("48h", None)],
)  # fmt: skip
def test_durations(text: str, ms: int | None) -> None:
    """Go-style durations in ms; garbage, negatives and more than a day are None."""
    assert parse_duration_ms(text) == ms


def test_error_objects_plain_and_list_wrapped() -> None:
    """The error object of an OpenAI/Azure body and of Gemini's one-item list; None otherwise."""
    assert error_object({"error": {"code": "429"}}) == {"code": "429"}
    assert error_object([{"error": {"code": 429}}]) == {"code": 429}
    assert error_object([{"error": {}}, {"error": {}}]) is None
    assert error_object({"message": "x"}) is None


def test_thinking_tokens_in_the_total_count_as_output() -> None:
    """Output is completion_tokens, or total - prompt when larger; None for counts that are not ints."""
    assert counted_output_tokens({"prompt_tokens": 20, "completion_tokens": 151, "total_tokens": 553}) == 533
    assert counted_output_tokens({"prompt_tokens": 20, "completion_tokens": 30, "total_tokens": 50}) == 30
    assert counted_output_tokens({"prompt_tokens": 20, "completion_tokens": "x", "total_tokens": 50}) is None
    assert counted_output_tokens({"prompt_tokens": 21, "completion_tokens": 0, "total_tokens": 81}) == 60


def test_azure_urls() -> None:
    """A deployment URL with api-version, the deployment percent-encoded; v1 has neither."""
    base = "https://res.openai.azure.com/"
    assert azure_chat_url(base, "gpt-4o", "2024-10-21") == (
        "https://res.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21"
    )
    assert "/deployments/a%2Fb%3F/" in azure_chat_url(base, "a/b?", "2024-10-21")
    assert "/deployments/caf%C3%A9/" in azure_chat_url(base, "café", "2024-10-21")
    assert azure_chat_url("https://BOX/", "d", "v1") == "https://BOX/openai/v1/chat/completions"
    assert azure_chat_url(base, "gpt-4o", "v1") == "https://res.openai.azure.com/openai/v1/chat/completions"


def test_a_list_whose_len_lies_is_no_error_object() -> None:
    """A list subclass whose len() says 1 but holds nothing reads as no error object, never an IndexError
    (CrossHair's counterexample)."""

    class Lying(list[object]):
        """A list that claims one item."""

        def __len__(self) -> int:
            return 1

    assert error_object(Lying()) is None
    assert error_object([{"error": {"code": 429}}]) == {"code": 429}
