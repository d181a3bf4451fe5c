"""What must never be stored: private spans and secrets. One function, :func:`redact`, for every write path.

The store calls :func:`redact` on everything it writes (memories, session summaries, document
chunks, docmem nodes; the strings of metadata, tags and files through :func:`redact_fields`)
and the hook log on every line, so hooks, MCP tools, the CLI and import
all get the same treatment; capture also calls it on each field before cutting it to size, so a
secret is never cut in half first.

* ``<private>…</private>`` spans are removed (an unclosed tag hides everything after it), and so
  is ccmemory's own ``<ccmemory-context>`` block, so injected memory is not recorded back.
* Secrets are found by the rules in ``rules/secrets.json`` (data, not code): token shapes of known
  services, private key blocks, ``Authorization``/``Bearer`` values, passwords in URLs and in
  command lines (``curl -u``, ``mysql -p``, ``sshpass -p``, ``docker login -p``), and assignments,
  fields and flags whose name *ends* in a secret word (``DB_PASSWORD=…``, ``"apiKey": …``,
  ``--token …``; not ``token_count``, ``--token-file``, ``password_hash``).

Linear time: every rule pattern has bounded repetition only (a test checks the parsed patterns),
so one match attempt reads at most a fixed number of characters; each rule runs only when one of
its keywords occurs in the text; a rejected candidate resumes the scan past its name. Standard
library only and compiled lazily: the capture hook imports this module on every tool call.
"""

from __future__ import annotations

import json
import os
import re

TYPE_CHECKING = False  # typing costs the capture hook milliseconds; annotations are strings
if TYPE_CHECKING:
    from typing import Any

REDACTED = "[REDACTED]"
CONTEXT_TAG = "ccmemory-context"
RULES_PATH = os.path.join(os.path.dirname(__file__), "rules", "secrets.json")

_WORD_SPLIT = r"[_.\-]+|(?<=[a-z0-9])(?=[A-Z])"
_PLACEHOLDER = r"(?i)\d{1,5}|\[REDACTED.{0,40}|\*{1,100}|x{3,100}|\.{3}|…|[$%<].{0,1000}|\{\{.{0,1000}"
_EXPRESSION = (
    r"(?:os\.environ|os\.getenv|process\.env|getenv|env|secrets|vars)[.(\[].{0,1000}"
    r"|[A-Za-z_][A-Za-z0-9_]{0,100}\(.{0,1000}"
    r"|[A-Za-z_][A-Za-z0-9_]{0,100}(?:\.[A-Za-z_][A-Za-z0-9_]{0,100}){1,10}(?:\(.{0,1000})?"
)


class _Rules:
    """The parsed rule file; patterns compile on first use."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.rules: list[dict[str, Any]] = data["rules"]
        self.blocks: list[dict[str, Any]] = data["blocks"]
        names = data["names"]
        self.words = set(names["words"])
        self.pairs = {tuple(pair) for pair in names["pairs"]}
        self.not_secret = set(names["not_secret_values"])


_loaded: _Rules | None = None


def rules() -> _Rules:
    """The secret rules, read once per process from :data:`RULES_PATH`."""
    global _loaded
    if _loaded is None:
        with open(RULES_PATH, encoding="utf-8") as handle:
            _loaded = _Rules(json.load(handle))
    return _loaded


def strip_private(text: str) -> str:
    """Remove ``<private>`` spans and ccmemory's own injected context (an unclosed tag runs to the end)."""
    if "<" not in text:
        return text
    lower = text.lower()
    for tag in ("private", CONTEXT_TAG):
        opening, closing = f"<{tag}>", f"</{tag}>"
        if opening not in lower:
            continue
        kept: list[str] = []
        position = 0
        while True:
            start = lower.find(opening, position)
            if start < 0:
                kept.append(text[position:])
                break
            kept.append(text[position:start])
            end = lower.find(closing, start + len(opening))
            if end < 0:
                break
            position = end + len(closing)
        text = "".join(kept)
        lower = text.lower()
    return text


def is_secret_name(name: str) -> bool:
    """Whether a field, variable or flag name ends in a secret word (``DB_PASSWORD``, ``apiKey``, ``--token``)."""
    known = _name_verdicts.get(name)
    if known is None:
        if len(_name_verdicts) > 10_000:
            _name_verdicts.clear()
        known = _name_verdicts[name] = _judge_name(name)
    return known


