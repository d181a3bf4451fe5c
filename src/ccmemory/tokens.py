"""Token counts as the built-in embedding model sees them, from the tokenizer shipped in ``model_files/``.

The model reads at most ``model_max_length`` tokens (512, from
``tokenizer_config.json``), two of them the ``[CLS]`` and ``[SEP]`` it adds
itself, and silently drops the rest: :data:`CONTENT_TOKENS` is what a chunk's
text may use. Counting needs the ``tokenizers`` package (installed with
fastembed); without it, counts are a conservative estimate (one token per
three characters, or per word if more), so chunks still stay inside the limit
in practice.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

MODEL_FILES = Path(__file__).parent / "model_files"
SPECIAL_TOKENS = 2  # [CLS] ... [SEP]


def _model_max_length() -> int:
    config = json.loads((MODEL_FILES / "tokenizer_config.json").read_text(encoding="utf-8"))
    return int(config["model_max_length"])


MODEL_MAX_TOKENS = _model_max_length()
CONTENT_TOKENS = MODEL_MAX_TOKENS - SPECIAL_TOKENS


@lru_cache(maxsize=1)
def tokenizer() -> Any:
    """The shipped tokenizer with truncation and padding off (None when ``tokenizers`` is missing)."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        return None
    loaded = Tokenizer.from_file(str(MODEL_FILES / "tokenizer.json"))
    loaded.no_truncation()
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
