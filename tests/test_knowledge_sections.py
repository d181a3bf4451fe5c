"""Knowledge markdown into entries (seed 001, F2.2-F2.4): H3 sections, context, splitting, directives."""

from __future__ import annotations

from ccmemory import embeddings, tokens
from ccmemory.knowledge import indexer, sections
from ccmemory.knowledge.settings import ProjectSettings
from ccmemory.vocabulary import KNOWLEDGE_SOURCE


def fits_chars(limit: int):
    return lambda text: len(text) < limit


def parse(text: str, name: str = "notes.md", limit: int = 2000) -> sections.ParsedFile:
    return sections.parse(text, name, fits=fits_chars(limit))


GOTCHAS = """# Gotchas

Things that bit us.

## Time

### Dates are UTC
All timestamps are UTC.

#### A detail
Stays inside its H3.

### Cron uses server time
The scheduler uses local time.

## Builds
### Cache keys
Include the lock file.
"""


def test_each_h3_is_one_entry_with_its_h1_h2_context():
    parsed = parse(GOTCHAS, "gotchas.md")
    by_anchor = {entry.anchor: entry for entry in parsed.entries}
    assert list(by_anchor) == ["gotchas", "dates-are-utc", "cron-uses-server-time", "cache-keys"]
    utc = by_anchor["dates-are-utc"]
    assert utc.heading == "Gotchas > Time > Dates are UTC"
    assert utc.content.startswith("Gotchas > Time > Dates are UTC\n\n")
    assert "All timestamps are UTC." in utc.content and "#### A detail" in utc.content
    assert "Stays inside its H3." in utc.content and "scheduler" not in utc.content
    assert by_anchor["cache-keys"].heading == "Gotchas > Builds > Cache keys"
    # text under the H1 before the first H3 is kept as its own entry
    assert "Things that bit us." in by_anchor["gotchas"].content


def test_a_file_without_h3_is_one_entry_titled_from_its_file_name():
    parsed = parse("# Overview\n\nWe use Postgres.\n\n## Why\nIt is boring.\n", "database-choice.md")
    assert len(parsed.entries) == 1
    entry = parsed.entries[0]
    assert entry.title == "database choice" and entry.anchor == ""
    assert "We use Postgres." in entry.content and "It is boring." in entry.content


def test_long_sections_split_at_sentence_boundaries_under_the_limit():
    sentence = "The cache is invalidated whenever the schema version changes. "
    body = sentence * 80  # ~5,000 characters in one paragraph
    parsed = parse(f"# A\n## B\n### Caching\n{body}\n", limit=2000)
    assert len(parsed.entries) >= 3
    for entry in parsed.entries:
        assert len(entry.content) < 2000
        assert entry.content.startswith("A > B > Caching\n\n")
        assert entry.content.rstrip().endswith("changes.")  # cut after a sentence, never inside one
    assert [entry.part for entry in parsed.entries] == list(range(1, len(parsed.entries) + 1))
    assert {entry.parts for entry in parsed.entries} == {len(parsed.entries)}
    rejoined = " ".join(entry.content.split("\n\n", 1)[1] for entry in parsed.entries)
    assert rejoined.split() == body.split()


def test_splitting_respects_the_embedders_token_window():
    assert tokens.tokenizer() is not None and tokens.CONTENT_TOKENS == tokens.MODEL_MAX_TOKENS - 2 == 254
    body = " ".join(f"Identifier{n}_value is configured by the deployment pipeline." for n in range(300))
    parsed = sections.parse(f"### Settings\n{body}\n", "s.md",
                            fits=lambda text: len(text) <= 10_000 and tokens.count(text) <= tokens.CONTENT_TOKENS)
    assert len(parsed.entries) > 1
    assert all(tokens.count(entry.content) <= tokens.CONTENT_TOKENS for entry in parsed.entries)


def test_no_token_of_an_entry_is_cut_by_the_encoder(embedder):
    """Entries cut by the indexer's own size test, embedded as a knowledge memory is (its text as written), and
    encoded by the embedder's own tokenizer with its truncation: nothing overflows."""
    fits, key = indexer._fits(ProjectSettings(root="/p", knowledge_dir="/p/k"))
    assert f":{tokens.CONTENT_TOKENS}:" in key  # a new limit re-indexes every file
    prose = " ".join(f"Token {n} of the refresh flow is rotated by the gateway (see RFC 6749, section {n})."
                     for n in range(60))
    items = "\n".join(f"- `auth.refresh_{n}` expires after {n * 15} minutes unless the client re-authenticates"
                      for n in range(40))
    text = ("# Architecture of the authentication, session and authorisation services in every region\n"
            "## Token lifecycle, rotation, revocation and the audit trail kept for compliance reviews\n"
            f"### Refresh tokens\n{prose}\n\n{items}\n\n### Glossary\n" + "Überprüfung 認証 " * 120 + "\n")
    parsed = sections.parse(text, "architecture/auth.md", fits=fits)
    assert len(parsed.entries) > 4
    embedded = embeddings.texts_to_embed([{"content": entry.content, "source": KNOWLEDGE_SOURCE}
                                          for entry in parsed.entries], {})
    assert embedded == [entry.content for entry in parsed.entries]
    encodings = embedder._encoder._tokenizer.encode_batch(embedded)
    assert embedder._encoder._tokenizer.truncation["max_length"] == tokens.MODEL_MAX_TOKENS
    assert [encoding.overflowing for encoding in encodings if encoding.overflowing] == []
    assert max(len(encoding.ids) for encoding in encodings) <= tokens.MODEL_MAX_TOKENS