_name_verdicts: dict[str, bool] = {}


def _judge_name(name: str) -> bool:
    table = rules()
    words = [w.lower().rstrip("0123456789") for w in re.split(_WORD_SPLIT, name.lstrip("-")) if w]
    words = [w for w in words if w]
    if not words:
        return False
    if words[-1] in table.words:
        return True
    return len(words) > 1 and (words[-2], words[-1]) in table.pairs


def plausible_value(value: str, *, expressions: bool = False) -> bool:
    """Whether a value could be a secret: not a placeholder or variable (``$TOKEN``, ``<key>``, ``***``).

    With ``expressions`` code is refused too (``get_password()``, ``settings.TOKEN``): after a
    bare name such text is more likely a program than a credential.
    """
    value = value.strip()
    if len(value) < 3 or value.lower() in rules().not_secret or re.fullmatch(_PLACEHOLDER, value):
        return False
    return not (expressions and re.fullmatch(_EXPRESSION, value))


def _opaque(value: str) -> bool:
    """A bearer credential looks machine-made: not a plain word (``Bearer authentication``)."""
    return plausible_value(value) and not value.isalpha()


def _secret_group(match: re.Match[str]) -> str | int:
    for group in ("secret", "dq", "sq", "bare"):
        if group in match.re.groupindex and match.group(group) is not None:
            return group
    return 0


_EXTEND = r"[^\s\"'`,;&|)}\]<>]*"


_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_MAX_NAME_BACK = 64


def _accepted(rule: dict[str, Any], match: re.Match[str], text: str) -> tuple[int, int, str] | None:
    """The span a rule's match redacts, or None when its check says the candidate is not a secret."""
    check = rule.get("check")
    group = _secret_group(match)
    start, end = match.span(group)
    value = match.group(group)
    accepted = (
        (check == "name" and is_secret_name(match.group("name")) and plausible_value(value, expressions=True))
        or (check == "value" and plausible_value(value))
        or (check == "opaque" and _opaque(value))
        or check is None
    )
    if not accepted:
        return None
    if rule.get("extend") and group == "bare":
        end = re.compile(_EXTEND).match(text, end).end()
    return start, end, rule.get("replacement", REDACTED)


def _occurrences(lower: str, words: list[str]) -> list[tuple[int, int]]:
    """(start, end) of every occurrence of every word in ``lower``, in order."""
    found = []
    for word in words:
        position = lower.find(word)
        while position >= 0:
            found.append((position, position + len(word)))
            position = lower.find(word, position + 1)
    found.sort()
    return found


def _rule_spans(rule: dict[str, Any], text: str, lower: str) -> list[tuple[int, int, str]]:
    """Where one rule finds secrets in ``text``: (start, end, replacement).

    A rule with ``anchors`` (the named rules) is tried only at the name around each occurrence
    of an anchor word (a secret word, found with ``str.find`` in the lower-cased text), not at
    every identifier; others search the text. Either way a rejected candidate moves the scan
    forward, so every position is read a bounded number of times.
    """
    pattern = re.compile(rule["regex"])
    spans: list[tuple[int, int, str]] = []
    if "anchors" in rule:
        resume = 0
        for anchor_start, anchor_end in _occurrences(lower, rule["anchors"]):
            if anchor_start < resume:
                continue
            start = anchor_start
            floor = max(start - _MAX_NAME_BACK, 0)
            while start > floor and text[start - 1] in _NAME_CHARS:
                start -= 1
            match = pattern.match(text, start)
            if match is None or match.end("name") < anchor_end:
                continue
            span = _accepted(rule, match, text)
            if span is not None:
                spans.append(span)
                resume = span[1]
        return spans
    position = 0
    while position <= len(text):
        match = pattern.search(text, position)
        if match is None:
            break
        span = _accepted(rule, match, text)
        if span is None:
            position = match.start() + 1
            continue
        spans.append(span)
        position = max(span[1], match.end(), match.start() + 1)
    return spans


