"""The attempts header is compact ASCII JSON, the same text whichever encoder writes it."""

from __future__ import annotations

import dataclasses
import json

import pytest

from routeproof.core.types import AttemptRecord, AttemptStatus, ProviderKind, RetryReason
from routeproof.gateway.app import _attempts_header
from routeproof.gateway.edge import COMPACT_JSON
from routeproof.gateway.failures import attempt_json

_RECORDS = (
    AttemptRecord(
        provider=ProviderKind.OPENAI, model="gpt-4o", attempt_num=1, fallback_position=0,
        status=AttemptStatus.RETRIED_AFTER_5XX, elapsed_ms=12, http_status=503, retry_reason=RetryReason.FIVE_XX,
    ),
    AttemptRecord(
        provider=ProviderKind.ANTHROPIC, model="claude-sonnet-4-5", attempt_num=1, fallback_position=1,
        status=AttemptStatus.SUCCEEDED, elapsed_ms=340, http_status=200, first_token_ms=90,
    ),
)  # fmt: skip


@pytest.mark.parametrize(
    "model",
    ["gpt-4o", "modèle-\u4e00", 'a"b\\c\u2028', "".join(map(chr, range(128)))],
    ids=["ascii", "non-ascii", "escapes", "every ascii character"],
)
def test_the_header_is_the_standard_encoders_ascii_text(model: str) -> None:
    records = (*_RECORDS[:1], dataclasses.replace(_RECORDS[1], model=model))
    name, value = _attempts_header(records)
    assert value == COMPACT_JSON.encode([attempt_json(r) for r in records]).encode()
    assert value.isascii()
    assert [a["model"] for a in json.loads(value)] == ["gpt-4o", model]
    assert name == b"x-routeproof-attempts"
