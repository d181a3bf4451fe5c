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
import os
import re
from bisect import bisect_left, bisect_right
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
        return counting_tokenizer(MODEL_FILES / "tokenizer.json")
    except ImportError:
        return None


def counting_tokenizer(path: str | Path) -> Any:
    """The tokenizer at ``path`` with truncation and padding off, for counting a model's word pieces.

    One copy per file (a tokenizer holds its whole vocabulary): the encoder, the embedder's window
    counter and :func:`tokenizer` share it; it is never changed once made.
    """
    return _counting_tokenizer(os.path.realpath(path))


@lru_cache(maxsize=4)
def _counting_tokenizer(path: str) -> Any:
    from tokenizers import Tokenizer

    loaded = Tokenizer.from_file(path)
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


_ESTIMATED_TOKEN = re.compile(r"\w+|[^\w\s]")


def _estimate(text: str) -> int:
    return max((len(text) + 2) // 3, len(_ESTIMATED_TOKEN.findall(text)))


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


def split(text: str, limit: int) -> tuple[list[str], str]:
    """``text`` cut at token boundaries: pieces of ``limit`` tokens while more remain, and the rest.

    The pieces are those of taking :func:`head` of what is left again and again, but in
    linear time: the text is tokenized once. Word pieces depend only on their own word
    (the model's pre-tokenizer splits at whitespace and punctuation), so the tokens after
    a cut at a word's start are the ones already known; only the tail of a word cut in its
    middle is tokenized again.
    """
    loaded = tokenizer()
    if loaded is None:
        return _split_estimated(text, limit)
    encoding = loaded.encode(text, add_special_tokens=False)
    starts = [start for start, _ in encoding.offsets]
    ends = [end for _, end in encoding.offsets]
    words = encoding.word_ids
    pieces: list[str] = []
    base = 0  # where the rest starts
    tail: list[int] = []  # starts of the re-tokenized tail of a word cut in its middle, first in the rest
    tail_end = 0
    after = 0  # the first token of the first encoding that is still part of the rest, after the tail
    while len(tail) + len(starts) - after > limit:
        if limit < len(tail):
            cut, in_word, word_end = tail[limit], True, tail_end
        else:
            index = after + limit - len(tail)
            cut = starts[index]
            in_word = index > after and words[index] == words[index - 1]
            word_end = index
            while in_word and word_end < len(starts) and words[word_end] == words[index]:
                word_end += 1
            if in_word:
                after, word_end = word_end, ends[word_end - 1]
            else:
                after = index
        if cut <= base:  # a single token longer than the limit cannot happen with a sane limit
            break
        pieces.append(text[base:cut])
        base = cut
        if in_word:
            tail = [cut + start for start, _ in loaded.encode(text[cut:word_end], add_special_tokens=False).offsets]
            tail_end = word_end
        else:
            tail = []
    return pieces, text[base:]


def _split_estimated(text: str, limit: int) -> tuple[list[str], str]:
    """:func:`split` on the estimate: the words are found once, and each cut looks at its window only."""
    spans = [match.span() for match in _ESTIMATED_TOKEN.finditer(text)]
    word_starts = [start for start, _ in spans]

    def estimate_from(base: int) -> int:
        index = bisect_left(word_starts, base)
        cut_word = 1 if index and spans[index - 1][1] > base else 0  # the tail of a word cut in its middle
        return max((len(text) - base + 2) // 3, len(spans) - index + cut_word)

    pieces: list[str] = []
    base = 0
    while estimate_from(base) > limit:
        cut = head(text[base:base + limit * 3], limit)  # head() never looks further than this
        if not cut:
            break
        pieces.append(cut)
        base += len(cut)
    return pieces, text[base:]


#: Word pieces a window of a long text holds at most (:func:`windows`): half what the model reads, so
#: a passage the text mentions once, among much about something else, is most of a window of its own.
WINDOW_TOKENS = 128
#: Where a window may end, strongest first: a blank line, a line's end, a sentence's end.
WINDOW_BREAKS = (re.compile(r"\n\s*\n"), re.compile(r"\n"), re.compile(r"(?<=[.!?])\s+"))


def windows(text: str, counter: Any = None) -> list[str]:
    """What the encoder reads to represent all of ``text``: the text itself, then the windows that cover it.

    The first item is ``text`` whole (the encoder reads its first :data:`CONTENT_TOKENS`, so its vector is
    the one a text always had). The windows after it follow the text's own breaks: the text is cut at
    blank lines, a part still longer than :data:`WINDOW_TOKENS` at line ends, then at sentence ends, then
    every :data:`WINDOW_TOKENS` word pieces; consecutive parts are packed into windows of at most
    :data:`WINDOW_TOKENS`. A window ends where a thought does, so none needs to overlap the next. A text
    that fits the model, or any text when ``tokenizers`` is missing, gives ``[text]``.

    Word pieces are those of ``counter`` (a :func:`counting_tokenizer`: the model's own, which the encoder
    cuts by), the shipped model's by default.
    """
    loaded = counter or tokenizer()
    if loaded is None:
        return [text]
    offsets = loaded.encode(text, add_special_tokens=False).offsets
    if len(offsets) <= CONTENT_TOKENS:
        return [text]
    starts = [start for start, _ in offsets]
    ends = [end for _, end in offsets]

    def pieces(start: int, end: int) -> int:
        """Word pieces of ``text[start:end]``, which is cut between word pieces."""
        return bisect_right(ends, end) - bisect_left(starts, start)

    def parts(start: int, end: int, level: int) -> list[tuple[int, int]]:
        """``text[start:end]`` as spans of at most WINDOW_TOKENS, cut at the strongest breaks that do it."""
        count = pieces(start, end)
        if count <= WINDOW_TOKENS:
            return [(start, end)] if count else []
        if level == len(WINDOW_BREAKS):
            first, stop = bisect_left(starts, start), bisect_right(ends, end)
            return [(starts[index], ends[min(index + WINDOW_TOKENS, stop) - 1])
                    for index in range(first, stop, WINDOW_TOKENS)]
        found: list[tuple[int, int]] = []
        for cut in WINDOW_BREAKS[level].finditer(text, start, end):
            found += parts(start, cut.start(), level + 1)
            start = cut.end()
        return found + parts(start, end, level + 1)

    spans: list[tuple[int, int]] = []
    for start, end in parts(0, len(text), 0):
        if spans and pieces(spans[-1][0], end) <= WINDOW_TOKENS:
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
    return [text, *(text[start:end] for start, end in spans)]
