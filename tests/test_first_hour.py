"""Rough edges a new user met in their first hour, each through the real CLI process or MCP server."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from ccmemory import db as database, embedding_worker, locks
from testing.cli import spawn
from testing.cli import spawn as run


def added(home: Path, cwd: Path, text: str) -> str:
    done = run(home, cwd, "add", text, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["id"]


def renamed(home: Path, old: str, new: str) -> None:
    """Give a memory a chosen id (set-up only: two ids sharing a prefix are rare by chance)."""
    db = database.connect(home / "ccmemory.db")
    try:
        with db.transaction():
            db.execute("UPDATE memories SET id = ? WHERE id = ?", (new, old))
    finally:
        db.close()


def test_any_unique_prefix_of_four_or_more_characters_names_a_memory(home: Path, project_dir: Path) -> None:
    memory_id = added(home, project_dir, "The API uses JWT tokens for auth")
    for length in (4, 7, 12):
        shown = run(home, project_dir, "get", memory_id[:length])
        assert shown.returncode == 0, shown.stderr
        assert "The API uses JWT tokens for auth" in shown.stdout


def test_a_prefix_too_short_or_ambiguous_says_so(home: Path, project_dir: Path) -> None:
    first, second = added(home, project_dir, "first memory"), added(home, project_dir, "second memory")
    renamed(home, first, "abcd1111-0000-4000-8000-000000000001")
    renamed(home, second, "abcd2222-0000-4000-8000-000000000002")
    short = run(home, project_dir, "get", "abc")
    assert short.returncode == 1 and "too short" in short.stderr and "at least 4" in short.stderr
    ambiguous = run(home, project_dir, "get", "abcd")
    assert ambiguous.returncode == 1 and "ambiguous" in ambiguous.stderr
    assert "abcd1111-0000-4000-8000-000000000001" in ambiguous.stderr
    assert "abcd2222-0000-4000-8000-000000000002" in ambiguous.stderr
    assert "second memory" in run(home, project_dir, "get", "abcd2").stdout
    refused = run(home, project_dir, "delete", "abcd")
    assert refused.returncode == 1 and "ambiguous" in refused.stderr
    assert "first memory" in run(home, project_dir, "get", "abcd1").stdout  # nothing was deleted
    unknown = run(home, project_dir, "get", "ffff0000")
    assert unknown.returncode == 1 and "Entry not found: ffff0000" in unknown.stderr


def test_deleting_a_deleted_memory_says_so_and_fails(home: Path, project_dir: Path) -> None:
    memory_id = added(home, project_dir, "Deploys go out on Tuesdays")
    assert run(home, project_dir, "delete", memory_id[:6]).returncode == 0
    again = run(home, project_dir, "delete", memory_id[:6])
    assert again.returncode == 1 and "already deleted" in again.stderr and "soft-deleted" not in again.stdout
    assert f"ccmemory restore {memory_id}" in again.stderr


def test_the_mcp_tools_take_prefixes_and_name_ambiguity(home: Path, project_dir: Path) -> None:
    from testing.mcp import running_server

    first, second = added(home, project_dir, "first memory"), added(home, project_dir, "second memory")
    renamed(home, first, "abcd1111-0000-4000-8000-000000000001")
    renamed(home, second, "abcd2222-0000-4000-8000-000000000002")
    with running_server(home, project_dir) as server:
        assert "second memory" in server.call("memory_get", {"ids": ["abcd2"]}).text
        ambiguous = server.call("memory_get", {"ids": ["abcd"]})
        assert ambiguous.is_error and "ambiguous" in ambiguous.text
        short = server.call("memory_delete", {"memory_id": "ab"})
        assert short.is_error and "too short" in short.text
        assert not server.call("memory_delete", {"memory_id": "abcd1"}).is_error
        again = server.call("memory_delete", {"memory_id": "abcd1"})
        assert again.is_error and "already deleted" in again.text


def test_stats_and_doctor_hint_at_embed_only_when_something_waits(home: Path, project_dir: Path) -> None:
    guide = project_dir / "guide.md"  # `ccmemory add` embeds what it adds; a document section waits for its vector
    guide.write_text("# Guide\n\n## Release\nTag the commit and push the tag.\n")
    # An embedder that embeds nothing holds the lock, so the section still waits when stats looks.
    with locks.held(embedding_worker.lock_path(), stale_after=float("inf"), role=embedding_worker.SERVER):
        assert run(home, project_dir, "docs", "ingest", str(guide)).returncode == 0
        waiting = run(home, project_dir, "stats")
    assert "Pending embeddings: 1 (run `ccmemory embed`)" in waiting.stdout
    assert run(home, project_dir, "embed").returncode == 0
    assert "Pending embeddings: 0\n" in run(home, project_dir, "stats").stdout
    verbose = run(home, project_dir, "doctor", "--verbose")
    assert "pending embeddings: 0\n" in verbose.stdout


def test_doctor_says_when_no_claude_is_on_path_and_never_runs_one_from_the_project(home: Path, project_dir: Path,
                                                                                   tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    planted = project_dir / "claude"
    planted.write_text(f"#!/bin/sh\ntouch {marker}\necho '9.9.9 (Claude Code)'\n")
    planted.chmod(0o755)
    path = os.pathsep.join([".", "", os.path.dirname(sys.executable), "/usr/bin", "/bin"])
    result = spawn(home, project_dir, "doctor", PATH=path, timeout=120)  # a real process looks up PATH
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[note] claude code: no `claude` on PATH" in result.stdout
    assert not marker.exists()


def test_the_readme_install_steps_are_the_ones_the_real_install_test_runs() -> None:
    from testing.claude_code import README_INSTALL

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Use it in Claude Code"):]
    block = section[section.index("```sh\n") + 6:section.index("```", section.index("```sh\n") + 6)]
    commands = [line.split("#", 1)[0].strip() for line in block.splitlines() if line.strip()]
    assert commands == list(README_INSTALL)
    assert "<this repository>" not in readme
    assert "bash .ci/run" in readme and "skip" in readme[:readme.index("## Use it in Claude Code")]


def test_help_never_cuts_a_command_summary_mid_phrase(home: Path, project_dir: Path) -> None:
    for group in ((), ("docs",), ("files",), ("config",), ("context",)):
        shown = run(home, project_dir, *group, "--help")
        assert shown.returncode == 0, shown.stderr
        commands = shown.stdout[shown.stdout.index("Commands:"):] if "Commands:" in shown.stdout else ""
        assert "..." not in commands, (group, commands)


def test_add_says_when_it_redacted_and_suggests_a_near_category(home: Path, project_dir: Path) -> None:
    secret = run(home, project_dir, "add", "The staging DB_PASSWORD=hunter2-Zq81x is in the vault")
    assert secret.returncode == 0, secret.stderr
    assert "Note: 1 secret-looking value replaced by [REDACTED]" in secret.stderr
    plain = run(home, project_dir, "add", "Deploys go out on Tuesdays")
    assert "Note:" not in plain.stderr
    typo = run(home, project_dir, "add", "Auth is a middleware", "--category", "archtecture")
    assert typo.returncode == 0 and "did you mean 'architecture'?" in typo.stderr


def test_a_bad_date_names_the_option(home: Path, project_dir: Path) -> None:
    wrong = run(home, project_dir, "add", "Release shipped", "--created-at", "soon")
    assert wrong.returncode == 2 and "'--created-at'" in wrong.stderr and "ISO-8601" in wrong.stderr
    assert "created_at:" not in wrong.stderr


def test_an_empty_query_is_refused_before_anything_loads(home: Path, project_dir: Path) -> None:
    empty = run(home, project_dir, "search", "  ")
    assert empty.returncode == 2 and "Query cannot be empty" in empty.stderr
    assert not (home / "ccmemory.db").exists()  # refused before the store (or the model) was opened


def test_an_empty_list_names_the_project_and_the_way_to_others(home: Path, project_dir: Path) -> None:
    listed = run(home, project_dir, "list")
    assert listed.returncode == 0
    assert str(project_dir) in listed.stdout and "--all-projects" in listed.stdout and "--project" in listed.stdout


def test_export_counts_in_plain_english(home: Path, project_dir: Path, tmp_path: Path) -> None:
    added(home, project_dir, "one memory")
    added(home, project_dir, "another memory")
    done = run(home, project_dir, "export", "--project", str(project_dir), "-o", str(tmp_path / "out.jsonl"))
    assert done.returncode == 0, done.stderr
    assert "Exported 1 project, 2 memories" in done.stderr


def test_cuts_end_at_words_and_are_never_longer_than_what_they_replace() -> None:
    import random

    from ccmemory import excerpts

    words = "we decided to reject before any side effect so the webhook tests pass again supercalifragilistic".split()
    chooser = random.Random(7)
    for _ in range(2000):
        text = " ".join(chooser.choice(words) for _ in range(chooser.randint(1, 120)))
        for limit in (12, 40, 100, 300):
            for shorten in (excerpts.one_line, excerpts.ends, excerpts.cut):
                shown = shorten(text, limit)
                if len(text) <= limit:
                    assert shown == text
                    continue
                assert len(shown) <= limit and len(shown) < len(text)
                kept = shown.replace("…", " ").replace("\n", " ").split()
                kept = [word for word in kept if word not in ("[", "]", "characters", "elided") and not word.isdigit()]
                # whole words only; the first may be cut when that one word alone is longer than the room
                assert all(word in words for word in kept[1:]), (shorten.__name__, limit, shown)
                assert not kept or any(word.startswith(kept[0]) for word in words), (shorten.__name__, limit, shown)


def test_the_demo_previews_and_next_session_say_the_useful_thing_first(tmp_path: Path) -> None:
    done = spawn(None, tmp_path, "demo", "--home", str(tmp_path / "demo"), timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    searches = done.stdout[done.stdout.index("\nSearch ("):done.stdout.index("What the next session is given")]
    hits = [line for line in searches.splitlines() if line[:1].isdigit()]
    assert hits and all(" reflective/" in line or " episodic/" in line or " semantic/" in line
                        or " procedural/" in line for line in hits)  # <id> <sector>/<category> <date>
    previews = [line.strip() for line in searches.splitlines() if line.startswith("   ")]
    assert previews and not any(line.startswith("Session summary (") for line in previews)
    assert any(line.startswith(("Request:", "Outcome:")) for line in previews)
    context = done.stdout[done.stdout.index("<ccmemory-context>"):]
    assert "Files read: app\n" not in context and "Files read: app," not in context
    assert "characters elided" not in context
    session = next(line for line in context.splitlines() if "] 20" in line and " session: " in line)
    assert session.split(" session: ", 1)[1].startswith(("Request:", "Outcome:"))


def test_the_viewer_takes_a_short_unique_prefix_and_names_an_ambiguous_one(home: Path, project_dir: Path) -> None:
    import urllib.error

    from testing.ui import api_get, running_ui

    first, second = added(home, project_dir, "first memory"), added(home, project_dir, "second memory")
    renamed(home, first, "abcd1111-0000-4000-8000-000000000001")
    renamed(home, second, "abcd2222-0000-4000-8000-000000000002")
    with running_ui(home, project_dir) as ui:
        project = api_get(ui, "/api/projects")["projects"][0]["id"]
        shown = api_get(ui, f"/api/projects/{project}/memories/abcd2")
        assert "second memory" in json.dumps(shown)
        try:
            api_get(ui, f"/api/projects/{project}/memories/abcd")
        except urllib.error.HTTPError as exc:
            assert exc.code in (400, 404) and "ambiguous" in exc.read().decode()
        else:
            raise AssertionError("an ambiguous prefix was accepted")
