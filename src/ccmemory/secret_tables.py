"""Secrets in tables: a value whose column a header names as a secret.

A CSV or TSV file, a Markdown table, ``psql`` output and an SQL ``INSERT`` name their columns once and give
each row's values in the same order (``user,password`` then ``bob,Tr0ub4dor&3``; ``INSERT INTO users(name,
password) VALUES ('bob', '…')``). No name stands beside such a value, so the named rules of
:mod:`ccmemory.redaction` cannot see it; here a header is read and the cells of its secret columns are
returned.

A header is a line of two to :data:`MAX_CELLS` cells split by one delimiter (``,``, ``;``, a tab or ``|``),
each a short name (at most three words, no sign but ``_ . -``; the first may follow other text on its line),
one of them a secret name; the rows are the lines right after it (past a ``---``/``-+-`` rule line) with as
many cells. A row's cell is returned when it is one token (quoted, or without spaces) that the caller's check
accepts (not a plain word): prose that happens to have commas is no table. Linear: every line is read as a
header or a row at most once. Standard library only (the capture hook redacts through here).
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable

#: Cells a header may have.
MAX_CELLS = 50
#: Longest line read as a header or a row.
MAX_LINE = 4000
_DELIMITERS = (",", ";", "\t", "|")
_HEADER_CELL = re.compile(r"""[ \t]*["'`\[]?([A-Za-z_][A-Za-z0-9_ .\-]{0,60}?)["'`\]]?[ \t]*""")
_RULE_LINE = re.compile(r"[ \t]{0,40}\|?[ \t]{0,40}:?-{2,4000}[-:+| \t]{0,4000}")
_INSERT = re.compile(r"\binsert[ \t]{1,8}(?:(?:ignore|or[ \t]{1,8}[a-z]{1,10})[ \t]{1,8})?into[ \t]{1,8}[^\s(]{1,200}"
                     r"[ \t]{0,8}\(([^()\n]{1,2000})\)\s{0,20}values\s{0,20}(?=\()", re.I)
_QUOTES = "\"'`"

Spans = list[tuple[int, int]]


def table_spans(text: str, lower: str, words: list[int], is_secret_name: Callable[[str], bool],
                plausible: Callable[[str], bool]) -> Spans:
    """(start, end) of every value in a secret column of a delimited table or an SQL ``INSERT`` in ``text``.

    Only lines holding a secret word (``words``: where they start, in order) are read as headers; ``lower`` is
    ``text`` lower-cased position for position.
    """
    spans = _delimited_spans(text, words, is_secret_name, plausible)
    if "insert" in lower and "values" in lower:
        spans += _insert_spans(text, is_secret_name, plausible)
    return spans


def _cells(line: str, start: int, delimiter: str) -> list[tuple[int, int]]:
    """(start, end) in the text of each cell of ``line`` (which begins at ``start``); a delimiter inside double
    quotes does not split, a Markdown row's outer pipes frame it."""
    cells: list[tuple[int, int]] = []
    cell_start = 0
    if '"' in line:
        quoted = False
        for index, char in enumerate(line):
            if char == '"':
                quoted = not quoted
            elif char == delimiter and not quoted:
                cells.append((start + cell_start, start + index))
                cell_start = index + 1
        cells.append((start + cell_start, start + len(line)))
    else:
        for part in line.split(delimiter):
            cells.append((start + cell_start, start + cell_start + len(part)))
            cell_start += len(part) + 1
    framed = line.strip()
    if delimiter == "|" and framed.startswith("|") and framed.endswith("|") and len(cells) >= 3:
        cells = cells[1:-1]
    return cells


def _secret_columns(text: str, cells: list[tuple[int, int]], is_secret_name: Callable[[str], bool]) -> list[int]:
    """Indexes of the secret columns when ``cells`` read as a header, else []."""
    if not 2 <= len(cells) <= MAX_CELLS:
        return []
    names = []
    first = cells[0][1]
    while first > cells[0][0] and (text[first - 1].isalnum() or text[first - 1] in "_ .-\"'`[]\t"):
        first -= 1
    cells = [(first, cells[0][1]), *cells[1:]]  # the first name may follow other text ("log: user,password")
    for start, end in cells:
        header = _HEADER_CELL.fullmatch(text, start, end)
        if header is None or len(header.group(1).split()) > 3:
            return []
        names.append(header.group(1))
    return [index for index, name in enumerate(names) if is_secret_name(name.strip())]


def _value(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The span of a row's cell without its spaces and quotes, when it is one token."""
    cell = text[start:end]
    lead = len(cell) - len(cell.lstrip())
    start, end = start + lead, start + len(cell.rstrip())
    if end - start >= 2 and text[start] in _QUOTES and text[end - 1] == text[start]:
        return start + 1, end - 1
    if start == end or any(char.isspace() for char in text[start:end]):
        return None
    return start, end


def _delimited_spans(text: str, words: list[int], is_secret_name: Callable[[str], bool],
                     plausible: Callable[[str], bool]) -> Spans:
    """The secret cells of every delimited table whose header line holds a secret word (``words``: where)."""
    spans: Spans = []
    resume = 0
    for at in words:
        if at < resume:
            continue
        start = text.rfind("\n", resume, at) + 1 or resume
        end = text.find("\n", at)
        if end < 0:
            break  # no line after it: a header without rows
        resume = end + 1
        line = text[start:end].rstrip("\r")
        if len(line) > MAX_LINE:
            continue
        for delimiter in _DELIMITERS:
            if delimiter not in line:
                continue
            header = _cells(line, start, delimiter)
            columns = _secret_columns(text, header, is_secret_name)
            if columns:
                resume = _rows(text, resume, delimiter, len(header), columns, plausible, spans)
                break
    return spans


def _rows(text: str, position: int, delimiter: str, width: int, columns: list[int],
          plausible: Callable[[str], bool], spans: Spans) -> int:
    """Add the secret cells of the rows from ``position`` (past a rule line) to ``spans``; where the rows end."""
    rows = 0
    while position <= len(text):
        end = text.find("\n", position)
        end = len(text) if end < 0 else end
        row = text[position:end].rstrip("\r")
        rows += 1
        if rows == 1 and _RULE_LINE.fullmatch(row):
            position = end + 1
            continue
        cells = _cells(row, position, delimiter) if len(row) <= MAX_LINE and delimiter in row else []
        if len(cells) != width:
            return position
        for column in columns:
            value = _value(text, *cells[column])
            if value is not None and plausible(text[value[0]:value[1]]):
                spans.append(value)
        position = end + 1
    return position


def _insert_spans(text: str, is_secret_name: Callable[[str], bool], plausible: Callable[[str], bool]) -> Spans:
    """The values of the secret columns in each row of every ``INSERT INTO t (columns) VALUES (…), (…)``."""
    spans: Spans = []
    position = 0
    while True:
        insert = _INSERT.search(text, position)
        if insert is None:
            return spans
        columns = [index for index, name in enumerate(insert.group(1).split(","))
                   if is_secret_name(name.strip().strip(_QUOTES + "[]"))]
        position = insert.end()
        while columns:
            values, position = _row(text, position)
            for column in columns:
                if column < len(values):
                    value = _value(text, *values[column])
                    if value is not None and plausible(text[value[0]:value[1]]):
                        spans.append(value)
            after = _skip_space(text, position)
            if not text.startswith(",", after):
                break
            position = _skip_space(text, after + 1)
            if not text.startswith("(", position):
                break


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position


def _row(text: str, position: int) -> tuple[list[tuple[int, int]], int]:
    """The values of the parenthesised row at ``position`` (quoted strings and nested calls kept whole) and where
    the row ends."""
    values: list[tuple[int, int]] = []
    depth, quote, start = 0, "", position + 1
    index = position + 1
    while index < len(text):
        char = text[index]
        if quote:
            if char == quote:
                if text.startswith(quote, index + 1):  # '' inside a string is one quote
                    index += 1
                else:
                    quote = ""
        elif char in "'\"":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")" and depth:
            depth -= 1
        elif char == ")" or (char == "," and not depth):
            values.append((start, index))
            start = index + 1
            if char == ")":
                return values, index + 1
        index += 1
    return values, index
