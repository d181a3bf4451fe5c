"""Markdown knowledge files cut into entries: one per H3 section, with its H1/H2 context.

Rules:

- Each H3 (header and text until the next H1/H2/H3) is one entry; H4-H6 stay
  inside their H3. Text under an H1 or H2 before its first H3, and text before
  any heading, are entries too, so nothing written is lost.
- A file without any H3 is one entry titled from its file name.
- An entry longer than the limit (characters from ``chunk_size``, and tokens
  of the embedder's window) is split at paragraph, then sentence boundaries;
  every part repeats the heading path so it can be found and read alone.
- ``<!-- vector-index: false -->`` anywhere in the file skips it; a value
  other than true/false is a warning and counts as true.
- ``<!-- keywords: a, b -->`` gives the section it is in its keywords (trimmed,
  lower-cased, other characters kept); keywords before the first heading apply
  to every entry of the file.

Headings are ATX (``### Title``) or setext (underlined with ``===``/``---``);
lines inside ``` or ~~~ fences are never headings or directives, and a YAML
front matter block is dropped.

``max_entries`` bounds the work as well as the result: the file is read up to the heading after
its first ``max_entries`` sections with text, and a long section is packed only until the entries
are there, so a file of 400,000 one-line sections costs what its first ``max_entries`` do. What
lies past the cut is not read (a ``vector-index`` directive there does not apply).
"""

from __future__ import annotations

