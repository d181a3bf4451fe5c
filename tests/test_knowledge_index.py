"""`ccmemory index` on fixture repositories (seed 001, F2 and F5.2): files, edge cases, incremental runs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ccmemory import config, memories, projects
from ccmemory.knowledge import files, indexer, sections, settings as project_settings
from testing.cli import invoke
from testing.knowledge import AUTH, GOTCHAS, make_repo

def run_index(db, repo: Path, **options):
    project = projects.project_id(db, repo)
    return indexer.index(db, project, project_settings.load(str(repo)), **options), project


def knowledge_entries(db, project: int) -> list[memories.Memory]:
    return [m for m in memories.list_memories(db, project_id=project, limit=1000) if m.source == "knowledge"]


def refs(entries) -> list[str]:
    return sorted(f"{m.metadata['knowledge']['file']}#{m.metadata['knowledge']['anchor']}" for m in entries)


def test_finds_markdown_recursively_except_underscore_files(db, tmp_path):
    repo = tmp_path / "repo"
    make_repo(repo, {"gotchas.md": GOTCHAS, "architecture/auth.md": AUTH, "architecture/_draft.md": AUTH,
                     "_template.md": GOTCHAS, "notes.txt": "not markdown", "deep/a/b/c.md": "# Deep\nsome text"})
    report, project = run_index(db, repo)
    assert [o.path for o in report.outcomes] == ["architecture/auth.md", "deep/a/b/c.md", "gotchas.md"]
    assert report.exit_code == 0
    found = knowledge_entries(db, project)
    assert refs(found) == ["architecture/auth.md#refresh", "architecture/auth.md#token-validation",
                           "deep/a/b/c.md#", "gotchas.md#cron-runs-in-server-time", "gotchas.md#dates-are-stored-in-utc"]
    utc = next(m for m in found if m.metadata["knowledge"]["anchor"] == "dates-are-stored-in-utc")
    assert utc.tags == ["time", "utc"] and utc.metadata["knowledge"]["keywords"] == ["time", "utc"]
    assert utc.category == "gotcha" and utc.tier == "project"
    assert next(m for m in found if "auth.md" in m.metadata["knowledge"]["file"]).category == "architecture"
    assert all(m.metadata["knowledge"]["keywords"] == [] for m in found if "auth.md" in m.metadata["knowledge"]["file"])


def test_missing_knowledge_directory_is_an_error_naming_init(db, tmp_path):
    repo = tmp_path / "bare"
    (repo / ".git").mkdir(parents=True)
    with pytest.raises(indexer.KnowledgeDirMissing, match=r"Knowledge directory not found.*Run 'ccmemory init' first"):
        run_index(db, repo)


def test_incremental_skips_unchanged_and_replaces_a_changed_files_entries(db, tmp_path):
    repo = tmp_path / "repo"
    knowledge = make_repo(repo, {"gotchas.md": GOTCHAS, "architecture/auth.md": AUTH})
    first, project = run_index(db, repo)
    assert first.count("indexed") == 2 and first.entries_created == 4
    second, _ = run_index(db, repo)
    assert second.count("indexed") == 0 and second.count("unchanged") == 2
    assert "Skipping unchanged: gotchas.md" in [o.note for o in second.outcomes]
    before = {m.id for m in knowledge_entries(db, project)}
    old_hash = db.scalar("SELECT content_hash FROM knowledge_files WHERE path = 'gotchas.md'")

    (knowledge / "gotchas.md").write_text(GOTCHAS.replace("### Cron runs in server time\nThe scheduler uses the "
                                                          "server's local clock.\n", ""), encoding="utf-8")
    third, _ = run_index(db, repo)
    assert [o.path for o in third.outcomes if o.action == "indexed"] == ["gotchas.md"]
    assert third.entries_removed == 2 and third.entries_created == 1
    after = knowledge_entries(db, project)
    assert refs(after) == ["architecture/auth.md#refresh", "architecture/auth.md#token-validation",
                           "gotchas.md#dates-are-stored-in-utc"]
    auth_ids = {m.id for m in after if m.metadata["knowledge"]["file"] == "architecture/auth.md"}
    assert auth_ids <= before  # the unchanged file's entries were not touched
    assert db.scalar("SELECT content_hash FROM knowledge_files WHERE path = 'gotchas.md'") != old_hash  # updated
    settled, _ = run_index(db, repo)
    assert settled.count("indexed") == 0 and "Skipping unchanged: gotchas.md" in [o.note for o in settled.outcomes]

    (knowledge / "architecture" / "auth.md").unlink()
    fourth, _ = run_index(db, repo)
    assert [(o.path, o.action) for o in fourth.outcomes if o.action == "removed"] == [("architecture/auth.md", "removed")]
    assert refs(knowledge_entries(db, project)) == ["gotchas.md#dates-are-stored-in-utc"]
    assert db.scalar("SELECT COUNT(*) FROM knowledge_files") == 1


def test_force_reindexes_every_file(db, tmp_path):
    repo = tmp_path / "repo"
    make_repo(repo, {"gotchas.md": GOTCHAS, "architecture/auth.md": AUTH})
    _, project = run_index(db, repo)
    old_ids = {m.id for m in knowledge_entries(db, project)}
    forced, _ = run_index(db, repo, force=True)
    assert forced.count("indexed") == 2 and forced.count("unchanged") == 0
    new = knowledge_entries(db, project)
    assert len(new) == 4 and not old_ids & {m.id for m in new}


def test_lost_index_state_means_a_full_reindex(db, tmp_path):
    """The seed's corrupted meta.json: here the knowledge_files rows, or entries deleted behind the index's back."""
    repo = tmp_path / "repo"
    make_repo(repo, {"gotchas.md": GOTCHAS, "architecture/auth.md": AUTH})
    _, project = run_index(db, repo)
    with db.transaction():
        db.execute("DELETE FROM knowledge_files")
    again, _ = run_index(db, repo)
    assert again.count("indexed") == 2 and len(knowledge_entries(db, project)) == 4
    with db.transaction():  # a garbled stored hash: that file is indexed again, the other skipped
        db.execute("UPDATE knowledge_files SET content_hash = 'not-a-hash' WHERE path = 'gotchas.md'")
    garbled, _ = run_index(db, repo)
    assert [o.path for o in garbled.outcomes if o.action == "indexed"] == ["gotchas.md"]
    assert len(knowledge_entries(db, project)) == 4
    victim = knowledge_entries(db, project)[0]
    memories.delete(db, victim.id, project_id=project, hard=True)
    healed, _ = run_index(db, repo)
    assert [o.path for o in healed.outcomes if o.action == "indexed"] == [victim.metadata["knowledge"]["file"]]
    assert len(knowledge_entries(db, project)) == 4


def test_dry_run_writes_nothing(db, tmp_path):
    repo = tmp_path / "repo"
    make_repo(repo, {"gotchas.md": GOTCHAS, "architecture/auth.md": AUTH})
    report, project = run_index(db, repo, dry_run=True)
    assert report.count("indexed") == 2 and report.entries_created == 4
    assert knowledge_entries(db, project) == [] and db.scalar("SELECT COUNT(*) FROM knowledge_files") == 0


def test_vector_index_false_skips_and_removes_a_file(db, tmp_path):
    repo = tmp_path / "repo"
    knowledge = make_repo(repo, {"gotchas.md": GOTCHAS, "private.md": "### Secret plan\nnot for search\n"})
    _, project = run_index(db, repo)
    assert "private.md#secret-plan" in refs(knowledge_entries(db, project))
    (knowledge / "private.md").write_text("<!-- vector-index: false -->\n### Secret plan\nnot for search\n")
    report, _ = run_index(db, repo)
    assert ("private.md", "skipped") in [(o.path, o.action) for o in report.outcomes]
    assert not any("private.md" in ref for ref in refs(knowledge_entries(db, project)))
    malformed = make_repo(repo, {"odd.md": "<!-- vector-index: maybe -->\n### Odd\ntext\n"})
    assert malformed.exists()
    report, _ = run_index(db, repo)
    assert any("maybe" in warning for warning in report.warnings) and report.exit_code == 2
    assert "odd.md#odd" in refs(knowledge_entries(db, project))


def test_edge_case_files(db, tmp_path):
    """Empty, binary, > 1 MB, non-UTF-8, circular symlinks: each handled, the rest indexed."""
    big_section = "### Big\n" + ("A long line of prose about the system. " * 40 + "\n\n") * 700
    assert len(big_section.encode()) > 1024 * 1024
    repo = tmp_path / "repo"
    knowledge = make_repo(repo, {
        "good.md": GOTCHAS,
        "empty.md": "",
        "blank.md": "  \n\n",
        "binary.md": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        "big.md": big_section,
        "latin.md": "### Caf\xe9\nCr\xe8me br\xfbl\xe9e recipe.\n".encode("cp1252"),
    })
    (knowledge / "loop").mkdir()
    (knowledge / "loop" / "inner.md").write_text("### Inner\ntext\n")
    os.symlink("..", knowledge / "loop" / "back")  # loop/back -> knowledge: a cycle
    os.symlink("self.md", knowledge / "self.md")  # a link to itself
    report, project = run_index(db, repo)
    warnings = "\n".join(report.warnings)
    assert "Empty file: empty.md" in warnings and "Empty file: blank.md" in warnings
    assert "Binary file skipped: binary.md" in warnings
    assert "Large file" in warnings and "big.md" in warnings and "consider splitting" in warnings
    assert "Not UTF-8: latin.md" in warnings
    assert "Circular symlink skipped: loop/back" in warnings
    assert "self.md" in warnings
    assert report.exit_code == 2
    found = refs(knowledge_entries(db, project))
    assert "latin.md#café" in found and "loop/inner.md#inner" in found
    assert any(ref.startswith("big.md#big") for ref in found)
    latin = next(m for m in knowledge_entries(db, project) if m.metadata["knowledge"]["file"] == "latin.md")
    assert "Crème brûlée" in latin.content
    assert not any(ref.startswith(("empty.md", "binary.md", "blank.md")) for ref in found)


def _deny(monkeypatch: pytest.MonkeyPatch, *denied: Path) -> None:
    """Make ``denied`` unreadable: chmod 000, plus, as root (whom permission bits do not stop), the
    PermissionError the operating system gives everyone else."""
    for path in denied:
        os.chmod(path, 0)
    if os.geteuid() != 0:
        return
    blocked = {str(path) for path in denied}
    real_open, real_scandir = os.open, os.scandir

    def guarded_open(path, *args, **kwargs):  # files are read through safe_files, which uses os.open
        if str(path) in blocked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    def guarded_scandir(path="."):
        if str(path) in blocked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(files.os, "open", guarded_open)
    monkeypatch.setattr(files.os, "scandir", guarded_scandir)


def test_permission_denied_is_logged_and_the_rest_indexed(db, tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    knowledge = make_repo(repo, {"good.md": GOTCHAS, "locked.md": AUTH, "closed/inner.md": AUTH})
    first, project = run_index(db, repo)
    assert first.entries_created == 6
    (knowledge / "good.md").write_text(GOTCHAS + "\n### More\nmore text\n")
    _deny(monkeypatch, knowledge / "locked.md", knowledge / "closed")
    try:
        report, _ = run_index(db, repo)
    finally:
        os.chmod(knowledge / "locked.md", 0o644)
        os.chmod(knowledge / "closed", 0o755)
    assert "Permission denied: locked.md (not indexed; check the file's permissions)" in report.errors
    assert any(error.startswith("Permission denied: closed/") for error in report.errors)
    assert report.count("indexed") == 1 and report.exit_code == 2
    # entries of files that could not be read this time are kept, not thrown away
    assert {"closed/inner.md#token-validation", "locked.md#token-validation"} <= set(refs(knowledge_entries(db, project)))


def test_project_config_is_respected(db, tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "docs" / "kb" / "skipme").mkdir(parents=True)
    (repo / "docs" / "kb" / "a.md").write_text("### Alpha\n" + "Sentence number one is here. " * 40)
    (repo / "docs" / "kb" / "skipme" / "b.md").write_text("### Beta\ntext\n")
    (repo / ".claude").mkdir()
    (repo / ".claude" / "memory.config.json").write_text(json.dumps(
        {"knowledge_dir": "docs/kb", "chunk_size": 300, "ignored_dirs": ["skipme"], "vectors_dir": "x"}))
    report, project = run_index(db, repo)
    assert [o.path for o in report.outcomes] == ["a.md"]
    entries = knowledge_entries(db, project)
    assert len(entries) > 3 and all(len(m.content) < 300 for m in entries)
    assert any("vectors_dir is not used" in warning for warning in report.warnings)


def test_broken_project_config_falls_back_to_defaults(tmp_path):
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "memory.config.json").write_text("{not json")
    loaded = project_settings.load(str(tmp_path))
    assert loaded.knowledge_dir == str(tmp_path / ".claude" / "knowledge") and loaded.chunk_size == 2000
    assert "could not be read" in loaded.problems[0]
    (tmp_path / ".claude" / "memory.config.json").write_text(json.dumps({"chunk_size": "big", "colour": 1}))
    loaded = project_settings.load(str(tmp_path))
    assert loaded.chunk_size == 2000 and len(loaded.problems) == 2
    assert project_settings.model_mismatch(project_settings.ProjectSettings(
        root="/r", knowledge_dir="/r/k", model="all-MiniLM-L6-v2"), "sentence-transformers/all-MiniLM-L6-v2") is None
    assert "asks for model" in project_settings.model_mismatch(project_settings.ProjectSettings(
        root="/r", knowledge_dir="/r/k", model="bge-large"), "sentence-transformers/all-MiniLM-L6-v2")


# --- caps: a repository decides how many sections its knowledge has (red team, hole B) -------------------------------

def flood(count: int) -> str:
    """``count`` one-line sections: the red team's flood had 442,727 of them in 5 MB (517 s and 405 MB to index)."""
    return "".join(f"### s{number}\nw{number} x\n" for number in range(count))


