"""Content blocks beyond text and tools: images, documents, thinking, and the cache marker.

Every value is frozen and checked when built (an error names the field and the value). Signatures
and redacted-thinking data are opaque strings kept byte-exact: the router never looks inside them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from routeproof.core.frozen import as_enum, require_str, set_field

__all__ = [
    "DOCUMENT_MEDIA_TYPES",
    "IMAGE_MEDIA_TYPES",
    "CacheControl",
    "CacheTTL",
    "DocumentBlock",
    "ImageBlock",
    "RedactedThinkingBlock",
    "SourceKind",
    "ThinkingBlock",
    "check_cache_control",
]


class CacheTTL(enum.Enum):
    """How long a prompt-cache entry lives (Anthropic's ``cache_control.ttl``)."""

    FIVE_MINUTES = "5m"
    ONE_HOUR = "1h"


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheControl:
    """A prompt-cache breakpoint (``{"type": "ephemeral"}``, optionally with a ``ttl``)."""

    ttl: CacheTTL | None = None

    def __post_init__(self) -> None:
        if self.ttl is not None:
            set_field(self, "ttl", as_enum(CacheTTL, self.ttl, "CacheControl.ttl"))


def check_cache_control(value: object, where: str) -> None:
    """TypeError naming ``where`` unless ``value`` is a CacheControl or None."""
    if value is not None and not isinstance(value, CacheControl):
        raise TypeError(f"{where} must be a CacheControl or None, got {value!r}")


class SourceKind(enum.Enum):
    """Where a block's bytes are: inline base64, a URL the provider fetches, or inline plain text."""

    BASE64 = "base64"
    URL = "url"
    TEXT = "text"


IMAGE_MEDIA_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
"""The image media types every supported provider takes inline."""

DOCUMENT_MEDIA_TYPES = ("application/pdf", "text/plain")
"""The document media types: a PDF (base64 or URL) or plain text (inline)."""

IMAGE_DETAILS = ("", "auto", "low", "high")


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageBlock:
    """An image: base64 ``data`` with its ``media_type``, or a URL in ``data``.

    ``detail`` is OpenAI's resolution hint ("" when not given; Anthropic and Bedrock have none).
    """

    source: SourceKind
    data: str
    media_type: str = ""
    detail: str = ""
    cache_control: CacheControl | None = None

    def __post_init__(self) -> None:
        set_field(self, "source", as_enum(SourceKind, self.source, "ImageBlock.source"))
        require_str(self.data, "ImageBlock.data", empty=False)
        require_str(self.media_type, "ImageBlock.media_type")
        require_str(self.detail, "ImageBlock.detail")
        if self.source is SourceKind.TEXT:
            raise ValueError("ImageBlock.source must be base64 or url, got text")
        if self.source is SourceKind.BASE64 and self.media_type not in IMAGE_MEDIA_TYPES:
            raise ValueError(f"ImageBlock.media_type must be one of {IMAGE_MEDIA_TYPES}, got {self.media_type!r}")
        if self.source is SourceKind.URL and self.media_type:
            raise ValueError(f"ImageBlock.media_type is for base64 images only, got {self.media_type!r} with a URL")
        if self.detail not in IMAGE_DETAILS:
            raise ValueError(f"ImageBlock.detail must be one of {IMAGE_DETAILS}, got {self.detail!r}")
        check_cache_control(self.cache_control, "ImageBlock.cache_control")


@dataclass(frozen=True, slots=True, kw_only=True)
class DocumentBlock:
    """A document: a PDF (base64 or URL) or plain text (inline), with optional title, context, citations.

    ``media_type`` is ``application/pdf`` for base64 and is "" for a URL (a PDF) and for text.
    """

    source: SourceKind
    data: str
    media_type: str = ""
    title: str | None = None
    context: str | None = None
    citations: bool | None = None
    cache_control: CacheControl | None = None

    def __post_init__(self) -> None:
        set_field(self, "source", as_enum(SourceKind, self.source, "DocumentBlock.source"))
        require_str(self.data, "DocumentBlock.data")
        require_str(self.media_type, "DocumentBlock.media_type")
        expected = {SourceKind.BASE64: "application/pdf", SourceKind.URL: "", SourceKind.TEXT: ""}[self.source]
        if self.media_type != expected:
            raise ValueError(
                f"DocumentBlock.media_type must be {expected!r} for a {self.source.value} source, "
                f"got {self.media_type!r}"
            )
        if self.source is not SourceKind.TEXT and not self.data:
            raise ValueError(f"DocumentBlock.data must not be empty for a {self.source.value} source")
        for name in ("title", "context"):
            value = getattr(self, name)
            if value is not None:
                require_str(value, f"DocumentBlock.{name}")
        if self.citations is not None and not isinstance(self.citations, bool):
            raise TypeError(f"DocumentBlock.citations must be a bool or None, got {self.citations!r}")
        check_cache_control(self.cache_control, "DocumentBlock.cache_control")


@dataclass(frozen=True, slots=True, kw_only=True)
class ThinkingBlock:
    """A model's visible reasoning with its ``signature`` (opaque, byte-exact; Anthropic checks it)."""

    thinking: str
    signature: str = ""

    def __post_init__(self) -> None:
        require_str(self.thinking, "ThinkingBlock.thinking")
        require_str(self.signature, "ThinkingBlock.signature")


@dataclass(frozen=True, slots=True, kw_only=True)
class RedactedThinkingBlock:
    """Reasoning the provider encrypted: ``data`` is opaque and goes back byte-exact."""

    data: str

    def __post_init__(self) -> None:
        require_str(self.data, "RedactedThinkingBlock.data", empty=False)