import os
import re
from collections import deque
from dataclasses import dataclass, field
from itertools import islice
from typing import Callable, Iterator

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_DIRECTIVE_HEAD = re.compile(r"<!--\s*(vector-index|keywords)\s*:", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")
_FRONT_MATTER_END = re.compile(r"^(---|\.\.\.)[ \t]*$")


@dataclass
class Entry:
    """One searchable unit of a knowledge file."""

    anchor: str
    heading: str  # the heading path, "H1 > H2 > H3" ("" for a whole-file entry without headings)
    title: str
    content: str  # what is stored, searched and embedded: the heading path, then the section text
    keywords: list[str] = field(default_factory=list)
    part: int = 1
    parts: int = 1


@dataclass
class ParsedFile:
    entries: list[Entry]
    indexed: bool = True  # False when the file says <!-- vector-index: false -->
    warnings: list[str] = field(default_factory=list)
    cut: bool = False  # True when the file holds more than the entries asked for: the rest was left unread


def slug(title: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", title.strip().lower())
    return text.replace(" ", "-")


def parse_keywords(value: str) -> list[str]:
    """``" Auth, JWT ,c++ "`` -> ``["auth", "jwt", "c++"]``: trimmed, lower-cased, deduplicated."""
    found: list[str] = []
    for word in value.split(","):
        word = word.strip().lower()
        if word and word not in found:
            found.append(word)
    return found


@dataclass
class _Block:
    level: int  # 0: before any heading; 1-3: the heading that opened it
    title: str
    context: list[str]  # titles of the enclosing H1/H2 (and the H3 itself for level 3)
    lines: list[str] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)


def _strip_front_matter(lines: list[str]) -> list[str]:
    if lines and lines[0].strip() == "---":
        for number, line in enumerate(lines[1:200], 1):
            if _FRONT_MATTER_END.match(line):
                return lines[number + 1:]
    return lines


def _find_directives(text: str) -> Iterator[tuple[int, int, str, str]]:
    """(start, end, name, value) of each ``<!-- name: value -->`` in ``text``, in linear time.

    The same spans as ``<!--\\s*(vector-index|keywords)\\s*:(.*?)-->`` would match, but a text full of
    unclosed ``<!-- keywords:`` no longer makes every attempt scan to its end: each value ends at
    the first ``-->`` after its head, found once for all the heads before it.
    """
    position, close = 0, -1
    while True:
        start = text.find("<!--", position)
        if start < 0:
            return
        if close < start + 4:
            close = text.find("-->", start + 4)
            if close < 0:
                return
        head = _DIRECTIVE_HEAD.match(text, start)
        if head is None or head.end() > close:
            position = start + 1
            continue
        yield start, close + 3, head.group(1).lower(), text[head.end():close].strip()
        position = close + 3


def _directives(line: str, block: _Block, state: dict[str, object], warnings: list[str]) -> str:
    """Apply the directives on ``line`` and return the line without them."""
    kept: list[str] = []
    position = 0
    for start, end, name, value in _find_directives(line):
        kept.append(line[position:start])
        position = end
        if name == "keywords":
            block.keywords.extend(k for k in parse_keywords(value) if k not in block.keywords)
        elif value.lower() == "false":
            state["indexed"] = False
        elif value.lower() != "true":
            warnings.append(f"malformed directive <!-- vector-index: {value} --> (use true or false); indexing it")
    kept.append(line[position:])
    return "".join(kept)


def _blocks(text: str, warnings: list[str], max_blocks: int | None = None) -> tuple[list[_Block], bool, bool]:
    """The file cut at H1/H2/H3 headings, directives applied and removed; whether it is indexed; whether it was
    cut short, at the heading after ``max_blocks`` blocks with text (with H3s, each gives one entry or more)."""
    lines = _strip_front_matter(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
    blocks = [_Block(level=0, title="", context=[])]
    trail: dict[int, str] = {}
    state: dict[str, object] = {"indexed": True}
    fence: str | None = None
    in_comment = False
    said = 0  # blocks closed so far that hold text
    next_close: list[int | None] = [None] * (len(lines) + 1)  # the first line at or after each holding "-->"
    for index in range(len(lines) - 1, -1, -1):
        next_close[index] = index if "-->" in lines[index] else next_close[index + 1]
    for index, line in enumerate(lines):
        block = blocks[-1]
        opener = _FENCE.match(line)
        if fence is not None:
            if opener and opener.group(1)[0] == fence[0] and len(opener.group(1)) >= len(fence) \
                    and not line.strip()[len(opener.group(1)):].strip():
                fence = None
            block.lines.append(line)
            continue
        if opener:
            fence = opener.group(1)
            block.lines.append(line)
            continue
        if not in_comment and "<!--" in line and "-->" not in line[line.index("<!--"):]:
            # a comment (and a directive in it) may span lines: join until it closes; one never closed is text
            close = next_close[index + 1]
            if close is not None:
                _directives(" ".join(lines[index:close + 1]), block, state, warnings)
                in_comment = True
        if in_comment:
            if "-->" in line:
                in_comment = False
                line = line[line.index("-->") + 3:]
                if not line.strip():
                    continue
            else:
                continue
        line = _directives(line, block, state, warnings) if "<!--" in line else line
        heading = _ATX.match(line)
        level, title = 0, ""
        if heading:
            level, title = len(heading.group(1)), (heading.group(2) or "").strip()
        elif _SETEXT.match(line) and _is_paragraph_line(block.lines[-1] if block.lines else ""):
            level, title = (1 if line.strip()[0] == "=" else 2), block.lines.pop().strip()
        if level and level <= 3:
            if max_blocks is not None:
                said += any(kept.strip() for kept in block.lines)
                if said > max_blocks:
                    return blocks, bool(state["indexed"]), True
            trail = {lvl: name for lvl, name in trail.items() if lvl < level}
            trail[level] = title
            context = [trail[lvl] for lvl in sorted(trail)]
            blocks.append(_Block(level=level, title=title, context=context))
            continue
        block.lines.append(line)
    return blocks, bool(state["indexed"]), False


def _is_paragraph_line(line: str) -> bool:
    """Whether a setext underline below ``line`` makes it a heading (not after a blank, list, quote or fence)."""
    stripped = line.strip()
    return bool(stripped) and not _FENCE.match(line) and not _ATX.match(line) \
        and not re.match(r"^([-*+]|\d+[.)])\s|^>|^\|", stripped) and not _SETEXT.match(line)


def _split_units(text: str) -> list[str]:
    """The blank-line separated paragraphs of a section (``_pack`` cuts one further only when it must)."""
    units: list[str] = []
    for paragraph in re.split(r"\n[ \t]*\n", text):
        paragraph = paragraph.strip("\n")
        if paragraph.strip():
            units.append(paragraph)
    return units


def _most_that_fit(available: int, fit: Callable[[int], bool]) -> int:
    """The largest ``k <= available`` with ``fit(k)``, for a ``fit`` that stays false once false (``fit(0)`` holds).

    Doubling, then halving: a piece of ``k`` parts costs ``log k`` checks instead of ``k``
    checks of ever longer texts (joined with whitespace, texts only grow in characters and
    tokens as parts are added, so the first part that does not fit ends the piece either way).
    """
    low, step, high = 0, 1, available + 1
    while low < available:
        probe = min(low + step, available)
        if not fit(probe):
            high = probe
            break
        low, step = probe, step * 2
    while high - low > 1:
        middle = (low + high) // 2
        if fit(middle):
            low = middle
        else:
            high = middle
    return low


def _pack(units: list[str], fits: Callable[[str], bool], limit: int | None = None) -> list[str]:
    """Greedy: as many consecutive units per piece as fit; a unit too big alone is cut at sentences, then words.

    At most ``limit`` pieces: packing stops there (the last one may then be shorter than it could be).
    """
    pieces: list[str] = []
    current = ""
    queue = deque(units)
    while queue and (limit is None or len(pieces) < limit):
        if current:
            def fit(k: int, base: str = current) -> bool:
                return fits("\n\n".join([base, *islice(queue, k)]))
            taken = _most_that_fit(len(queue), fit)
            if taken:
                current = "\n\n".join([current, *(queue.popleft() for _ in range(taken))])
            else:
                pieces.append(current)
                current = ""
            continue
        unit = queue.popleft()
        if fits(unit):
            current = unit
            continue
        sentences = [s for s in _SENTENCE_END.split(unit) if s.strip()]
        if len(sentences) > 1:
            queue.extendleft(reversed(_join_fitting(sentences, " ", fits)))
            continue
        words = unit.split(" ")
        if len(words) > 1:
            queue.extendleft(reversed(_join_fitting(words, " ", fits)))
            continue
        if len(unit) <= 1:  # nothing fits, not even one character: keep it rather than cut forever
            pieces.append(unit)
            continue
        cut = len(unit) // 2
        queue.extendleft([unit[cut:], unit[:cut]])
    if current and (limit is None or len(pieces) < limit):
        pieces.append(current)
    return pieces


def _join_fitting(parts: list[str], glue: str, fits: Callable[[str], bool]) -> list[str]:
    """``parts`` joined greedily into pieces that fit (a part that never fits stays alone to be cut further)."""
    joined: list[str] = []
    current = ""
    index = 0
    while index < len(parts):
        if not current:
            current = parts[index]
            index += 1
            continue
        def fit(k: int, base: str = current, start: int = index) -> bool:
            return fits(glue.join([base, *parts[start:start + k]]))
        taken = _most_that_fit(len(parts) - index, fit)
        if taken:
            current = glue.join([current, *parts[index:index + taken]])
            index += taken
        else:
            joined.append(current)
            current = parts[index]
            index += 1
    if current:
        joined.append(current)
    if len(joined) == 1 and not fits(joined[0]):  # no progress possible by this separator: halve
        half = len(parts) // 2
        return [glue.join(parts[:half]), glue.join(parts[half:])]
    return joined


def parse(text: str, file_name: str, *, fits: Callable[[str], bool], max_entries: int | None = None) -> ParsedFile:
    """The entries of a knowledge file; ``fits(content)`` says whether an entry is small enough to embed.

    With ``max_entries``, at most that many, and :attr:`ParsedFile.cut` says whether the file held more.
    """
    warnings: list[str] = []
    blocks, indexed, cut = _blocks(text, warnings, max_entries)
    file_title = os.path.splitext(os.path.basename(file_name))[0].replace("-", " ").replace("_", " ").strip()
    shared_keywords = blocks[0].keywords
    has_h3 = any(block.level == 3 for block in blocks)
    if not has_h3:
        lines: list[str] = []
        keywords = list(shared_keywords)
        for block in blocks:
            if block.level:
                lines.append(f"{'#' * block.level} {block.title}")
            lines.extend(block.lines)
            keywords.extend(k for k in block.keywords if k not in keywords)
        body = "\n".join(lines).strip()
        said = any(line.strip() for block in blocks for line in block.lines)  # headings alone say nothing
        units = [(file_title or file_name, "", "", body, keywords)] if said else []
    else:
        units = []
        for block in blocks:
            body = "\n".join(block.lines).strip()
            if not body:
                continue
            keywords = list(shared_keywords) + [k for k in block.keywords if k not in shared_keywords]
            if block.level == 0:
                units.append((file_title or file_name, "", "", body, keywords))
            else:
                units.append((block.title, " > ".join(block.context), block.title, body, keywords))
    entries: list[Entry] = []
    seen: dict[str, int] = {}
    for title, heading, anchor_title, body, keywords in units:
        if max_entries is not None and len(entries) >= max_entries:  # every unit left would give an entry more
            cut = True
            break
        anchor = ""
        if anchor_title:
            base = slug(anchor_title) or "section"
            number = seen.get(base, 0)
            seen[base] = number + 1
            anchor = base if number == 0 else f"{base}-{number}"
        shown = heading
        while shown and not fits(f"{shown}\n\n."):  # a heading path that leaves no room for text is shortened
            shown = shown[:len(shown) // 2].rstrip()
        prefix = f"{shown}\n\n" if shown else ""
        def fits_after(piece: str, prefix: str = prefix) -> bool:
            return fits(prefix + piece)
        room = None if max_entries is None else max_entries - len(entries)
        pieces = _pack(_split_units(body), fits_after, None if room is None else room + 1)
        if room is not None and len(pieces) > room:
            pieces, cut = pieces[:room], True
        for part, piece in enumerate(pieces, 1):
            entries.append(Entry(anchor=anchor, heading=heading, title=title, content=prefix + piece,
                                 keywords=list(keywords), part=part, parts=len(pieces)))
    return ParsedFile(entries=entries, indexed=indexed, warnings=warnings, cut=cut)