def entries_by_file(db, project: int) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in db.rows("SELECT json_extract(metadata, '$.knowledge.file') AS file FROM memories "
                       "WHERE project_id = ? AND source = 'knowledge' AND is_deleted = 0", (project,)):
        counts[row["file"]] = counts.get(row["file"], 0) + 1
    return counts


def test_a_flood_file_gives_its_first_entries_only_and_is_read_no_further(db, tmp_path, monkeypatch):
    monkeypatch.setattr(indexer, "MAX_FILE_ENTRIES", 50)
    blocks = []

    class CountedBlock(sections._Block):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)
            blocks.append(self)

    monkeypatch.setattr(sections, "_Block", CountedBlock)
    repo = tmp_path / "repo"
    make_repo(repo, {"flood.md": flood(5_000), "gotchas.md": GOTCHAS})
    report, project = run_index(db, repo)
    assert entries_by_file(db, project) == {"flood.md": 50, "gotchas.md": 2}
    assert "flood.md#s49" in refs(knowledge_entries(db, project)) and report.entries_created == 52
    assert [warning for warning in report.warnings if warning.startswith("flood.md")] == [
        "flood.md: more than 50 entries (sections, and the parts of long ones); only its first 50 entries are indexed, "
        "the most one file gives. Split it into smaller files, or mark a generated one <!-- vector-index: false -->"]
    assert report.exit_code == 2
    assert 50 < len(blocks) < 60  # the flood was read to its 51st section, not to its 5,000th
    again, _ = run_index(db, repo)
    assert again.count("unchanged") == 2 and again.entries_created == 0 and again.exit_code == 0


