"""`ccmemory discover` and `ccmemory promote`, manual and automatic (seed 001: F3.1, F4.3, F5.4, F5.6, F1.6)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from ccmemory import memories, projects, search
from ccmemory import db as database
from ccmemory import locks
from ccmemory.knowledge import promotion, settings as project_settings

from testing.cli import MODULE, on_terminal, spawn
from testing.mcp import running_server
from testing.env import isolated_env


def cli(home: Path, root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A real process: ``discover`` takes SIGTERM and holds its lock file, as another process sees them."""
    return spawn(home, None, *args, "--project", str(root))


def repo(tmp_path: Path, extra: dict[str, str] | None = None) -> Path:
    root = tmp_path / "repo"
    files = {
        "package.json": json.dumps({"name": "shop", "main": "src/index.ts"}),
        "src/index.ts": "export function checkout(cart: Cart): Receipt { return pay(cart) }\n",
        "src/cart.ts": "export class Cart {}\n",
        **(extra or {}),
    }
    for name, content in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(content)
    (root / ".git").mkdir(exist_ok=True)
    return root


def discoveries(home: Path, root: Path) -> list[memories.Memory]:
    db = database.connect(home / "ccmemory.db")
    try:
        return [m for m in memories.list_memories(db, project_id=projects.project_id(db, root), category="discovery")
                if m.source == "discovery"]
    finally:
        db.close()


def test_discover_saves_findings_and_updates_them_in_place(home, tmp_path):
    root = repo(tmp_path)
    first = cli(home, root, "discover")
    assert first.returncode == 0, first.stderr
    summary = first.stdout.strip().splitlines()[-1]
    assert "discoveries (structure" in summary and "exports 2" in summary and "saved" in summary
    saved = discoveries(home, root)
    kinds = {m.metadata["discovery"]["kind"] for m in saved}
    assert {"structure", "languages", "entry points", "exports"} <= kinds
    tree = next(m for m in saved if m.metadata["discovery"]["key"] == "tree")  # F3.1: the folder tree
    assert tree.content.startswith("Folder tree of ") and "src/ (" in tree.content
    assert all(m.metadata["discovery"]["complete"] is True for m in saved)
    exports = next(m for m in saved if m.metadata["discovery"]["key"] == "exports:src/index.ts")
    assert "function checkout(cart: Cart): Receipt" in exports.content

    (root / "src" / "index.ts").write_text("export function checkout(cart: Cart, coupon: string): Receipt {}\n")
    again = json.loads(cli(home, root, "discover", "--save", "--json").stdout)  # --save is the default, said
    assert again["saved"] == 0 and again["updated"] == 1
    after = discoveries(home, root)
    assert len(after) == len(saved)
    assert next(m for m in after if m.id == exports.id).content.count("coupon") == 1


def test_no_save_only_prints(home, tmp_path):
    root = repo(tmp_path)
    done = cli(home, root, "discover", "--no-save")
    assert done.returncode == 0 and "not saved (--no-save)" in done.stdout
    assert "Public API of src/index.ts" in done.stdout
    assert discoveries(home, root) == []


def test_a_second_discovery_reports_the_one_in_progress(home, tmp_path):
    root = repo(tmp_path)
    settings = project_settings.load(str(root))
    with locks.held(os.path.join(settings.memory_dir, "discover.lock"), status="analysing source files"):
        busy = cli(home, root, "discover")
    assert busy.returncode == 1
    assert "Discovery already in progress" in busy.stderr and "status: analysing source files" in busy.stderr
    assert cli(home, root, "discover").returncode == 0  # the lock went with its holder


