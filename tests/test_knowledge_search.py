"""Indexed knowledge through the real CLI, search and MCP server: exit codes, summary, file.md#anchor hits,
knowledge over raw observations, rebuilds that give the same results (seed 001 F2, F5.2, NF5)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from ccmemory import embeddings, memories, projects, search
from ccmemory.hooks import context as session_context
from ccmemory import config
from ccmemory.knowledge import indexer, settings as project_settings

from testing.knowledge import AUTH, GOTCHAS, make_repo
from testing.mcp import running_server
from testing.cli import spawn
from testing.env import isolated_env


def cli(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return spawn(home, cwd, *args)


def test_index_command_summary_progress_exit_codes_and_dry_run(home, tmp_path):
    repo = tmp_path / "repo"
    knowledge = make_repo(repo, {"gotchas.md": GOTCHAS, "architecture/auth.md": AUTH})

    dry = cli(home, "index", "--dry-run", "--project", str(repo))
    assert dry.returncode == 0, dry.stderr
    assert "Would index: architecture/auth.md (2 entries)" in dry.stdout
    assert "Would index 2 file(s)" in dry.stdout and "nothing written" in dry.stdout

    first = cli(home, "index", cwd=repo)
    assert first.returncode == 0, first.stderr
    summary = first.stdout.strip().splitlines()[-1]
    assert summary.startswith("Indexed 2 file(s) (0 unchanged, 0 skipped): 4 entries created, 0 removed in ")
    assert summary.endswith("s")
    assert "Indexing knowledge" in first.stderr and "Embedding" in first.stderr  # the progress bars

    again = cli(home, "index", "--project", str(repo))
    assert again.returncode == 0 and "Skipping unchanged: gotchas.md" in again.stdout
    forced = json.loads(cli(home, "index", "--force", "--json", "--project", str(repo)).stdout)
    assert forced["files_indexed"] == 2 and forced["entries_created"] == 4 and forced["exit_code"] == 0
    assert forced["embedded"] == 4

    (knowledge / "empty.md").write_text("")
    warned = cli(home, "index", "--project", str(repo))
    assert warned.returncode == 2 and "Warning: Empty file: empty.md" in warned.stderr

    bare = tmp_path / "bare"
    (bare / ".git").mkdir(parents=True)
    missing = cli(home, "index", "--project", str(bare))
    assert missing.returncode == 1
    assert "Knowledge directory not found. Run 'ccmemory init' first." in missing.stderr


def test_knowledge_hits_are_marked_and_outrank_raw_observations(vdb, tmp_path, embedder):
    repo = tmp_path / "repo"
    make_repo(repo, {"gotchas.md": GOTCHAS, "architecture/auth.md": AUTH})
    project = projects.project_id(vdb, repo)
    # Raw observations that answer the same questions, captured the way the hooks store them
    for text in ("Bash: grep -rn RS256 src/ -> src/auth/middleware.py: JWT tokens validated with the RS256 public key",
                 "Edit src/models.py: all timestamps are stored in UTC, converted at the edges"):
        memories.add(vdb, project_id=project, content=text, sector="episodic", tier="project", salience=0.6,
                     source="capture")
    indexer.index(vdb, project, project_settings.load(str(repo)))
    embeddings.embed_pending(vdb, embedder)

    for query, ref in (("how are JWT tokens validated", "architecture/auth.md#token-validation"),
                       ("are timestamps stored in UTC", "gotchas.md#dates-are-stored-in-utc")):
        for mode in ("hybrid", "keyword", "semantic"):
            hits = search.search(vdb, query, project_id=project, mode=mode, embedder=embedder, limit=3)
            assert hits[0].memory.source == "knowledge", (query, mode, [h.memory.content for h in hits])
            assert f"{hits[0].memory.metadata['knowledge']['file']}#{hits[0].memory.metadata['knowledge']['anchor']}" == ref
            assert any(hit.memory.source == "capture" for hit in hits)  # both answered
            assert all(0 <= hit.score <= 1 for hit in hits)


def test_cli_and_mcp_search_show_file_and_anchor(home, tmp_path):
    repo = tmp_path / "repo"
    make_repo(repo, {"gotchas.md": GOTCHAS, "architecture/auth.md": AUTH})
    assert cli(home, "index", "--project", str(repo)).returncode == 0
    shown = cli(home, "search", "JWT token validation", "--project", str(repo), "--limit", "2")
    first = shown.stdout.splitlines()[0]
    assert first.startswith("1. [") and "architecture/auth.md#token-validation" in first
    with running_server(home, repo) as server:
        answer = server.call("memory_search", {"query": "how is a JWT token validated"})
        assert not answer.is_error
        assert "architecture/auth.md#token-validation" in answer.text
        memory_id = answer.text.split("[1] ", 1)[1].split()[0]
        full = server.call("memory_get", {"ids": [memory_id]})
        assert "knowledge architecture/auth.md#token-validation" in full.text
        assert "RS256 public key" in full.text


def test_rebuilding_from_markdown_gives_the_same_results(tmp_path, embedder, monkeypatch):
    """NF5: delete the store, index again, and every search returns the same entries with the same scores."""
    repo = tmp_path / "repo"
    make_repo(repo, {"gotchas.md": GOTCHAS, "architecture/auth.md": AUTH})
    from ccmemory import db as database

    def build(home: Path) -> list[list[tuple[str, str, float]]]:
        monkeypatch.setenv("CCMEMORY_HOME", str(home))
        db = database.connect(vectors=True)
        project = projects.project_id(db, repo)
        indexer.index(db, project, project_settings.load(str(repo)))
        embeddings.embed_pending(db, embedder)
        results = []
        for query in ("token validation", "server clock for scheduled jobs", "UTC", "refresh rotation"):
            hits = search.search(db, query, project_id=project, embedder=embedder, track=False)
            results.append([(h.memory.metadata["knowledge"]["file"], h.memory.content, round(h.score, 6))
                            for h in hits])
        db.close()
        return results

    assert build(tmp_path / "first") == build(tmp_path / "rebuilt")


def test_session_start_does_not_inject_knowledge_entries(db, tmp_path):
    repo = tmp_path / "repo"
    make_repo(repo, {"gotchas.md": GOTCHAS})
    project = projects.project_id(db, repo)
    indexer.index(db, project, project_settings.load(str(repo)))
    memories.add(db, project_id=project, content="We deploy with make release", importance=0.9)
    text = session_context.build(db, project, config=config.load())
    assert "make release" in text and "UTC" not in text


def test_a_fresh_clone_gets_the_memories_and_the_knowledge(tmp_path):
    """NF4: the export file is committed with the markdown; a clone imports it and re-indexes, without duplicates."""
    origin = tmp_path / "origin"
    make_repo(origin, {"gotchas.md": GOTCHAS})
    shutil.rmtree(origin / ".git")
    subprocess.run(["git", "init", "-q"], cwd=origin, check=True)
    first_home = tmp_path / "first-home"
    assert cli(first_home, "index", "--project", str(origin)).returncode == 0
    assert cli(first_home, "add", "Deploys go through the staging cluster first", "--project", str(origin)).returncode == 0
    exported = cli(first_home, "export", "--project", str(origin), "-o", str(origin / ".claude" / "memories.jsonl"))
    assert exported.returncode == 0, exported.stderr
    subprocess.run(["git", "add", "-A"], cwd=origin, check=True)
    subprocess.run(["git", "commit", "-qm", "memory"], cwd=origin, check=True, env=isolated_env(None))
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(origin), str(clone)], check=True)

    second_home = tmp_path / "second-home"
    imported = cli(second_home, "import", str(clone / ".claude" / "memories.jsonl"), "--into-project", str(clone))
    assert imported.returncode == 0, imported.stderr
    assert cli(second_home, "index", "--project", str(clone)).returncode == 0
    found = json.loads(cli(second_home, "search", "staging cluster deploys", "--json", "--mode", "keyword",
                           "--project", str(clone)).stdout)
    assert found[0]["memory"]["content"] == "Deploys go through the staging cluster first"
    listed = json.loads(cli(second_home, "list", "--json", "--project", str(clone)).stdout)
    knowledge_entries = [m for m in listed if m["source"] == "knowledge"]
    assert sorted(m["metadata"]["knowledge"]["anchor"] for m in knowledge_entries) == [
        "cron-runs-in-server-time", "dates-are-stored-in-utc"]