def test_the_projects_entries_are_capped_across_its_files(db, tmp_path, monkeypatch):
    monkeypatch.setattr(indexer, "MAX_PROJECT_ENTRIES", 80)
    repo = tmp_path / "repo"
    knowledge = make_repo(repo, {"a.md": flood(50), "b.md": flood(50), "c.md": flood(10)})
    report, project = run_index(db, repo)
    assert entries_by_file(db, project) == {"a.md": 50, "b.md": 30}
    assert any(warning.startswith("b.md: only its first 30 entries are indexed: a project's knowledge holds at most 80 "
                                  "entries") for warning in report.warnings)
    assert any(warning.startswith("c.md: not indexed: a project's knowledge holds at most 80") for warning in report.warnings)
    assert [o.action for o in report.outcomes] == ["indexed", "indexed", "skipped"]
    (knowledge / "a.md").write_text(flood(10))  # room again: the file never recorded is taken by the next run
    again, _ = run_index(db, repo)
    assert entries_by_file(db, project) == {"a.md": 10, "b.md": 30, "c.md": 10}


def test_knowledge_text_counts_against_the_projects_storage_budget(db, tmp_path):
    config.write_file_settings({"storage": {"project_budget_mb": 1}})  # knowledge text may fill a fifth: 200 KB
    section = "The queue worker retries failed jobs with exponential backoff. " * 16
    repo = tmp_path / "repo"
    make_repo(repo, {"big.md": "".join(f"### Topic {number}\n{section}\n" for number in range(400))})
    report, project = run_index(db, repo)
    stored = sum(len(m.content.encode()) for m in knowledge_entries(db, project))
    assert indexer.max_project_bytes() == 200_000 and 150_000 < stored <= 200_000
    assert any(warning.startswith("big.md: only its first ") and "may fill 0.2 MB, 20% of its storage budget "
               "(storage.project_budget_mb)" in warning for warning in report.warnings)