def test_a_single_unbreakable_run_is_still_cut_under_the_limit():
    parsed = parse("### Blob\n" + "x" * 5000 + "\n", limit=1000)
    assert all(len(entry.content) < 1000 for entry in parsed.entries)
    assert "".join(entry.content.split("\n\n", 1)[1] for entry in parsed.entries) == "x" * 5000


def test_vector_index_directive():
    assert parse("<!-- vector-index: false -->\n### A\ntext\n").indexed is False
    assert parse("### A\ntext\n<!-- Vector-Index:FALSE -->\n").indexed is False
    assert parse("<!-- vector-index: true -->\n### A\ntext\n").indexed is True
    assert parse("### A\ntext\n").indexed is True
    malformed = parse("<!-- vector-index: maybe -->\n### A\ntext\n")
    assert malformed.indexed is True and "maybe" in malformed.warnings[0]
    assert "vector-index" not in malformed.entries[0].content


def test_keywords_directive_is_per_section_trimmed_lowercased_special_chars_kept():
    parsed = parse("### Auth\n<!-- keywords: Auth, JWT ,  Security, C++, node.js -->\nTokens.\n\n### Other\nNone.\n")
    auth, other = parsed.entries
    assert auth.keywords == ["auth", "jwt", "security", "c++", "node.js"]
    assert "keywords" not in auth.content
    assert other.keywords == []


def test_file_level_keywords_apply_to_every_section():
    parsed = parse("<!-- keywords: billing -->\n# Billing\n### Invoices\nMonthly.\n### Refunds\n<!-- keywords: stripe -->\nManual.\n")
    assert [entry.keywords for entry in parsed.entries] == [["billing"], ["billing", "stripe"]]


def test_headings_and_directives_inside_code_fences_are_text():
    text = "### Real\n```md\n### not a heading\n<!-- vector-index: false -->\n```\n~~~\n```\n### still code\n~~~\nafter\n"
    parsed = parse(text)
    assert parsed.indexed is True
    assert len(parsed.entries) == 1 and "### not a heading" in parsed.entries[0].content
    assert "### still code" in parsed.entries[0].content and "after" in parsed.entries[0].content


def test_setext_headings_front_matter_and_duplicate_anchors():
    text = ("---\npromoted_from: abc\npromoted_at: 2026-01-01\n---\nTitle\n=====\n\nIntro.\n\n"
            "Part\n----\n### Step\none\n### Step\ntwo\n")
    parsed = parse(text)
    anchors = [entry.anchor for entry in parsed.entries]
    assert anchors == ["title", "step", "step-1"]
    assert parsed.entries[1].heading == "Title > Part > Step"
    assert all("promoted_from" not in entry.content for entry in parsed.entries)


def test_multi_line_comment_directive():
    parsed = parse("### A\n<!--\n  keywords: one, two\n-->\ntext\n")
    assert parsed.entries[0].keywords == ["one", "two"] and "-->" not in parsed.entries[0].content


def test_an_unclosed_comment_is_text_and_other_comments_are_dropped():
    closed = parse("### A\nbefore\n\n<!--\na note\n-->\nkept\n").entries[0].content
    assert "before" in closed and "kept" in closed and "a note" not in closed
    unclosed = parse("### A\nbefore <!-- never closed\nafter\n").entries[0].content
    assert "after" in unclosed and "never closed" in unclosed


def test_slug_matches_github_anchors():
    assert sections.slug("JWT flow (v2)!") == "jwt-flow-v2"
    assert sections.slug("snake_case & kebab-case") == "snake_case--kebab-case"


def test_an_h3_section_ends_at_the_next_h2_or_h1_too():
    """F2.2: header + content until the next H3/H2/H1; text under an H2 or H1 is an entry of its own."""
    parsed = parse("# T\n### A\ntext a\n## B\ntext b\n### C\ntext c\n# Second\ntext d\n### E\ntext e\n", "x.md")
    contents = {entry.anchor: entry.content for entry in parsed.entries}
    assert contents["a"] == "T > A\n\ntext a"
    assert contents["c"] == "T > B > C\n\ntext c"
    assert contents["e"] == "Second > E\n\ntext e"
    assert "text b" in contents["b"] and "text d" in contents["second"]
