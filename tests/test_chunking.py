"""Document chunks measured in tokens with the real tokenizer shipped in ``model_files/``, and the Markdown parser.

The embedder reads ``heading + "\\n" + content`` and drops everything past
:data:`ccmemory.tokens.MODEL_MAX_TOKENS` tokens (its own [CLS] and [SEP]
included), so every chunk's embedded text must fit, counted the way the model
counts, special tokens and all.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from ccmemory import documents, tokens

MODEL_FILES = Path(__file__).resolve().parents[1] / "src" / "ccmemory" / "model_files"


@pytest.fixture(scope="module")
def model_tokenizer() -> Tokenizer:
    """The tokenizer as the model applies it: special tokens on, no truncation (so overflow shows)."""
    loaded = Tokenizer.from_file(str(MODEL_FILES / "tokenizer.json"))
    loaded.no_truncation()
    loaded.no_padding()
    return loaded


def embedded_tokens(loaded: Tokenizer, heading: str, content: str) -> int:
    text = f"{heading}\n{content}" if heading else content
    return len(loaded.encode(text).ids)


def test_the_limit_is_the_models_own():
    config = json.loads((MODEL_FILES / "tokenizer_config.json").read_text())
    assert tokens.MODEL_MAX_TOKENS == config["model_max_length"] == 512
    assert tokens.CONTENT_TOKENS == 510


LONG_PROSE = " ".join(f"Sentence {n} explains how the scheduler retries failed jobs with backoff." for n in range(300))
LONG_CODE = "\n".join(f"    result_{n} = compute_something(alpha_{n}, beta_{n}, gamma={n} * 3.14159)" for n in range(400))
ONE_HUGE_WORDLESS_LINE = "var c={" + ",".join(f"k{n}:{n * 7}" for n in range(3000)) + "}"  # minified, no spaces


@pytest.mark.parametrize("body", [
    LONG_PROSE,
    f"```python\n{LONG_CODE}\n```",
    "\n".join(f"- item {n}: the cache key includes the tenant id and region {n}" for n in range(500)),
    ONE_HUGE_WORDLESS_LINE,
    "Intro.\n\n" + "\n\n".join(f"Paragraph {n}. " + "Word " * 60 for n in range(40)),
])
def test_every_chunk_fits_what_the_model_reads(model_tokenizer, body):
    deep = "# Operations handbook\n\n## Scheduling and retries of background jobs\n\n### Backoff policy\n\n"
    _, chunks = documents.chunk_text(deep + body)
    assert len(chunks) > 1
    sizes = [embedded_tokens(model_tokenizer, heading, content) for heading, content in chunks]
    assert max(sizes) <= tokens.MODEL_MAX_TOKENS
    # Chunks are packed, not shredded: all but the last of a section use most of the room.
    assert sum(sizes[:-1]) / len(sizes[:-1]) > tokens.MODEL_MAX_TOKENS * 0.6
    for _, content in chunks:
        assert content.strip() and content.strip("\n") == content


def test_prose_is_split_at_sentence_ends_and_nothing_is_lost(model_tokenizer):
    _, chunks = documents.chunk_text(f"## Retries\n\n{LONG_PROSE}")
    assert all(content.endswith(".") for _, content in chunks)
    assert " ".join(content for _, content in chunks) == LONG_PROSE


def test_a_2000_character_chunk_no_longer_overflows(model_tokenizer):
    """The old 2,000-character chunks were ~600 tokens of code; each one now fits."""
    _, chunks = documents.chunk_text(f"```\n{LONG_CODE}\n```")
    assert all(embedded_tokens(model_tokenizer, h, c) <= tokens.MODEL_MAX_TOKENS for h, c in chunks)
    old_style = LONG_CODE[:1999]
    assert len(model_tokenizer.encode(old_style).ids) > tokens.MODEL_MAX_TOKENS


def test_fences_of_either_kind_hide_headings_and_do_not_close_each_other():
    text = "# Top\n\n~~~\n# not a heading\n```\n## still code\n~~~\n\n## Real\n\nBody.\n\n````md\n```\n# code\n```\n````\n"
    _, chunks = documents.chunk_text(text)
    assert [h for h, _ in chunks] == ["Top", "Top > Real"]
    assert "## still code" in chunks[0][1] and "# code" in chunks[1][1]


def test_setext_headings_and_front_matter():
    text = ("---\ntitle: \"Release notes\"\ntags: [ops]\n---\n\nOverview\n========\n\nIntro text.\n\n"
            "Details\n-------\n\nMore text.\n\n---\n\nAfter a rule.\n")
    title, chunks = documents.chunk_text(text)
    assert title == "Release notes"
    assert chunks == [("Overview", "Intro text."), ("Overview > Details", "More text.\n\nAfter a rule.")]
    assert all("title:" not in content for _, content in chunks)


def test_the_first_h1_is_the_title_without_front_matter():
    title, _ = documents.chunk_text("Some preface.\n\nGuide\n=====\n\nText.")
    assert title == "Guide"
