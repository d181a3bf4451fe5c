"""``--json`` output of a value orjson cannot print: metadata nested deeper than its 255 levels.

New writes cannot store such metadata (32 levels at most), but a store may hold rows an older
ccmemory imported. The command line prints them with the standard library instead, and what
neither can print ends the command with one line, never a traceback.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from testing.cli import spawn

from ccmemory.cli import common


def _nested(depth: int) -> dict[str, Any]:
    """Metadata ``depth`` levels deep (the object is level 1): ``{"k": [[...]]}``."""
    value: Any = []
    for _ in range(depth - 2):
        value = [value]
    return {"k": value}


def test_a_stored_row_nested_deeper_than_orjson_prints_is_still_printed(home: Path, project_dir: Path) -> None:
    added = spawn(home, project_dir, "add", "Stored by an older ccmemory", "--json")
    assert added.returncode == 0, added.stderr
    memory_id = json.loads(added.stdout)["id"]
    connection = sqlite3.connect(home / "ccmemory.db")
    try:
        with connection:
            connection.execute("UPDATE memories SET metadata = ? WHERE id = ?", (json.dumps(_nested(300)), memory_id))
    finally:
        connection.close()
    for args in (["list", "--json"], ["get", memory_id, "--json"], ["search", "older", "--mode", "keyword", "--json"]):
        done = spawn(home, project_dir, *args)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        assert _nested(300) in [memory["metadata"] for memory in _memories(json.loads(done.stdout))]


def _memories(printed: Any) -> list[dict[str, Any]]:
    """The memories of a printed list, ``get`` (``{"memories": [...]}``) or search (hits holding a ``memory``)."""
    found = printed["memories"] if isinstance(printed, dict) else printed
    return [item.get("memory", item) for item in found]


def test_what_no_json_printer_can_print_ends_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        common.emit_json({"metadata": _nested(5_000)})
    assert exited.value.code == 1
    printed = capsys.readouterr()
    assert printed.out == ""
    assert printed.err.startswith("Error: The result cannot be printed as JSON (Recursion limit reached)")
    assert printed.err.count("\n") == 1 and "Run the command without --json" in printed.err