def _block_spans(block: dict[str, Any], text: str) -> list[tuple[int, int, str]]:
    """Whole blocks from a begin marker to its end marker (or to the end of the text)."""
    begin, end_marker = re.compile(block["begin"]), re.compile(block["end"])
    spans: list[tuple[int, int, str]] = []
    position = 0
    while True:
        start = begin.search(text, position)
        if start is None:
            return spans
        end = end_marker.search(text, start.end())
        stop = end.end() if end else len(text)
        spans.append((start.start(), stop, block["replacement"]))
        if end is None:
            return spans
        position = stop


def find_secrets(text: str) -> list[tuple[int, int, str]]:
    """Non-overlapping (start, end, replacement) spans of every secret in ``text``, in order."""
    table = rules()
    lower = text.lower()
    if len(lower) != len(text):  # a few characters lower-case to two (İ): keep positions aligned
        lower = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    spans: list[tuple[int, int, str]] = []
    for block in table.blocks:
        if any(k in lower for k in block["keywords"]):
            spans.extend(_block_spans(block, text))
    for rule in table.rules:
        keywords = rule["keywords"]
        if not keywords or any(k in lower for k in keywords):
            spans.extend(_rule_spans(rule, text, lower))
    spans.sort()
    merged: list[tuple[int, int, str]] = []
    for start, end, replacement in spans:
        if merged and start < merged[-1][1]:
            last = merged[-1]
            if end > last[1]:
                merged[-1] = (last[0], end, last[2])
            continue
        merged.append((start, end, replacement))
    return merged


def redact_secrets(text: str) -> str:
    """Replace every secret value with ``[REDACTED]``, keeping the names and text around it."""
    spans = find_secrets(text)
    if not spans:
        return text
    parts: list[str] = []
    position = 0
    for start, end, replacement in spans:
        parts.append(text[position:start])
        parts.append(replacement)
        position = end
    parts.append(text[position:])
    return "".join(parts)


def storable(text: str) -> str:
    """Text SQLite can store as UTF-8: a lone surrogate becomes its escape (``\\ud800``) instead of an error."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def redact_value(value: Any) -> Any:
    """A JSON-like value with every string in it redacted (keys kept), before it is serialized.

    Serializing first would turn line breaks into ``\\n`` and glue each line's first word to
    an ``n``, hiding it from word-boundary rules; callers redact the serialized text again for
    ``"password": "…"`` pairs, which need the key.
    """
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: redact_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(item) for item in value]
    return value


def redact_fields(value: Any) -> Any:
    """A stored JSON value (a memory's metadata, tags or files) with every string in it redacted, keys too.

    A string under a key whose name ends in a secret word (``{"password": "…"}``) is replaced
    whole unless it is a placeholder (``$TOKEN``, ``<key>``, ``***``), as the name rules do in
    text. Cheap for the common small dict the capture hook passes: its keys and strings are
    scanned once, joined by line breaks (no rule reads across one differently from a string's
    end), and only when that scan changes something is each string redacted on its own.
    Returns ``value`` itself when nothing changes.
    """
    strings: list[str] = []
    named = _gather(value, strings, None)
    joined = "\n".join(strings)
    if not named and redact(joined) == joined:
        return value
    return _redact_tree(value, None)


def _gather(value: Any, strings: list[str], key: Any) -> bool:
    """Append every string of ``value`` (dict keys too) to ``strings``; True if one sits under a secret name."""
    if isinstance(value, str):
        strings.append(value)
        return isinstance(key, str) and is_secret_name(key)
    named = False
    if isinstance(value, dict):
        for name, item in value.items():
            if isinstance(name, str):
                strings.append(name)
            named = _gather(item, strings, name) or named
    elif isinstance(value, (list, tuple)):
        for item in value:
            named = _gather(item, strings, key) or named
    return named


def _redact_tree(value: Any, key: Any) -> Any:
    if isinstance(value, str):
        if isinstance(key, str) and is_secret_name(key) and plausible_value(value):
            return REDACTED  # a value, not code: ``a.b.c`` under "token" is a token (Discord's look so)
        return redact(value)
    if isinstance(value, dict):
        return {(redact(name) if isinstance(name, str) else name): _redact_tree(item, name)
                for name, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redact_tree(item, key) for item in value]
    return value


def redact(text: str) -> str:
    """Everything applied to text before it is stored: private spans, then secrets, then storable UTF-8."""
    if not isinstance(text, str) or not text:
        return text
    return storable(redact_secrets(strip_private(text)))