def test_an_interrupted_discovery_saves_partial_results(home, tmp_path):
    slow = "import time\ndef analyze(path, text):\n    time.sleep(0.3)\n    return {'exports': ['x']}\n"
    extra = {f"src/part_{n:02d}.ts": f"export const part{n} = {n}\n" for n in range(60)}
    root = repo(tmp_path, {**extra, ".claude/analyzers/typescript.py": slow})
    code, output = on_terminal(home, root, "analyze", "--trust-analyzers", answer="y", wait_for=b"[y/N]")
    assert code == 0, output  # the slow analyzer runs only once the user allowed it
    process = subprocess.Popen([*MODULE, "discover", "--project", str(root)], env=isolated_env(home),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lock_file = root / ".claude" / "memory" / "discover.lock"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        holder = locks.read(str(lock_file)) or {}
        if holder.get("status") == "analysing source files":
            break
        time.sleep(0.1)
    time.sleep(1.5)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "partial findings were saved with complete: false" in stderr
    saved = discoveries(home, root)
    assert saved and all(m.metadata["discovery"]["complete"] is False for m in saved)
    exported = [m for m in saved if m.metadata["discovery"]["kind"] == "exports"]
    assert 0 < len(exported) < 25  # some files were analysed, not all
    assert not lock_file.exists()


def test_promote_writes_a_knowledge_file_once(home, tmp_path):
    root = repo(tmp_path)
    db = database.connect(home / "ccmemory.db")
    project = projects.project_id(db, root)
    memory = memories.add(db, project_id=project, content="Orders are idempotent by cart id\nRetries reuse it.",
                          category="discovery", tags=["orders"], source="discovery")
    db.close()
    done = cli(home, root, "promote", memory.id)
    assert done.returncode == 0, done.stderr
    target = root / ".claude" / "knowledge" / "discoveries" / "orders-are-idempotent-by-cart-id.md"
    text = target.read_text()
    assert text.startswith(f"---\npromoted_from: {memory.id}\npromoted_at: ")
    assert "### Orders are idempotent by cart id" in text and "Retries reuse it." in text
    [stored] = [m for m in discoveries(home, root) if m.id == memory.id]
    assert stored.metadata["promotion"]["promoted"] is True and stored.metadata["promotion"]["promoted_at"]

    again = cli(home, root, "promote", memory.id[:8])
    assert again.returncode == 0
    assert "Entry already promoted to .claude/knowledge/discoveries/orders-are-idempotent-by-cart-id.md" in again.stdout
    missing = cli(home, root, "promote", "abc12345")
    assert missing.returncode == 1 and "Entry not found: abc12345" in missing.stderr

    # the promoted file is knowledge: indexing it makes it searchable as file.md#anchor
    assert cli(home, root, "index").returncode in (0, 2)
    found = cli(home, root, "search", "idempotent orders", "--mode", "keyword")
    assert "discoveries/orders-are-idempotent-by-cart-id.md#orders-are-idempotent-by-cart-id" in found.stdout


def test_promotion_never_overwrites(db, tmp_path):
    root = repo(tmp_path)
    settings = project_settings.load(str(root))
    project = projects.project_id(db, root)
    memory = memories.add(db, project_id=project, content="Cache keys include the locale", category="discovery")
    target = Path(settings.knowledge_dir) / "discoveries" / "cache-keys-include-the-locale.md"
    target.parent.mkdir(parents=True)
    target.write_text("mine\n")
    result = promotion.promote(db, memory.id, settings, project)
    assert result.action == "exists" and "Skipping existing" in result.message
    assert target.read_text() == "mine\n"
    assert "promotion" not in memories.get(db, memory.id, project_id=project).metadata


def test_discoveries_referenced_three_times_in_seven_days_are_promoted(db, tmp_path):
    root = repo(tmp_path)
    settings = project_settings.load(str(root))
    project = projects.project_id(db, root)
    hot = memories.add(db, project_id=project, content="Webhooks arrive twice; dedupe by event id",
                       category="discovery", source="discovery")
    warm = memories.add(db, project_id=project, content="Invoices are generated at midnight UTC",
                        category="discovery", source="discovery")
    old = memories.add(db, project_id=project, content="Legacy exports use latin-1 encoding",
                       category="discovery", source="discovery")
    plain = memories.add(db, project_id=project, content="Webhooks retry with backoff", category="general")
    for _ in range(3):
        search.search(db, "webhooks", project_id=project, mode="keyword")
    for _ in range(2):
        search.search(db, "invoices midnight", project_id=project, mode="keyword")
    for _ in range(3):
        search.search(db, "legacy exports latin-1", project_id=project, mode="keyword")
    with db.transaction():  # the legacy references happened two weeks ago
        db.execute("UPDATE memory_references SET at = '2000-01-01T00:00:00.000Z' WHERE memory_seq = ?", (old.seq,))
    assert db.scalar("SELECT COUNT(*) FROM memory_references WHERE memory_seq = ?", (plain.seq,)) == 0
    assert promotion.due(db, project) == [hot.id]
    done = promotion.auto_promote(db, project, settings)
    assert [(p.memory_id, p.action) for p in done] == [(hot.id, "promoted")]
    assert (Path(settings.knowledge_dir) / "discoveries" / "webhooks-arrive-twice-dedupe-by-event-id.md").exists()
    assert promotion.auto_promote(db, project, settings) == []  # already promoted: skipped
    assert warm.id not in promotion.due(db, project)


def test_the_mcp_server_promotes_after_searches_once_the_user_opts_in(home, tmp_path):
    root = repo(tmp_path)
    (root / ".claude" / "knowledge").mkdir(parents=True)
    home.mkdir(parents=True, exist_ok=True)  # automatic promotion is off unless the user's config.json turns it on
    (home / "config.json").write_text(json.dumps({"promotion": {"auto_discoveries": True}}))
    with running_server(home, root) as server:
        db = server.connect()
        memory = memories.add(db, project_id=server.project_id(db), content="Feature flags are read once at boot",
                              category="discovery", source="discovery")
        db.close()
        for _ in range(3):
            answer = server.call("memory_search", {"query": "feature flags boot", "mode": "keyword"})
            assert memory.id in answer.text
    promoted = root / ".claude" / "knowledge" / "discoveries" / "feature-flags-are-read-once-at-boot.md"
    assert promoted.exists() and f"promoted_from: {memory.id}" in promoted.read_text()
