"""Token-aware chunks of a document: each fits what the embedding model reads.

A chunk is embedded as ``heading + "\\n" + content`` (see
:mod:`ccmemory.embeddings`), and the encoder reads at most
:data:`ccmemory.tokens.MODEL_MAX_TOKENS` tokens of it, [CLS] and [SEP]
included; so heading and content together stay within
:data:`ccmemory.tokens.CONTENT_TOKENS` (that limit less the two), counted with
the model's own tokenizer, and no token of a chunk is ever cut.
Within a section, whole blocks are packed together while they fit; a block
that is too long is split at lines (code, lists) or sentences (prose), and a
single line or sentence that is still too long is cut at a token boundary.
Every step is linear in the text's length (a text is tokenized a bounded
number of times), so the largest document takes seconds, not hours.
"""

from __future__ import annotations

import re

from . import tokens
from .markdown_blocks import Block, Section

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
#: A heading path may use at most this share of a chunk's tokens; a longer one is cut.
HEADING_SHARE = 4


def _pieces(block: Block, budget: int) -> list[str]:
    """Parts of a block, each within ``budget`` tokens."""
    if block.kind in ("code", "list"):
        parts = block.text.split("\n")
    else:
        parts = _SENTENCE_END.split(block.text)
    fitted: list[str] = []
    for part, size in zip(parts, tokens.counts(parts)):
        if size > budget:
            cuts, part = tokens.split(part, budget)
            fitted.extend(cuts)
        if part.strip():
            fitted.append(part)
    joiner = "\n" if block.kind in ("code", "list") else " "
    return _pack(fitted, budget, joiner)


def _pack(parts: list[str], budget: int, joiner: str) -> list[str]:
    """Greedily join consecutive parts while the joined text stays within ``budget`` tokens.

    The joiners are whitespace, which the tokenizer never counts, so the sum of
    the parts' counts is the count of the joined text.
    """
    packed: list[str] = []
    current: list[str] = []
    used = 0
    for part, size in zip(parts, tokens.counts(parts)):
        if current and used + size > budget:
            packed.append(joiner.join(current))
            current, used = [], 0
        current.append(part)
        used += size
    if current:
        packed.append(joiner.join(current))
    return [text.strip("\n") for text in packed if text.strip()]


def chunk_sections(sections: list[Section], limit: int = tokens.CONTENT_TOKENS) -> list[tuple[str, str]]:
    """(heading, content) pairs whose embedded text fits in ``limit`` tokens."""
    chunks: list[tuple[str, str]] = []
    for section in sections:
        heading = section.heading
        if heading and tokens.count(heading) > limit // HEADING_SHARE:
            heading = tokens.head(heading, limit // HEADING_SHARE).rstrip()
        budget = limit - (tokens.count(heading + "\n") if heading else 0)
        units: list[str] = []
        for block, size in zip(section.blocks, tokens.counts([block.text for block in section.blocks])):
            units.extend([block.text] if size <= budget else _pieces(block, budget))
        chunks.extend((heading, text) for text in _pack(units, budget, "\n\n"))
    return chunks
