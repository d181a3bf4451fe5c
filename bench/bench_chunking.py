"""Document chunks measured in the embedding model's tokens: the token-aware chunker beside 2,000-character pieces.

For each Markdown file given, both ways cut the same parsed sections: ``token-aware`` is
:func:`ccmemory.documents.chunk_text`; ``2,000 chars`` cuts each section's text into pieces
under 2,000 characters at sentence ends (the size rule documents used before). Each chunk is
counted as the model reads it (heading path + newline + text, with its [CLS] and [SEP]) by the
tokenizer shipped in ``src/ccmemory/model_files/``; tokens past what the encoder reads
(:data:`ccmemory.tokens.MODEL_MAX_TOKENS`, the limit its truncation and the chunker share) are
never embedded. Deterministic (no timing), so the figures do not depend on the machine's load.

Usage: ``python bench/bench_chunking.py FILE.md ... [--write]``
"""

from __future__ import annotations

import argparse
import platform
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ccmemory import documents, markdown_blocks, tokens  # noqa: E402
from report import write_section  # noqa: E402

OLD_LIMIT_CHARS = 2_000
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def character_pieces(text: str) -> list[tuple[str, str]]:
    """The baseline: each section's text in pieces under 2,000 characters, cut at sentence ends."""
    pieces: list[tuple[str, str]] = []
    for section in markdown_blocks.parse(text).sections:
        current = ""
        for sentence in _SENTENCE_END.split("\n\n".join(block.text for block in section.blocks)):
            while len(sentence) >= OLD_LIMIT_CHARS:
                pieces.append((section.heading, sentence[: OLD_LIMIT_CHARS - 1]))
                sentence = sentence[OLD_LIMIT_CHARS - 1:]
            if current and len(current) + 1 + len(sentence) >= OLD_LIMIT_CHARS:
                pieces.append((section.heading, current))
                current = sentence
            else:
                current = f"{current} {sentence}" if current else sentence
        if current.strip():
            pieces.append((section.heading, current))
    return pieces


def measure(chunks: list[tuple[str, str]]) -> dict[str, float]:
    loaded = tokens.tokenizer()
    sizes = [len(loaded.encode(f"{heading}\n{text}" if heading else text).ids) for heading, text in chunks]
    over = [size for size in sizes if size > tokens.MODEL_MAX_TOKENS]
    return {"chunks": len(sizes), "max": max(sizes), "mean": sum(sizes) / len(sizes), "over": len(over),
            "lost": sum(size - tokens.MODEL_MAX_TOKENS for size in over), "total": sum(sizes)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--write", action="store_true", help="Write the section of BENCHMARKS.md.")
    args = parser.parse_args()
    texts = [path.read_text(encoding="utf-8") for path in args.files]
    rows = {
        "token-aware (ccmemory)": measure([c for text in texts for c in documents.chunk_text(text)[1]]),
        f"{OLD_LIMIT_CHARS:,} chars": measure([c for text in texts for c in character_pieces(text)]),
    }
    lines = [
        f"Machine: {platform.machine()}, Python {platform.python_version()}; deterministic (token counts, no timing)",
        f"Command: `python bench/bench_chunking.py {' '.join(str(path) for path in args.files)} --write`",
        "",
        f"{len(texts)} Markdown files; tokens as the model reads each chunk (heading path + text, [CLS] and [SEP] "
        f"included); the encoder reads {tokens.MODEL_MAX_TOKENS} (`ccmemory.tokens.MODEL_MAX_TOKENS`, the limit "
        f"the chunker sizes to; `model_max_length` would allow {tokens.POSITION_TOKENS}) and drops the rest.",
        "",
        "| chunker | chunks | mean tokens | max tokens | chunks over the limit | tokens never embedded |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, row in rows.items():
        lines.append(f"| {name} | {row['chunks']} | {row['mean']:.0f} | {row['max']} | {row['over']} "
                     f"({100 * row['over'] / row['chunks']:.1f}%) | {row['lost']:,} of {row['total']:,} |")
    text = "\n".join(lines)
    print(text)
    if args.write:
        write_section("chunking", "Document chunks in model tokens", text)


if __name__ == "__main__":
    main()
