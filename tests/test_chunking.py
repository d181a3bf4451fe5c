"""Document chunks measured in tokens with the real tokenizer shipped in ``model_files/``, and the Markdown parser.

The embedder reads ``heading + "\\n" + content`` and drops everything past
:data:`ccmemory.tokens.MODEL_MAX_TOKENS` tokens (its own [CLS] and [SEP]
included; 256, the encoder's truncation, not the 512 of ``model_max_length``),
so every chunk's embedded text must fit, counted the way the model counts,
special tokens and all.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from ccmemory import chunking, documents, embeddings, markdown_blocks, tokens

ROOT = Path(__file__).resolve().parents[1]
MODEL_FILES = ROOT / "src" / "ccmemory" / "model_files"


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


def test_one_limit_for_the_encoder_and_the_chunkers():
    config = json.loads((MODEL_FILES / "tokenizer_config.json").read_text())
    assert tokens.POSITION_TOKENS == config["model_max_length"] == 512
    assert tokens.MODEL_MAX_TOKENS == embeddings.MAX_TOKENS == 256 <= tokens.POSITION_TOKENS
    assert tokens.CONTENT_TOKENS == tokens.MODEL_MAX_TOKENS - 2
    assert tokens.encoder_tokenizer().truncation["max_length"] == tokens.MODEL_MAX_TOKENS


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


def _realistic_markdown() -> str:
    """A long handbook: deep and very long heading paths, prose, fences, tables, lists, links, CJK and accents."""
    parts = ["---\ntitle: Platform handbook\n---\n", "# Platform handbook\n\nHow the platform is run.\n"]
    for n in range(12):
        parts.append(f"## Service {n}: the ingestion, enrichment and fan-out pipeline of tenant-scoped events "
                     f"(v{n}.2, région eu-west-{n % 3}, 東京 replica)\n")
        parts.append(" ".join(f"Step {k} validates the payload's schema_version_{k} against the registry, then "
                              f"retries with exponential backoff (base=250ms, cap=30s) on HTTP 429/503."
                              for k in range(25)) + "\n")
        parts.append("```python\n" + "\n".join(
            f"def handler_{n}_{k}(event: dict[str, Any]) -> Result:  # see https://example.com/docs/{k}?q=a&b=c\n"
            f"    return pipeline.run(event, retries={k}, timeout=timedelta(seconds={k * 1.5}))"
            for k in range(30)) + "\n```\n")
        parts.append("| setting | default | meaning |\n|---|---:|---|\n" + "\n".join(
            f"| `svc{n}.opt_{k}` | {k * 64} | how many in-flight requests per worker before shedding load |"
            for k in range(40)) + "\n")
        parts.append("### Runbook: what the on-call engineer does first when the queue depth alarm fires\n")
        parts.append("\n".join(f"- [ ] check dashboard `grafana/d/q{k}` and the consumer lag of partition {k}; "
                               f"escalate to #incident-{n} if it grows" for k in range(45)) + "\n")
        parts.append("#### Notes\n\n" + "日本語のテキストも正しく分割されることを確認します。" * 40 + "\n")
        parts.append("Minified config: " + ",".join(f"k{k}:{k * 7}" for k in range(900)) + "\n")
    return "\n".join(parts)


@pytest.mark.parametrize("source", ["handbook", "README.md"])
def test_no_token_of_a_real_document_is_cut_by_the_encoder(embedder, db, project, source):
    """Ingest a long Markdown document, take each chunk's text exactly as the embedder is given it, and encode it
    with the embedder's own tokenizer (truncation as it runs): nothing overflows, so zero tokens are cut."""
    text = _realistic_markdown() if source == "handbook" else (ROOT / source).read_text(encoding="utf-8")
    document = documents.ingest(db, project_id=project, content=text)
    _, sql = embeddings._PENDING["chunk"]
    embedded = [row["text"] for row in db.rows(sql, ("[]", 100_000))]
    assert len(embedded) == document.chunk_count > 10
    encoder = embedder._encoder._tokenizer
    assert encoder.truncation["max_length"] == tokens.MODEL_MAX_TOKENS
    encodings = encoder.encode_batch(embedded)
    assert [encoding.overflowing for encoding in encodings if encoding.overflowing] == []
    assert max(len(encoding.ids) for encoding in encodings) <= tokens.MODEL_MAX_TOKENS
    untruncated = [len(encoding.ids) for encoding in tokens.tokenizer().encode_batch(embedded)]
    assert untruncated == [len(encoding.ids) for encoding in encodings]
    # packed, not shredded: many chunks use most of what the model reads
    assert sorted(untruncated)[len(untruncated) // 2] > tokens.MODEL_MAX_TOKENS * 0.5


def test_chunks_sized_to_the_old_512_limit_would_lose_tokens(embedder):
    """The control: what the encoder cuts off a chunk sized to 510 content tokens, as before."""
    text = _realistic_markdown()
    _, chunks = documents.chunk_text(text)
    old = chunking.chunk_sections(markdown_blocks.parse(text).sections, limit=510)
    encodings = embedder._encoder._tokenizer.encode_batch([f"{h}\n{c}" if h else c for h, c in old])
    assert sum(1 for encoding in encodings if encoding.overflowing) > len(old) // 2
    assert len(chunks) > len(old)
