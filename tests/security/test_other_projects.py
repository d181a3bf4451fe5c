"""Boundary 3 (docs/security.md): one project's memory is never changed from another, nor shown in it.

Through the real hooks: a session of one repository whose turns end in another repository's directory
(Claude ran ``cd ../other``, perhaps because a page told it to) keeps its summary in its own project
and writes nothing in the other's local context; a repository cloned where a deleted one stood
inherits none of the old one's recent activity.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from testing.git_repos import GIT, git, new_repo
from testing.hooks import bash_call, common, rows, run_hook, write_transcript

pytestmark = pytest.mark.skipif(GIT is None, reason="needs git")


def session_start(home: Path, project: Path, session_id: str) -> str:
    done = run_hook("session_start", common(session_id, project, "SessionStart", source="startup"), home)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"] if done.stdout else ""


def work(home: Path, project: Path, session_id: str, prompt: str, *, ends_in: Path | None = None) -> None:
    """A session in ``project``: a prompt, a captured command, then Stop and SessionEnd (in ``ends_in`` when given)."""
    write_transcript(project / f"{session_id}.jsonl", [prompt])
    session_start(home, project, session_id)
    assert run_hook("post_tool_use", bash_call(session_id, project, "cat notes.txt", f"{prompt} output", "t1"),
                    home).returncode == 0
    for event, hook, fields in (("Stop", "stop", {"stop_hook_active": False, "last_assistant_message": "Done."}),
                                ("SessionEnd", "session_end", {"reason": "other"})):
        payload = common(session_id, project, event, **fields)
        payload["cwd"] = str(ends_in or project)
        assert run_hook(hook, payload, home).returncode == 0


def test_a_turn_ended_in_another_repository_leaves_the_summary_in_the_sessions_project(home, tmp_path):
    mine, theirs = new_repo(tmp_path / "mine"), new_repo(tmp_path / "bank-app")
    work(home, mine, "a1", "Summarize MINE-ONLY-NOTES for the release", ends_in=theirs)
    summaries = rows(home, "SELECT p.path FROM memories m JOIN projects p ON p.id = m.project_id "
                           "WHERE m.source = 'summary'")
    assert summaries == [{"path": str(mine)}]
    context = session_start(home, theirs, "b1")
    assert "MINE-ONLY-NOTES" not in context
    assert rows(home, "SELECT directory FROM local_context_entries WHERE directory = ?", (str(theirs),)) == []


def test_a_repository_cloned_where_another_stood_inherits_none_of_its_recent_activity(home, tmp_path):
    place = new_repo(tmp_path / "work")
    work(home, place, "x1", "Rotate the PAYROLL-X database password")
    assert "PAYROLL-X" in session_start(home, place, "x2")
    shutil.rmtree(place)
    other = new_repo(tmp_path / "other", commits=1)
    git(tmp_path, "clone", "-q", str(other), str(place))
    context = session_start(home, place, "y1")
    assert "PAYROLL-X" not in context
    assert rows(home, "SELECT COUNT(*) AS n FROM memories WHERE content LIKE '%PAYROLL-X%'")[0]["n"] >= 1  # kept
