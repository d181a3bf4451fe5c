"""Token counts as the built-in embedding model sees them, and the one limit on what it reads.

:data:`MODEL_MAX_TOKENS` is the single place the length of the model's input
is set: the encoder (:mod:`ccmemory.embeddings`) truncates every text there,
[CLS] and [SEP] included, and everything that is cut to fit the model (document
chunks in :mod:`ccmemory.chunking`, knowledge entries in
:mod:`ccmemory.knowledge.indexer`) is sized to :data:`CONTENT_TOKENS`, what is
left of it for a text. all-MiniLM-L6-v2 was trained on 256 word pieces, so it
reads 256 although its position table (``model_max_length`` in the shipped
``tokenizer_config.json``) would allow 512: longer input costs time and adds
little. Tokens past the limit are silently dropped by the encoder, so a chunk
sized to anything larger loses its end.

Counting needs the ``tokenizers`` package (installed with fastembed); without
it, counts are a conservative estimate (one token per three characters, or per
word if more), so chunks still stay inside the limit in practice. Importing
this module loads only the standard library (hooks must stay cheap).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

MODEL_FILES = Path(__file__).parent / "model_files"
SPECIAL_TOKENS = 2  # [CLS] ... [SEP]
#: Word pieces all-MiniLM-L6-v2 was trained on: what the encoder reads of a text.
TRAINED_TOKENS = 256


def _model_max_length() -> int:
    config = json.loads((MODEL_FILES / "tokenizer_config.json").read_text(encoding="utf-8"))
    return int(config["model_max_length"])


#: The model's position limit (512): it could read this much, but the encoder stops earlier.
POSITION_TOKENS = _model_max_length()
#: What the encoder reads of every text, its own [CLS] and [SEP] included; the rest is dropped.
MODEL_MAX_TOKENS = min(TRAINED_TOKENS, POSITION_TOKENS)
#: What a text to embed may use: the limit less [CLS] and [SEP].
CONTENT_TOKENS = MODEL_MAX_TOKENS - SPECIAL_TOKENS


@lru_cache(maxsize=1)
def tokenizer() -> Any:
    """The shipped tokenizer with truncation and padding off, for counting (None when ``tokenizers`` is missing)."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        return None
    loaded = Tokenizer.from_file(str(MODEL_FILES / "tokenizer.json"))
    loaded.no_truncation()
    loaded.no_padding()
    return loaded


def encoder_tokenizer(path: str | Path = MODEL_FILES / "tokenizer.json") -> Any:
    """A tokenizer set up the way the encoder runs it: special tokens added, cut at :data:`MODEL_MAX_TOKENS`, no padding.

    The encoder loads its tokenizer through this function, so what it reads and
    what the chunkers size to cannot drift apart; tests use it to check that no
    chunk loses a token (``encoding.overflowing`` stays empty).
    """
    from tokenizers import Tokenizer

    loaded = Tokenizer.from_file(str(path))
    loaded.enable_truncation(MODEL_MAX_TOKENS)
    loaded.no_padding()
    return loaded


def _estimate(text: str) -> int:
    return max((len(text) + 2) // 3, len(re.findall(r"\w+|[^\w\s]", text)))


def count(text: str) -> int:
    """Tokens of ``text`` without the special tokens."""
    return counts([text])[0]


def counts(texts: list[str]) -> list[int]:
    """Token counts of many texts in one batch."""
    loaded = tokenizer()
    if loaded is None:
        return [_estimate(text) for text in texts]
    return [len(encoding.ids) for encoding in loaded.encode_batch(texts, add_special_tokens=False)]


def head(text: str, limit: int) -> str:
    """The longest start of ``text`` that has at most ``limit`` tokens, cut at a token boundary."""
    loaded = tokenizer()
    if loaded is None:
        end = min(len(text), limit * 3)
        while end and _estimate(text[:end]) > limit:
            end -= max(1, end // 10)
        return text[:end]
    offsets = loaded.encode(text, add_special_tokens=False).offsets
    if len(offsets) <= limit:
        return text
    return text[: offsets[limit][0]]
