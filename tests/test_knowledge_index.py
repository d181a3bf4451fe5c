"""`ccmemory index` on fixture repositories (seed 001, F2 and F5.2): files, edge cases, incremental runs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ccmemory import memories, projects
from ccmemory.knowledge import files, indexer, settings as project_settings
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
