"""Acceptance criteria of seed 001 that had no test: F2.5 (an embedding failure during `ccmemory index`),
F5.5 (`ccmemory add` through $EDITOR, an invalid category), F6 (a corrupted template is logged and
skipped) and NF6 (a custom `knowledge_dir` in `.claude/memory.config.json` honoured by init, index, the
git hook, discover and promote).

Everything runs the real CLI in a subprocess on fixture repositories in temp directories; F6 runs it
from a copy of the installed package whose template was damaged, as a broken install would be.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ccmemory import db as database
from testing.cli import on_terminal, spawn
from testing.cli import spawn as ccmemory
from testing.env import isolated_env
from testing.knowledge import AUTH, git, GOTCHAS, make_repo, write_files
from testing.models import tiny_model


def rows(home: Path, sql: str) -> list[dict]:
    db = database.connect(home / "ccmemory.db")
    try:
        return db.rows(sql)
    finally:
        db.close()


def knowledge_refs(home: Path) -> list[str]:
    found = []
    for row in rows(home, "SELECT metadata FROM memories WHERE source = 'knowledge' AND is_deleted = 0"):
        info = json.loads(row["metadata"])["knowledge"]
        found.append(f"{info['file']}#{info['anchor']}")
    return sorted(found)


# --- F2.5: an embedding failure is logged and the rest continues ---------------------------------------------

def broken_model_home(tmp_path: Path) -> tuple[Path, Path]:
    """A CCMEMORY_HOME whose config.json names a local model folder that does not exist."""
    home = tmp_path / "home"
    home.mkdir()
    missing = tmp_path / "no-such-model"
    (home / "config.json").write_text(json.dumps({"embedding": {"path": str(missing)}}))
    return home, missing


def test_index_with_a_model_that_cannot_load_stores_every_entry_and_exits_2(tmp_path):
    home, missing = broken_model_home(tmp_path)
    repo = tmp_path / "repo"
    make_repo(repo, {"gotchas.md": GOTCHAS, "architecture/auth.md": AUTH})
    done = ccmemory(home, repo, "index")
    # F5.2: 2 = warnings but completed; every section is stored, searchable by keywords until embedded
    assert done.returncode == 2, done.stderr
    assert "Indexed 2 file(s)" in done.stdout and "4 entries created" in done.stdout
    assert knowledge_refs(home) == ["architecture/auth.md#refresh", "architecture/auth.md#token-validation",
                                    "gotchas.md#cron-runs-in-server-time", "gotchas.md#dates-are-stored-in-utc"]
    assert rows(home, "SELECT COUNT(*) AS n FROM memories WHERE source = 'knowledge' AND needs_embedding = 1")[0]["n"] == 4
    warning = [line for line in done.stderr.splitlines() if line.startswith("Warning:")]
    assert len(warning) == 1, done.stderr
    assert "Entries stored without vectors" in warning[0] and "is not a folder" in warning[0]
    assert str(missing) in warning[0] and "ccmemory embed" in warning[0]
    keyword = ccmemory(home, repo, "search", "scheduler clock", "--mode", "keyword")
    assert keyword.returncode == 0 and "gotchas.md#cron-runs-in-server-time" in keyword.stdout

    # the pending entries are embedded by the next run once the model is fixed; nothing is indexed twice
    (home / "config.json").write_text("{}")
    again = ccmemory(home, repo, "index")
    assert again.returncode == 0, again.stderr
    assert "0 entries created" in again.stdout and len(knowledge_refs(home)) == 4
    fixed = ccmemory(home, repo, "embed")
    assert fixed.returncode == 0, fixed.stderr
    assert rows(home, "SELECT COUNT(*) AS n FROM memories WHERE source = 'knowledge' AND needs_embedding = 1")[0]["n"] == 0


def test_index_embedding_failure_warning_names_the_files_and_sections(tmp_path):
    home, _ = broken_model_home(tmp_path)
    repo = tmp_path / "repo"
    make_repo(repo, {"gotchas.md": GOTCHAS, "architecture/auth.md": AUTH})
    done = ccmemory(home, repo, "index")
    assert done.returncode == 2
    assert "architecture/auth.md" in done.stderr and "gotchas.md" in done.stderr
    assert "Token validation" in done.stderr and "Cron runs in server time" in done.stderr


def test_index_goes_on_past_a_section_the_model_fails_on_and_names_it(tmp_path):
    pytest.importorskip("onnx")
    home = tmp_path / "home"
    home.mkdir()
    model = tiny_model(tmp_path / "short-model", 8, max_positions=64)  # fails on texts over 64 tokens
    (home / "config.json").write_text(json.dumps({"embedding": {"path": str(model)}}))
    long_section = " ".join(["The billing job retries each failed invoice with exponential backoff."] * 12)
    repo = tmp_path / "repo"
    make_repo(repo, {"gotchas.md": GOTCHAS, "architecture/billing.md": f"# Billing\n### Retries\n{long_section}\n"})
    done = ccmemory(home, repo, "index")
    assert done.returncode == 2, done.stderr
    assert "Indexed 2 file(s)" in done.stdout and "3 entries created" in done.stdout
    warnings = [line for line in done.stderr.splitlines() if line.startswith("Warning:")]
    assert len(warnings) == 1, done.stderr
    assert "Could not embed architecture/billing.md section 'Retries'" in warnings[0]
    assert "ccmemory embed" in warnings[0]
    # the other file's sections were embedded; only the one the model cannot take waits
    pending = rows(home, "SELECT metadata FROM memories WHERE source = 'knowledge' AND needs_embedding = 1")
    assert [json.loads(row["metadata"])["knowledge"]["file"] for row in pending] == ["architecture/billing.md"]
    semantic = ccmemory(home, repo, "search", "scheduler clock", "--mode", "semantic", "--json")
    assert semantic.returncode == 0, semantic.stderr
    # `ccmemory embed` tries it again, says which item still fails, and exits 1
    again = ccmemory(home, repo, "embed")
    assert again.returncode == 1, again.stderr
    assert "Embedded 0 item(s)" in again.stdout
    assert "Warning: the model failed on memory" in again.stderr
    assert "1 item(s) could not be embedded" in again.stderr


# --- F5.5: `ccmemory add` without content opens $EDITOR ------------------------------------------------------

def editor(tmp_path: Path, text: str | None) -> Path:
    """A tiny $EDITOR: writes ``text`` into the file it is given (or leaves the file alone when None)."""
    script = tmp_path / "fake-editor.sh"
    if text is None:
        body = "#!/bin/sh\nexit 0\n"
    else:
        body = f"#!/bin/sh\nsleep 0.05\nprintf '%s\\n' '{text}' > \"$1\"\n"
    script.write_text(body)
    script.chmod(0o755)
    return script


def test_add_without_content_on_a_terminal_saves_what_the_editor_wrote(home, project_dir, tmp_path):
    script = editor(tmp_path, "Deploys go out on Tuesdays only")
    code, output = on_terminal(home, project_dir, "add", "--category", "domain", EDITOR=str(script), VISUAL="")
    assert code == 0, output
    assert "Memory created:" in output and "category: domain" in output
    saved = rows(home, "SELECT content, category FROM memories WHERE is_deleted = 0")
    assert saved == [{"content": "Deploys go out on Tuesdays only", "category": "domain"}]


def test_add_with_an_editor_that_writes_nothing_stores_nothing(home, project_dir, tmp_path):
    script = editor(tmp_path, None)
    code, output = on_terminal(home, project_dir, "add", EDITOR=str(script), VISUAL="")
    assert code == 2, output
    assert "Content is required" in output
    assert not (home / "ccmemory.db").exists() or rows(home, "SELECT id FROM memories") == []


def test_add_with_an_invalid_category_without_a_terminal_stores_it_as_general_and_lists_the_valid_ones(
        home, project_dir):
    from ccmemory.vocabulary import CATEGORIES

    done = ccmemory(home, project_dir, "add", "API uses JWT tokens", "--category", "nonsense")
    assert done.returncode == 0, done.stderr  # F5: no TTY skips the prompt and uses the default
    assert "unknown category 'nonsense'" in done.stderr and "stored as 'general'" in done.stderr
    assert all(category in done.stderr for category in CATEGORIES), done.stderr
    assert rows(home, "SELECT content, category FROM memories") == [{"content": "API uses JWT tokens",
                                                                    "category": "general"}]


def test_add_with_an_invalid_category_on_a_terminal_prompts_for_one(home, project_dir):
    code, output = on_terminal(home, project_dir, "add", "API uses JWT tokens", "--category", "nonsense",
                               answer="architecture", wait_for=b"Category")
    assert code == 0, output
    assert "Valid categories: architecture, component" in output
    assert rows(home, "SELECT category FROM memories") == [{"category": "architecture"}]


# --- F6: a corrupted template is logged and skipped ------------------------------------------------------------

def damaged_install(tmp_path: Path) -> Path:
    """A copy of the installed ccmemory package whose settings.json and memory-save skill templates are damaged."""
    import ccmemory

    site = tmp_path / "site"
    shutil.copytree(Path(ccmemory.__file__).parent, site / "ccmemory",
                    ignore=shutil.ignore_patterns("__pycache__"))
    templates = site / "ccmemory" / "templates"
    (templates / "claude" / "settings.json").write_bytes(b'{"enabledPlugins": {"ccmemory@ccm')  # truncated
    (templates / "skills" / "memory-save" / "SKILL.md").write_bytes(b"\x00\x13\xfe binary garbage")
    return site


def test_init_logs_and_skips_a_corrupted_template_and_places_the_rest(home, tmp_path):
    site = damaged_install(tmp_path)
    root = tmp_path / "repo"
    root.mkdir()
    assert git(home, root, "init", "-q").returncode == 0
    env = {**isolated_env(home), "PYTHONPATH": str(site)}
    which = subprocess.run([sys.executable, "-c", "import ccmemory; print(ccmemory.__file__)"], env=env,
                           capture_output=True, text=True)
    assert which.stdout.strip() == str(site / "ccmemory" / "__init__.py")  # the damaged copy is what runs
    done = spawn(home, root, "init", PYTHONPATH=str(site))
    assert done.returncode == 0, done.stderr
    for damaged, why in ((".claude/settings.json", "is not valid JSON"),
                         (".claude/skills/memory-save/SKILL.md", "holds binary data")):
        assert f"Template for {damaged} is corrupted (it {why}" in done.stderr, done.stderr
        assert not (root / damaged).exists()
        assert f"[x] {damaged}" not in done.stdout
    for placed in (".claude/knowledge/gotchas.md", ".claude/skills/memory-query/SKILL.md",
                   ".claude/skills/memory-discover/SKILL.md", ".claude/knowledge/domain/.gitkeep"):
        assert (root / placed).is_file() and f"[x] {placed}" in done.stdout
    # a later init from a good install places what was skipped, and nothing else changes
    again = ccmemory(home, root, "init")
    assert again.returncode == 0 and "[x] .claude/settings.json" in again.stdout
    assert json.loads((root / ".claude" / "settings.json").read_text())["enabledPlugins"]


# --- NF6: a custom knowledge_dir is honoured --------------------------------------------------------------------

def custom_repo(tmp_path: Path, home: Path, folder: str = "docs/kb") -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    assert git(home, root, "init", "-q").returncode == 0
    write_files(root, {
        ".claude/memory.config.json": json.dumps({"knowledge_dir": folder}),
        "package.json": json.dumps({"name": "shop", "main": "src/index.ts"}),
        "src/index.ts": "export function checkout(cart: Cart): Receipt { return pay(cart) }\n",
    })
    return root


def test_init_puts_the_knowledge_tree_in_the_configured_folder(home, tmp_path):
    root = custom_repo(tmp_path, home)
    done = ccmemory(home, root, "init")
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr, done.stderr
    for path in ("docs/kb/gotchas.md", "docs/kb/architecture/.gitkeep", "docs/kb/patterns/.gitkeep"):
        assert (root / path).is_file(), path
        assert f"[x] {path}" in done.stdout
    assert not (root / ".claude" / "knowledge").exists()
    assert (root / ".claude" / "skills" / "memory-query" / "SKILL.md").is_file()  # the rest stays in .claude
    assert "docs/kb/" in done.stdout  # the next steps point at the configured folder
    again = ccmemory(home, root, "init")
    assert again.returncode == 0 and "Skipping existing: docs/kb/gotchas.md" in again.stdout


def test_index_reads_only_the_configured_folder(home, tmp_path):
    root = custom_repo(tmp_path, home)
    missing = ccmemory(home, root, "index")
    assert missing.returncode == 1
    assert "Knowledge directory not found" in missing.stderr and str(root / "docs" / "kb") in missing.stderr

    write_files(root, {"docs/kb/architecture/auth.md": AUTH,
                       ".claude/knowledge/gotchas.md": GOTCHAS})  # the default folder is not read
    done = ccmemory(home, root, "index", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["knowledge_dir"] == str(root / "docs" / "kb")
    assert [f["path"] for f in report["files"]] == ["architecture/auth.md"]
    assert knowledge_refs(home) == ["architecture/auth.md#refresh", "architecture/auth.md#token-validation"]
    hit = ccmemory(home, root, "search", "token validation middleware", "--mode", "keyword")
    assert "architecture/auth.md#token-validation" in hit.stdout


def test_the_git_hook_reindexes_when_the_configured_folder_changes(home, tmp_path):
    root = custom_repo(tmp_path, home)
    assert ccmemory(home, root, "init").returncode == 0
    write_files(root, {"docs/kb/architecture/auth.md": AUTH})
    git(home, root, "add", "-A")
    committed = git(home, root, "commit", "-m", "knowledge in docs/kb")
    assert committed.returncode == 0, committed.stderr
    assert "ccmemory: Indexed 2 file(s)" in committed.stderr
    assert {ref.split("#")[0] for ref in knowledge_refs(home)} == {"architecture/auth.md"}  # not the template


def test_promote_writes_discoveries_into_the_configured_folder(home, tmp_path):
    root = custom_repo(tmp_path, home, folder="notes/knowledge")
    found = ccmemory(home, root, "discover", "--json")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["saved"] >= 1
    discovery_id = rows(home, "SELECT id FROM memories WHERE source = 'discovery' ORDER BY seq LIMIT 1")[0]["id"]
    promoted = ccmemory(home, root, "promote", discovery_id, "--json")
    assert promoted.returncode == 0, promoted.stderr
    [result] = json.loads(promoted.stdout)
    assert result["action"] == "promoted" and result["path"].startswith("notes/knowledge/discoveries/")
    assert (root / result["path"]).is_file()
    assert not (root / ".claude" / "knowledge").exists()
    # the promoted file is then indexed from the configured folder like any other knowledge
    indexed = ccmemory(home, root, "index")
    assert indexed.returncode == 0, indexed.stderr
    assert any(ref.startswith("discoveries/") for ref in knowledge_refs(home))