def test_a_run_with_max_new_entries_leaves_a_bigger_file_as_it_was_for_a_full_run(db, tmp_path):
    """The git hook's run: a changed file with more entries than the run may create is deferred, its old entries kept."""
    repo = tmp_path / "repo"
    knowledge = make_repo(repo, {"notes.md": flood(5)})
    run_index(db, repo)
    (knowledge / "notes.md").write_text(flood(300))
    (knowledge / "gotchas.md").write_text(GOTCHAS)
    report, project = run_index(db, repo, max_new_entries=100)
    assert {o.path: o.action for o in report.outcomes} == {"gotchas.md": "indexed", "notes.md": "deferred"}
    assert entries_by_file(db, project) == {"gotchas.md": 2, "notes.md": 5}
    assert any(warning.startswith("notes.md: not indexed this time: it has more than the 98 entries this run may "
                                  "still create") and warning.endswith("Run `ccmemory index` to index it")
               for warning in report.warnings)
    assert "1 left for `ccmemory index`" in report.summary()
    full, _ = run_index(db, repo)
    assert full.count("indexed") == 1 and entries_by_file(db, project) == {"gotchas.md": 2, "notes.md": 300}


def test_ccmemory_index_reports_a_capped_file_and_exits_2(home, tmp_path, monkeypatch):
    monkeypatch.setattr(indexer, "MAX_FILE_ENTRIES", 200)
    repo = tmp_path / "repo"
    make_repo(repo, {"flood.md": flood(2_000)})
    done = invoke(home, repo, "index")
    assert done.returncode == 2, done.stderr
    assert "Warning: flood.md: more than 200 entries" in done.stderr and "Split it into smaller files" in done.stderr
    assert "200 entries created" in done.stdout

