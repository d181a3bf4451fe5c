"""HTML pages as readable Markdown text plus their title, with the standard library's parser.

Scripts, styles, forms, inline SVG and the page chrome (``nav``, ``header``,
``footer``, ``aside``) are dropped; headings become ``#`` headings, list items
``- `` lines, ``pre`` blocks fences, and paragraphs blank-line separated, so
the result chunks like any Markdown document. The title is the ``<title>``
(else ``og:title``, else the first ``<h1>``).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

SKIPPED = {"script", "style", "noscript", "template", "svg", "nav", "header", "footer", "aside", "form", "iframe",
           "button", "select", "canvas"}
BLOCKS = {"p", "div", "section", "article", "main", "table", "tr", "ul", "ol", "dl", "blockquote", "figure",
          "figcaption", "hr", "details", "summary", "body", "dt", "dd"}
HEADINGS = {f"h{level}": level for level in range(1, 7)}
VOID = {"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "source", "track", "wbr"}


class _Extractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.skip_depth = 0
        self.pre_depth = 0
        self.in_title = False
        self.title = ""
        self.og_title = ""
        self.first_h1: str | None = None
        self.heading: list[str] | None = None

    def _break(self, text: str = "\n\n") -> None:
        self.out.append(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.skip_depth:
            if tag in SKIPPED:
                self.skip_depth += 1
            return
        if tag in SKIPPED:
            self.skip_depth = 1
        elif tag == "title":
            self.in_title = True
        elif tag == "meta":
            values = dict(attrs)
            if values.get("property") == "og:title" and values.get("content"):
                self.og_title = values["content"] or ""
        elif tag in HEADINGS:
            self._break()
            self.out.append("#" * HEADINGS[tag] + " ")
            self.heading = []
        elif tag == "li":
            self._break("\n")
            self.out.append("- ")
        elif tag == "pre":
            self._break()
            self.out.append("```\n")
            self.pre_depth += 1
        elif tag == "br":
            self._break("\n")
        elif tag in ("td", "th"):
            self.out.append(" | ")
        elif tag in BLOCKS:
            self._break()

    def handle_endtag(self, tag: str) -> None:
        if self.skip_depth:
            if tag in SKIPPED:
                self.skip_depth -= 1
            return
        if tag == "title":
            self.in_title = False
        elif tag in HEADINGS and self.heading is not None:
            text = " ".join("".join(self.heading).split())
            if tag == "h1" and self.first_h1 is None and text:
                self.first_h1 = text
            self.heading = None
            self._break()
        elif tag == "pre" and self.pre_depth:
            self.pre_depth -= 1
            self.out.append("\n```")
            self._break()
        elif tag in BLOCKS:
            self._break()

    def handle_data(self, data: str) -> None:
        if self.skip_depth:
            return
        if self.in_title:
            self.title += data
            return
        if self.pre_depth:
            self.out.append(data)
            return
        text = re.sub(r"\s+", " ", data)
        if self.heading is not None:
            self.heading.append(text)
        self.out.append(text)


def looks_like_html(text: str) -> bool:
    """Whether a text is an HTML page rather than Markdown or plain text."""
    start = text.lstrip()[:1024].lower()
    return start.startswith(("<!doctype html", "<html")) or ("<head" in start and "<body" in text.lower())


#: A numeric character reference too long for ``int()`` (over 4,300 digits) makes the standard parser
#: raise; any reference longer than this names no character, so it is read as U+FFFD, as browsers do.
_HUGE_CHARREF = re.compile(r"&#(?:0*[1-9][0-9]{15,}|[xX]0*[1-9a-fA-F][0-9a-fA-F]{15,});?")


#: Where the standard parser sees a tag, an end tag, a comment, a declaration or a processing instruction.
_OPENER = re.compile(r"<(?=[A-Za-z/!?])")
#: "Not found on the rest of the page": past every position, so it is never looked up again.
_NONE = 1 << 62


def _closed_constructs(html: str) -> str:
    """``html`` with every ``<`` that opens a construct the page never closes in time written ``&lt;``.

    The standard parser scans an unclosed construct to the end of the page at each ``<`` and scans
    again from the next one, so a page of ``<a <a <a …`` or ``<!--<!--…`` costs time growing with the
    square (or worse) of its length: 80 KB of ``<a `` took a minute, and a fetched page may be 5 MB.
    A tag (or ``</``, ``<!``, ``<?``) is kept when its ``>`` comes before the next ``<``, a comment when
    ``-->`` follows it; anything else is text, as a browser shows a stray ``<``. Each kept construct is
    then closed within what the parser reads anyway, so its work is linear. One pass, linear: the
    next ``>``, ``<`` and ``-->`` are looked up once each and reused until passed.
    """
    out: list[str] = []
    last = 0
    skip_to = next_gt = next_lt = next_comment_end = -1
    for match in _OPENER.finditer(html):
        start = match.start()
        if start < skip_to:  # inside a comment that is kept whole
            continue
        if html.startswith("<!--", start):
            if next_comment_end < start + 4:
                found = html.find("-->", start + 4)
                next_comment_end = _NONE if found < 0 else found
            if next_comment_end != _NONE:
                skip_to = next_comment_end + 3
                continue
        else:
            if next_gt <= start:
                found = html.find(">", start + 1)
                next_gt = _NONE if found < 0 else found
            if next_lt <= start:
                found = html.find("<", start + 1)
                next_lt = _NONE if found < 0 else found
            if next_gt < next_lt:
                continue
        out.append(html[last:start])
        out.append("&lt;")
        last = start + 1
    out.append(html[last:])
    return "".join(out)


def to_markdown(html: str) -> tuple[str, str | None]:
    """(readable Markdown text, title or None) of an HTML page (any page: the work is linear in its length)."""
    parser = _Extractor()
    parser.feed(_closed_constructs(_HUGE_CHARREF.sub("\ufffd", html)))
    parser.close()
    text = "".join(parser.out)
    lines: list[str] = []
    in_fence = False
    for line in text.split("\n"):
        if line.strip() == "```":
            in_fence = not in_fence
        lines.append(line.rstrip() if in_fence else line.strip())
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    title = " ".join(parser.title.split()) or parser.og_title.strip() or parser.first_h1
    return text, title or None
