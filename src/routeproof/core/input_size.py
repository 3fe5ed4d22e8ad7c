"""Conservative input-token bounds for the blocks text does not measure: images, documents, thinking.

Pure. The ledger's worst-case reservation (``core/pricing.py``) adds :func:`block_tokens_bound` for
every such block, so a request with an image or a PDF never reserves less than it can be billed.
The bounds are the providers' documented worst cases, rounded up:

- an image: at most ``IMAGE_TOKENS_BOUND`` (Anthropic resizes past ~1.15 megapixels, about 1,600
  tokens; OpenAI's high detail is at most 85 + 170 x 8 tiles = 1,445; patch-based models ~2,500);
- a PDF: ``PDF_PAGE_TOKENS_BOUND`` per page (its text plus its page image), pages bounded by the
  decoded size at ``PDF_MIN_PAGE_BYTES`` bytes a page, and at most ``PDF_PAGES_MAX`` (URL: the max);
- text and thinking: one token per UTF-8 byte (the byte-level BPE bound ``pricing.py`` uses).

:func:`input_tokens_estimate` is the other side: not a bound but an estimate the router uses to
leave out, before sending, a model whose context window cannot hold the request
(``core/routing.context_misfits``). It must not skip a model the request fits, so it leans low:
``BYTES_PER_TOKEN_ESTIMATE`` UTF-8 bytes of text a token (the providers' documented ~4 characters
of English a token; code and other scripts take more tokens, never fewer), and images and PDFs,
whose size text cannot measure, count nothing. A request it under-estimates is sent and the
provider's own context-overflow answer decides, as before.
"""

from __future__ import annotations

import icontract

from routeproof.core.blocks import (
    DocumentBlock,
    ImageBlock,
    RedactedThinkingBlock,
    SourceKind,
    ThinkingBlock,
)
from routeproof.core.messages import ChatRequest, TextBlock, ToolResultBlock, ToolUseBlock

__all__ = [
    "BYTES_PER_TOKEN_ESTIMATE",
    "IMAGE_TOKENS_BOUND",
    "PDF_MIN_PAGE_BYTES",
    "PDF_PAGES_MAX",
    "PDF_PAGE_TOKENS_BOUND",
    "block_tokens_bound",
    "input_tokens_estimate",
]

BYTES_PER_TOKEN_ESTIMATE = 4

IMAGE_TOKENS_BOUND = 6_400
PDF_PAGE_TOKENS_BOUND = 5_000
PDF_PAGES_MAX = 100
PDF_MIN_PAGE_BYTES = 400

SizedBlock = ImageBlock | DocumentBlock | ThinkingBlock | RedactedThinkingBlock


def _block_tokens_bound_impl(block: SizedBlock) -> int:
    if isinstance(block, ImageBlock):
        return IMAGE_TOKENS_BOUND
    if isinstance(block, DocumentBlock):
        extra = sum(len(part.encode("utf-8")) for part in (block.title or "", block.context or ""))
        if block.source is SourceKind.TEXT:
            return len(block.data.encode("utf-8")) + extra
        if block.source is SourceKind.URL:
            pages = PDF_PAGES_MAX
        else:
            decoded = len(block.data) * 3 // 4
            pages = min(PDF_PAGES_MAX, decoded // PDF_MIN_PAGE_BYTES + 1)
        return pages * PDF_PAGE_TOKENS_BOUND + extra
    if isinstance(block, ThinkingBlock):
        return len(block.thinking.encode("utf-8"))
    return len(block.data)


@icontract.ensure(lambda result: result >= 0)
@icontract.ensure(lambda block, result: not isinstance(block, ImageBlock) or result >= IMAGE_TOKENS_BOUND)
def block_tokens_bound(block: SizedBlock) -> int:
    """An upper bound on the input tokens ``block`` is billed as (see the module docstring)."""
    return _block_tokens_bound_impl(block)


def _text_bytes(req: ChatRequest) -> int:
    parts: list[str] = [req.system or ""]
    for tool in req.tools:
        parts += [tool.name, tool.description, tool.input_schema_json]
    for message in req.messages:
        for block in message.content:
            if isinstance(block, TextBlock):
                parts.append(block.text)
            elif isinstance(block, ToolUseBlock):
                parts += [block.name, block.input_json]
            elif isinstance(block, ToolResultBlock):
                parts.append(block.content)
            elif isinstance(block, ThinkingBlock):
                parts.append(block.thinking)
            elif isinstance(block, DocumentBlock) and block.source is SourceKind.TEXT:
                parts.append(block.data)
    return sum(map(len, map(str.encode, parts)))  # UTF-8 bytes, in C (it runs per routed call)


@icontract.ensure(
    lambda req, result: (
        result >= 0 and 0 <= result * BYTES_PER_TOKEN_ESTIMATE - _text_bytes(req) < BYTES_PER_TOKEN_ESTIMATE
    ),
    "non-negative: the text's bytes / BYTES_PER_TOKEN_ESTIMATE, rounded up",
)  # one condition, not two: each costs icontract about ten Python calls per call (issue 25)
def input_tokens_estimate(req: ChatRequest) -> int:
    """An estimate, leaning low, of the input tokens ``req`` takes in a context window (module docstring)."""
    return -(-_text_bytes(req) // BYTES_PER_TOKEN_ESTIMATE)
