"""`ccmemory init` and its git pre-commit hook on fixture repositories (seed 001: F5.1, F6, F4.1, F4.2),
the hook exercised by real `git commit`s."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from ccmemory.knowledge import sections
from testing.cli import on_terminal
from testing.cli import spawn as ccmemory
from testing.env import isolated_env
from testing.knowledge import git

SKILLS = ("memory-discover", "memory-query", "memory-save")
CREATED = [
    ".claude/knowledge/architecture/.gitkeep", ".claude/knowledge/components/.gitkeep",
    ".claude/knowledge/domain/.gitkeep", ".claude/knowledge/gotchas.md", ".claude/knowledge/patterns/.gitkeep",
    *[f".claude/skills/{name}/SKILL.md" for name in SKILLS], ".claude/memory/.gitignore", ".claude/settings.json",
]


def git_repo(path: Path, home: Path) -> Path:
    path.mkdir(parents=True)
    assert git(home, path, "init", "-q").returncode == 0
    (path / "src").mkdir()
    (path / "src" / "index.ts").write_text("export function greet(name: string): string { return name }\n")
    (path / "package.json").write_text(json.dumps({"name": "demo-app", "main": "src/index.ts"}))
    return path


def knowledge_rows(home: Path) -> list[dict]:
    from ccmemory import db as database

    db = database.connect(home / "ccmemory.db")
    try:
        return db.rows("SELECT content, metadata FROM memories WHERE source = 'knowledge' AND is_deleted = 0")
    finally:
        db.close()


def test_init_creates_the_tree_skills_hook_analysis_and_checklist(home, tmp_path):
    repo = git_repo(tmp_path / "repo", home)
    done = ccmemory(home, repo, "init")
    assert done.returncode == 0, done.stderr
    for path in CREATED:
        assert (repo / path).is_file(), path
        assert f"[x] {path}" in done.stdout
    assert "Installed git pre-commit hook: .git/hooks/pre-commit" in done.stdout
    hook = repo / ".git" / "hooks" / "pre-commit"
    assert os.access(hook, os.X_OK) and "ccmemory git-hook pre-commit || true" in hook.read_text()
    # the quick analysis and the checklist
    assert "Project: demo-app" in done.stdout and "TypeScript (50%)" in done.stdout
    assert "Entry points: src/index.ts" in done.stdout and "Next steps:" in done.stdout
    assert "ccmemory index" in done.stdout
    cache = json.loads((repo / ".claude" / "memory" / "meta.json").read_text())
    assert cache["structure"]["entry_points"] == ["src/index.ts"]
    assert json.loads((repo / ".claude" / "settings.json").read_text())["enabledPlugins"] == {"ccmemory@ccmemory": True}


def test_templates_gotchas_shows_the_format_and_skills_have_valid_frontmatter(home, tmp_path):
    repo = git_repo(tmp_path / "repo", home)
    assert ccmemory(home, repo, "init").returncode == 0
    gotchas = (repo / ".claude" / "knowledge" / "gotchas.md").read_text()
    assert "vector-index: false" in gotchas and "keywords:" in gotchas and "### " in gotchas
    parsed = sections.parse(gotchas, "gotchas.md", fits=lambda text: len(text) < 2000)
    # the format and its example are shown inside a comment: nothing of it is indexed as the project's knowledge
    assert parsed.indexed and parsed.warnings == [] and parsed.entries == []
    for name in SKILLS:
        text = (repo / ".claude" / "skills" / name / "SKILL.md").read_text()
        match = re.match(r"^---\n(.*?)\n---\n(.+)$", text, re.S)
        assert match, name
        fields = dict(line.split(": ", 1) for line in match.group(1).splitlines())
        assert set(fields) == {"name", "description"} and fields["name"] == name
        assert 50 < len(fields["description"]) < 1024 and ": " not in fields["description"]
        assert "mcp__plugin_ccmemory_memory__memory_" in match.group(2)
    assert "memory_search" in (repo / ".claude/skills/memory-query/SKILL.md").read_text()
    assert "memory_add" in (repo / ".claude/skills/memory-save/SKILL.md").read_text()
    assert "ccmemory discover" in (repo / ".claude/skills/memory-discover/SKILL.md").read_text()


def test_init_never_overwrites(home, tmp_path):
    repo = git_repo(tmp_path / "repo", home)
    mine = repo / ".claude" / "knowledge" / "gotchas.md"
    mine.parent.mkdir(parents=True)
    mine.write_text("# My own gotchas\n")
    done = ccmemory(home, repo, "init")  # no terminal: merges without asking
    assert done.returncode == 0
    assert "Existing .claude found: adding only the files it does not have yet." in done.stdout
    assert "Skipping existing: .claude/knowledge/gotchas.md" in done.stdout
    assert mine.read_text() == "# My own gotchas\n"
    again = ccmemory(home, repo, "init")
    assert again.returncode == 0 and "Created: nothing" in again.stdout
    for path in CREATED:
        assert f"Skipping existing: {path}" in again.stdout
    assert "Skipping existing: .git/hooks/pre-commit (already runs ccmemory)" in again.stdout
    assert (repo / ".git/hooks/pre-commit").read_text().count("git-hook pre-commit || true") == 2  # one block, two lines


def _init_on_terminal(home: Path, repo: Path, answer: str) -> str:
    """Run `ccmemory init` with a pseudo-terminal as stdin/stdout and type ``answer`` at its prompt."""
    code, output = on_terminal(home, repo, "init", answer=answer, wait_for=b"Merge templates? (y/N)")
    assert code == 0, output
    return output


def test_existing_claude_folder_asks_to_merge_only_on_a_terminal(home, tmp_path):
    repo = git_repo(tmp_path / "repo", home)
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.local.json").write_text("{}")
    declined = _init_on_terminal(home, repo, "n")
    assert "Existing .claude found. Merge templates? (y/N)" in declined and "Nothing changed." in declined
    assert not (repo / ".claude" / "knowledge").exists()
    accepted = _init_on_terminal(home, repo, "y")
    assert "[x] .claude/knowledge/gotchas.md" in accepted
    assert (repo / ".claude" / "settings.local.json").read_text() == "{}"


def test_outside_a_git_repository_it_warns_and_continues(home, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    done = ccmemory(home, plain, "init")
    assert done.returncode == 0
    assert "Not a git repo. Git hooks will not be installed." in done.stderr
    assert (plain / ".claude" / "knowledge" / "gotchas.md").is_file()


def test_a_read_only_project_fails_with_a_clear_message(home, tmp_path):
    if os.geteuid() == 0:
        target = Path("/sys/kernel")  # not writable even by root
    else:
        target = tmp_path / "readonly"
        target.mkdir()
        os.chmod(target, 0o555)
    done = ccmemory(home, tmp_path, "init", "--no-hook", "--project", str(target))
    assert done.returncode == 1
    assert re.search(r"Cannot write to \S+: Permission denied", done.stderr), done.stderr


def test_a_full_disk_fails_fast(home, tmp_path):
    small = tmp_path / "small"
    small.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs", str(small)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tiny tmpfs here ({mounted.stderr.decode().strip()})")
    try:
        (small / "filler").write_bytes(b"x" * 4096)
        done = ccmemory(home, tmp_path, "init", "--no-hook", "--project", str(small))
        assert done.returncode == 1 and "Insufficient disk space" in done.stderr
    finally:
        subprocess.run(["umount", str(small)], check=False)


def test_pre_commit_hook_indexes_changed_knowledge_and_never_blocks(home, tmp_path):
    repo = git_repo(tmp_path / "repo", home)
    assert ccmemory(home, repo, "init").returncode == 0
    (repo / ".claude" / "knowledge" / "architecture" / "auth.md").write_text(
        "# Auth\n## Tokens\n### Token validation\nJWT tokens are checked by the auth middleware.\n")
    git(home, repo, "add", "-A")
    committed = git(home, repo, "commit", "-m", "knowledge")
    assert committed.returncode == 0, committed.stderr
    assert "ccmemory: Indexed 2 file(s)" in committed.stderr  # the hook's output, in the terminal
    refs = {json.loads(row["metadata"])["knowledge"]["file"] for row in knowledge_rows(home)}
    assert refs == {"architecture/auth.md"}  # the unedited gotchas.md template is not the project's knowledge

    # a commit that changes no knowledge returns at once: nothing is indexed
    (repo / "src" / "util.ts").write_text("export const x = 1\n")
    git(home, repo, "add", "-A")
    quiet = git(home, repo, "commit", "-m", "code only")
    assert quiet.returncode == 0 and "Indexed" not in quiet.stderr

    # indexing fails (the data directory is a file): warning, errors.log, and the commit still happens
    broken_home = tmp_path / "not-a-dir"
    broken_home.write_text("")
    (repo / ".claude" / "knowledge" / "gotchas.md").write_text("### Changed\ntext\n")
    git(home, repo, "add", "-A")
    failing = subprocess.run(["git", "commit", "-m", "still commits"], cwd=repo, capture_output=True, text=True,
                             env={**isolated_env(home), "CCMEMORY_HOME": str(broken_home)}, timeout=300)
    assert failing.returncode == 0, failing.stderr
    assert "knowledge indexing failed" in failing.stderr and "The commit goes on" in failing.stderr
    log = (repo / ".claude" / "memory" / "errors.log").read_text()
    assert "pre-commit:" in log and "Traceback" in log
    assert "still commits" in git(home, repo, "log", "--oneline").stdout
    assert git(home, repo, "status", "--porcelain").stdout.strip() == ""  # errors.log is ignored by git


def test_hook_is_added_to_an_existing_hook_which_keeps_working(home, tmp_path):
    repo = git_repo(tmp_path / "repo", home)
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho theirs >> \"$(git rev-parse --show-toplevel)/theirs.log\"\nexit 0\n")
    hook.chmod(0o755)
    done = ccmemory(home, repo, "init")
    assert "Added ccmemory to the existing git pre-commit hook: .git/hooks/pre-commit" in done.stdout
    text = hook.read_text()
    assert text.startswith("#!/bin/sh\n# >>> ccmemory") and "echo theirs" in text and text.endswith("exit 0\n")
    (repo / ".gitignore").write_text("theirs.log\n")
    gotchas = repo / ".claude" / "knowledge" / "gotchas.md"
    gotchas.write_text(gotchas.read_text() + "\n### Invoices round half-even\nTotals use banker's rounding.\n")
    git(home, repo, "add", "-A")
    committed = git(home, repo, "commit", "-m", "both hooks")
    assert committed.returncode == 0 and "ccmemory: Indexed 1 file(s)" in committed.stderr
    assert (repo / "theirs.log").read_text() == "theirs\n"
    assert knowledge_rows(home)


def test_a_hook_in_another_language_is_left_alone(home, tmp_path):
    repo = git_repo(tmp_path / "repo", home)
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/usr/bin/env python3\nprint('mine')\n")
    done = ccmemory(home, repo, "init")
    assert done.returncode == 0 and "is not a shell script, so it was left alone" in done.stderr
    assert hook.read_text() == "#!/usr/bin/env python3\nprint('mine')\n"


def test_concurrent_runs_are_kept_apart_by_the_lock(home, tmp_path):
    from ccmemory import locks
    from ccmemory.knowledge import githook, settings as project_settings

    repo = git_repo(tmp_path / "repo", home)
    assert ccmemory(home, repo, "init").returncode == 0
    git(home, repo, "add", "-A")
    settings = project_settings.load(str(repo))
    said: list[str] = []
    ran: list[int] = []
    with locks.held(os.path.join(settings.memory_dir, "index.lock")):
        assert githook.run_pre_commit(settings, lambda: ran.append(1) or [], said.append) == 0
    assert ran == [] and "is busy; skipped this time" in said[-1]
    assert githook.run_pre_commit(settings, lambda: ran.append(1) or [], said.append) == 0
    assert ran == [1]


def test_source_changes_refresh_the_structure_cache_and_flag_big_changes(home, tmp_path):
    repo = git_repo(tmp_path / "repo", home)
    assert ccmemory(home, repo, "init").returncode == 0
    git(home, repo, "add", "-A")
    assert git(home, repo, "commit", "-m", "setup").returncode == 0
    cache = repo / ".claude" / "memory" / "meta.json"
    (repo / "src" / "helpers.ts").write_text("export const helper = 1\n")
    git(home, repo, "add", "-A")
    small = git(home, repo, "commit", "-m", "small change")
    assert small.returncode == 0 and "Significant changes" not in small.stderr
    assert json.loads(cache.read_text())["structure"]["files"] == 3
    (repo / "server").mkdir()
    (repo / "server" / "main.go").write_text("package main\nfunc main() {}\n")
    git(home, repo, "add", "-A")
    big = git(home, repo, "commit", "-m", "a new entry point")
    assert big.returncode == 0
    assert "Significant changes detected. Run 'ccmemory discover' for full analysis" in big.stderr
    assert "server/main.go" in json.loads(cache.read_text())["structure"]["entry_points"]


def test_without_git_installed_init_warns_and_continues(home, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    empty_path = tmp_path / "no-tools"
    empty_path.mkdir()
    done = ccmemory(home, project, "init", PATH=str(empty_path))
    assert done.returncode == 0, done.stderr
    assert "Git is not installed. Git hooks will not be installed." in done.stderr
    assert (project / ".claude" / "knowledge" / "gotchas.md").is_file()
