"""``ccmemory backfill`` on transcripts the real Claude Code CLI wrote gives what live capture stored (issue 22).

A scripted session runs in the real CLI with the plugin installed (fake Messages API on
loopback): it writes a file and edits it, runs a command that fails, creates what it missed and
runs it again (a failure fixed later), delegates to a subagent that runs a command of its own, and
runs a command holding a ``<private>`` span. Its hooks fill store A as they would for a user. Then
``ccmemory backfill --json`` reads the transcripts that session left in Claude Code's configuration
folder into an empty store B: the memories are the same, row by row (text, files, session, tier,
salience, category, source, metadata; a tool call's time is the transcript's in both, as Stop and
SessionEnd give live captures their transcript times however late Claude Code started their hooks;
the summary's within the Stop hook's delay), and so are the session summary and the local context,
built from the calls in that order. A second run adds nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from testing.env import isolated_env
from testing.claude_code import VERSIONS, ClaudeCode, claude_or_skip, store_rows as rows
from testing.fake_anthropic import Block, FakeAnthropic, offered_tools, text, tool_results, tool_use

PROMPT = "Set up the greeting module and check the release notes"
SUBAGENT_PROMPT = "SUBAGENT: count the lines of greeting.py"
PRIVATE = "hunter2-private-6c1f"
SETTLE_SECONDS = 60
#: The summary is stamped when the first Stop hook writes it live, when the turn's reply was written in a backfill.
MAX_CLOCK_GAP_SECONDS = 15


def script(project: Path) -> Any:
    target = project / "greeting.py"
    notes = project / "NOTES.md"

    def answer(body: dict[str, Any]) -> list[Block]:
        first = body["messages"][0]["content"]
        first_text = first if isinstance(first, str) else json.dumps(first)
        done = {r["tool_use_id"] for r in tool_results(body)}
        if "SUBAGENT:" in first_text:  # the subagent's own conversation
            if "toolu_sub_wc" not in done:
                return [dict(tool_use("Bash", command=f"wc -l {target}", description="Count lines"),
                             id="toolu_sub_wc")]
            return [text("greeting.py has 1 line.")]
        steps = [
            ("toolu_write", tool_use("Write", file_path=str(target), content="GREETING = 'hello'\n")),
            ("toolu_edit", tool_use("Edit", file_path=str(target), old_string="'hello'",
                                    new_string="'hello, memory'")),
            ("toolu_cat_fail", tool_use("Bash", command=f"cat {notes}", description="Read the release notes")),
            ("toolu_notes", tool_use("Write", file_path=str(notes), content="# Notes\n")),
            ("toolu_cat_ok", tool_use("Bash", command=f"cat {notes}", description="Read the release notes")),
            ("toolu_task", tool_use("Task" if "Task" in offered_tools(body) else "Agent",
                                    description="Count lines", prompt=SUBAGENT_PROMPT,
                                    subagent_type="general-purpose")),
            ("toolu_private", tool_use("Bash", command=f"echo visible <private>{PRIVATE}</private> end",
                                       description="Echo a private word")),
        ]
        for tool_use_id, block in steps:
            if tool_use_id not in done:
                return [dict(block, id=tool_use_id)]
        last = body["messages"][-1]["content"]
        if "<task-notification>" in (last if isinstance(last, str) else json.dumps(last)):
            # Claude Code 2.1.3xx starts a turn of its own with the background agent's result; a model answers
            # it with words of that turn (the same text as the turn before would let a Stop that read the
            # transcript before the new turn was written take the old reply for the new one).
            return [text("The count came back: greeting.py has 1 line.")]
        return [text("Done. We decided to keep the greeting in greeting.py because both tools share it.")]

    return answer



def settle(db_path: Path, data: Path) -> None:
    """Capture and SessionEnd finish in detached processes after `claude -p` exits: wait until the store is
    still (the session ended, no capture in flight, no memory added for 2 s), bounded. A failed call's hook
    may start after SessionEnd (nothing waits for it), so its marker can appear after a first quiet look."""
    deadline = time.monotonic() + SETTLE_SECONDS
    quiet_since, last_count = None, -1
    while time.monotonic() < deadline:
        live = [marker for marker in (data / "inflight").glob("*") if _alive(marker)] \
            if (data / "inflight").exists() else []
        ended = db_path.exists() and rows(db_path, "SELECT count(*) AS n FROM sessions WHERE ended_at IS NOT NULL "
                                                   "AND summary IS NOT NULL")[0]["n"]
        count = rows(db_path, "SELECT count(*) AS n FROM memories")[0]["n"] if db_path.exists() else 0
        if not ended or live or count != last_count:
            quiet_since, last_count = None, count
        elif quiet_since is None:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= 2:
            return
        time.sleep(0.2)


def _alive(marker: Path) -> bool:
    """Whether the capture process an in-flight marker (``<session>.<pid>``) names still runs."""
    try:
        os.kill(int(marker.name.rsplit(".", 1)[1]), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


def backfill(claude_dir: Path, data: Path, *args: str) -> subprocess.CompletedProcess:
    env = isolated_env(data, CLAUDE_CONFIG_DIR=str(claude_dir))
    return subprocess.run([sys.executable, "-m", "ccmemory", "backfill", "--json", *args], env=env,
                          capture_output=True, text=True, timeout=300)


MEMORY_COLUMNS = "m.id, session_id, content, files, tags, sector, tier, category, salience, importance, source, " \
                 "metadata, dedupe_key, m.created_at, p.path AS project"


def memories(db_path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Every memory keyed by (session, tool_use_id or source), its ids replaced by that key."""
    found = rows(db_path, f"SELECT {MEMORY_COLUMNS} FROM memories m JOIN projects p ON p.id = m.project_id "
                          "WHERE m.is_deleted = 0")
    keys = {row["id"]: (row["session_id"], row["dedupe_key"] or row["source"]) for row in found}
    keyed = {}
    for row in found:
        metadata = json.loads(row["metadata"])
        if "fixed_by" in metadata:
            metadata["fixed_by"] = keys.get(metadata["fixed_by"])
        # Only live capture records the files' state (ccmemory.staleness): a backfill of a past call would record
        # today's files, so it records none.
        metadata.pop("seen", None)
        keyed[keys[row["id"]]] = dict(row, metadata=metadata, id=None)
    return keyed


