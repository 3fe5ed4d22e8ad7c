"""The conservative input-token bounds for images, documents and thinking, and the reservation using them."""

from __future__ import annotations

from routeproof.core.blocks import DocumentBlock, ImageBlock, RedactedThinkingBlock, SourceKind, ThinkingBlock
from routeproof.core.input_size import (
    IMAGE_TOKENS_BOUND,
    PDF_PAGE_TOKENS_BOUND,
    PDF_PAGES_MAX,
    block_tokens_bound,
)
from routeproof.core.pricing import worst_case_prompt_tokens
from routeproof.core.types import ChatRequest, Message, Role, TextBlock


def test_an_image_is_bounded_by_the_largest_documented_image_cost() -> None:
    """Any image, tiny or by URL, counts IMAGE_TOKENS_BOUND tokens."""
    tiny = ImageBlock(source=SourceKind.BASE64, data="AA==", media_type="image/png")
    by_url = ImageBlock(source=SourceKind.URL, data="https://x.test/a.png")
    assert block_tokens_bound(tiny) == block_tokens_bound(by_url) == IMAGE_TOKENS_BOUND


def test_a_pdf_counts_pages_by_its_size_and_a_url_pdf_counts_the_maximum() -> None:
    """A base64 PDF is bounded by its decoded size in pages (at most PDF_PAGES_MAX); a URL PDF by the maximum."""
    small = DocumentBlock(source=SourceKind.BASE64, data="A" * 400, media_type="application/pdf")
    assert block_tokens_bound(small) == 1 * PDF_PAGE_TOKENS_BOUND
    big = DocumentBlock(source=SourceKind.BASE64, data="A" * 4_000_000, media_type="application/pdf")
    by_url = DocumentBlock(source=SourceKind.URL, data="https://x.test/a.pdf", title="t")
    assert block_tokens_bound(big) == PDF_PAGES_MAX * PDF_PAGE_TOKENS_BOUND
    assert block_tokens_bound(by_url) == PDF_PAGES_MAX * PDF_PAGE_TOKENS_BOUND + 1


def test_text_documents_and_thinking_count_their_utf8_bytes() -> None:
    """Text and thinking are bounded by one token per UTF-8 byte, like every other text."""
    doc = DocumentBlock(source=SourceKind.TEXT, data="héllo", context="ctx")
    assert block_tokens_bound(doc) == 6 + 3
    assert block_tokens_bound(ThinkingBlock(thinking="héllo", signature="sig")) == 6
    assert block_tokens_bound(RedactedThinkingBlock(data="abcd")) == 4


def test_the_worst_case_reservation_counts_an_image() -> None:
    """A request with an image reserves at least IMAGE_TOKENS_BOUND more than the same request without it."""
    image = ImageBlock(source=SourceKind.URL, data="https://x.test/a.png")
    plain = ChatRequest(messages=(Message.user("look"),))
    with_image = ChatRequest(messages=(Message(role=Role.USER, content=(TextBlock(text="look"), image)),))
    assert worst_case_prompt_tokens(with_image) >= worst_case_prompt_tokens(plain) + IMAGE_TOKENS_BOUND