def seconds(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


@pytest.fixture(scope="module", params=VERSIONS)
def stores(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    binary = claude_or_skip(request.param)
    root = tmp_path_factory.mktemp("backfill-e2e")
    project = root / "project"
    (project / ".git").mkdir(parents=True)
    with FakeAnthropic(script(project)) as fake:
        cc = ClaudeCode(binary, root, fake.url)
        cc.install_plugin(project)
        result = cc.run("-p", PROMPT, "--allowedTools", "Bash Write Edit Read Task Agent", "--output-format", "json",
                        cwd=project)
        session_id = json.loads(result.stdout)["session_id"]
        live = cc.data / "ccmemory.db"
        settle(live, cc.data)
        requests = fake.agent_requests()
    claude_dir = cc.home / ".claude"
    for transcript in (claude_dir / "projects").rglob("*.jsonl"):  # run later: no session is still being written
        os.utime(transcript, (time.time() - 3600, time.time() - 3600))
    into = root / "backfilled"
    first = backfill(claude_dir, into)
    second = backfill(claude_dir, into)
    return {"live": live, "backfilled": into / "ccmemory.db", "first": first, "second": second,
            "session_id": session_id, "requests": requests, "claude_dir": claude_dir, "cc": cc}


def test_the_scripted_session_ran_every_tool(stores: dict[str, Any]) -> None:
    called = {block["id"] for body in stores["requests"] for message in body["messages"]
              if isinstance(message["content"], list) for block in message["content"] if block.get("type") == "tool_use"}
    assert {"toolu_write", "toolu_edit", "toolu_cat_fail", "toolu_cat_ok", "toolu_task", "toolu_private",
            "toolu_sub_wc"} <= called
    assert stores["first"].returncode == 0, stores["first"].stderr


def test_backfill_stores_the_memories_live_capture_stored(stores: dict[str, Any]) -> None:
    live, backfilled = memories(stores["live"]), memories(stores["backfilled"])
    assert set(backfilled) == set(live), (sorted(live), sorted(backfilled))
    for key, row in live.items():
        other = backfilled[key]
        if row["source"] == "capture":  # the transcript's time of the call, in both
            assert row["created_at"] == other["created_at"], key
        gap = abs(seconds(row["created_at"]) - seconds(other["created_at"]))
        assert gap < MAX_CLOCK_GAP_SECONDS, (key, row["created_at"], other["created_at"])
        same = {column: (row[column], other[column]) for column in row if column != "created_at"
                and row[column] != other[column]}
        assert not same, (key, same)


def test_the_failure_fixed_later_is_settled_and_the_private_span_is_gone(stores: dict[str, Any]) -> None:
    backfilled = memories(stores["backfilled"])
    failed = backfilled[(stores["session_id"], "toolu_cat_fail")]
    assert failed["metadata"]["outcome"] == "failed"
    assert failed["metadata"]["fixed_by"] == (stores["session_id"], "toolu_cat_ok")
    assert (stores["session_id"], "toolu_sub_wc") in backfilled
    everything = json.dumps(rows(stores["backfilled"], "SELECT * FROM memories"))
    assert PRIVATE not in everything and "visible" in everything


def test_the_session_summary_and_local_context_are_the_same(stores: dict[str, Any]) -> None:
    query = "SELECT id, summary, transcript_path FROM sessions ORDER BY id"
    assert rows(stores["backfilled"], query) == rows(stores["live"], query)
    context = "SELECT directory, session_id, title, details, files, theme FROM local_context_entries ORDER BY id"
    live, backfilled = rows(stores["live"], context), rows(stores["backfilled"], context)
    assert settled(backfilled) == settled(live)
    assert commands_run(backfilled) == commands_run(live)


#: Lines of a local-context entry that list a turn's calls (and what the turn's theme is drawn from them).
CALL_LINES = ("Commands:", "Errors:")


def settled(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Local-context entries without the lines that list the turn's calls, and without the theme drawn from them.

    Which turn a call is listed under can differ: a call whose hook Claude Code starts after the turn's Stop
    (a failed call, which Stop does not wait for; a subagent's call on a busy machine) is listed live under
    the next turn, while backfill files it by its transcript time. :func:`commands_run` checks none is lost.
    """
    return [{**entry, "theme": None, "details": [line for line in json.loads(entry["details"])
                                                 if not line.startswith(CALL_LINES)]} for entry in entries]


def commands_run(entries: list[dict[str, Any]]) -> list[str]:
    """Every command the entries list, whichever turn lists it, sorted."""
    found = [command for entry in entries for line in json.loads(entry["details"]) if line.startswith("Commands:")
             for command in line.removeprefix("Commands:").split("; ")]
    return sorted(command.strip() for command in found)


def test_running_backfill_again_adds_nothing(stores: dict[str, Any]) -> None:
    first, second = json.loads(stores["first"].stdout), json.loads(stores["second"].stdout)
    assert first["sessions"]["taken"] == 1 and first["tool_calls"]["stored"] >= 7
    assert second["sessions"]["taken"] == 0 and second["tool_calls"]["stored"] == 0, second
    assert second["sessions"]["skipped"] == {"already in memory": 1}


def test_backfill_over_the_live_store_adds_nothing(stores: dict[str, Any]) -> None:
    before = memories(stores["live"])
    result = backfill(stores["claude_dir"], stores["cc"].data)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["tool_calls"]["stored"] == 0
    assert memories(stores["live"]) == before
