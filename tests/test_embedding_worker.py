"""What every way in brings is found by meaning seconds later, with no `ccmemory embed` (ccmemory.embedding_worker).

Each test brings memories in through a real process (the CLI, the hooks, the plugin launcher),
then waits, bounded, until nothing is pending, and searches by meaning with a paraphrase that
shares no keyword with the memory. The store is read with the standard library, so the CLI runs
as real processes (:func:`testing.cli.spawn`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from ccmemory import embedding_worker, locks, tokens
from ccmemory.vocabulary import CAPTURE_SOURCE
from testing.cli import spawn
from testing.env import isolated_env
from testing.mcp import running_server
from testing.models import tiny_model
from testing.hooks import bash_call, common, rows, run_hook, tool_call, write_config, write_transcript
from testing.repo import REPO_ROOT

FACT = "We moved to PostgreSQL 17"
OTHER = "The deploy script runs on Fridays"
QUESTION = "which database server do we run"  # no word in common with FACT
PENDING = ("SELECT (SELECT COUNT(*) FROM memories WHERE needs_embedding = 1 AND is_deleted = 0) "
           "+ (SELECT COUNT(*) FROM chunks WHERE needs_embedding = 1) AS n")
WAIT_SECONDS = 120


def pending(home: Path) -> int:
    return rows(home, PENDING)[0]["n"]


def worker_log(home: Path) -> str:
    log = home / "logs" / embedding_worker.LOG_FILE
    return log.read_text() if log.exists() else ""


def wait_until_embedded(home: Path) -> None:
    """Bounded: a worker embedded everything and let go of its lock."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        if pending(home) == 0 and not (home / embedding_worker.LOCK_FILE).exists() and "Embedded" in worker_log(home):
            return
        time.sleep(0.2)
    raise AssertionError(f"{pending(home)} item(s) still pending; worker log: {worker_log(home) or '(none)'}")


def semantic_hits(home: Path, project: Path, query: str = QUESTION) -> list[dict]:
    found = spawn(home, project, "search", query, "--mode", "semantic", "--json")
    assert found.returncode == 0, found.stderr
    assert "not embedded yet" not in found.stderr, found.stderr
    return [hit["memory"] for hit in json.loads(found.stdout)]


def captured(home: Path, project: Path) -> list[str]:
    """The captured tool calls (not the session summary, which names them all) a paraphrase finds, best first."""
    return [hit["content"] for hit in semantic_hits(home, project, "which database engine release is installed")
            if hit["source"] == CAPTURE_SOURCE]


def test_a_jsonl_import_is_found_by_meaning_without_embed(home: Path, project_dir: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    for text in (FACT, OTHER):
        assert spawn(elsewhere, project_dir, "add", text).returncode == 0
    archive = tmp_path / "export.jsonl"
    assert spawn(elsewhere, project_dir, "export", "-o", str(archive)).returncode == 0
    imported = spawn(home, project_dir, "import", str(archive), "--into-project", str(project_dir))
    assert imported.returncode == 0, imported.stderr
    wait_until_embedded(home)
    assert semantic_hits(home, project_dir)[0]["content"] == FACT


def test_an_import_from_another_tool_is_found_by_meaning_without_embed(home: Path, project_dir: Path,
                                                                      tmp_path: Path) -> None:
    folder = tmp_path / "auto-memory"
    folder.mkdir()
    (folder / "MEMORY.md").write_text(f"# Memory\n\n- {FACT}\n- {OTHER}\n", encoding="utf-8")
    imported = spawn(home, project_dir, "import-from", "claude-memory", str(folder), "--into-project",
                     str(project_dir))
    assert imported.returncode == 0, imported.stderr
    wait_until_embedded(home)
    assert FACT in semantic_hits(home, project_dir)[0]["content"]


def transcript_line(kind: str, message: dict, second: int, session: str, cwd: Path, **extra: object) -> str:
    return json.dumps({"type": kind, "message": message, "uuid": f"u{second}", "sessionId": session,
                       "timestamp": f"2026-05-01T10:00:{second:02d}.000Z", "cwd": str(cwd), "version": "2.1.330",
                       **extra})


def test_a_backfilled_session_is_found_by_meaning_without_embed(home: Path, project_dir: Path,
                                                                tmp_path: Path) -> None:
    claude = tmp_path / "claude-config"
    session = "backfilled-1"
    calls = [("toolu_1", "psql -c 'select version()'", "PostgreSQL 17.2 on x86_64-pc-linux-gnu"),
             ("toolu_2", "npm run lint", "0 problems")]
    lines = [transcript_line("user", {"role": "user", "content": "Check the setup"}, 0, session, project_dir)]
    for second, (tool_use_id, command, output) in enumerate(calls, start=1):
        lines.append(transcript_line("assistant", {"id": f"m{second}", "role": "assistant", "stop_reason": "tool_use",
                                                   "content": [{"type": "tool_use", "id": tool_use_id, "name": "Bash",
                                                                "input": {"command": command}}]},
                                     2 * second, session, project_dir))
        lines.append(transcript_line("user", {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tool_use_id, "content": output, "is_error": False}]},
            2 * second + 1, session, project_dir, toolUseResult={"stdout": output, "stderr": ""}))
    path = claude / "projects" / str(project_dir).replace("/", "-") / f"{session}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n")
    old = time.time() - 3600
    os.utime(path, (old, old))
    done = spawn(home, project_dir, "backfill", CLAUDE_CONFIG_DIR=str(claude))
    assert done.returncode == 0 and "Tool calls: 2 stored" in done.stdout, done.stdout + done.stderr
    wait_until_embedded(home)
    assert "PostgreSQL 17.2" in captured(home, project_dir)[0]


def test_what_hooks_capture_with_no_server_running_is_found_by_meaning(home: Path, project_dir: Path) -> None:
    """Stop and SessionEnd start the worker through the plugin launcher (here on this interpreter)."""
    transcript = project_dir / "s1.jsonl"
    write_transcript(transcript, ["Check the setup"])
    env = {"CLAUDE_PLUGIN_ROOT": str(REPO_ROOT), "CCMEMORY_PYTHON": sys.executable}
    run_hook("post_tool_use", bash_call("s1", project_dir, "psql -c 'select version()'",
                                        "PostgreSQL 17.2 on x86_64-pc-linux-gnu", "toolu_1"), home, **env)
    run_hook("post_tool_use", tool_call("s1", project_dir, "Edit", {"file_path": str(project_dir / "site.css"),
                                                                    "old_string": "color: red", "new_string":
                                                                    "color: blue"},
                                        {"filePath": str(project_dir / "site.css")}, "toolu_2"), home, **env)
    run_hook("stop", common("s1", project_dir, "Stop", stop_hook_active=False), home, **env)
    run_hook("session_end", common("s1", project_dir, "SessionEnd", reason="other"), home, **env)
    wait_until_embedded(home)
    assert "PostgreSQL 17.2" in captured(home, project_dir)[0]


def add_pending(home: Path, project: Path, texts: list[str]) -> None:
    """Memories stored as the hooks store them: without vectors."""
    for index, text in enumerate(texts):
        run_hook("post_tool_use", bash_call("s-pending", project, f"echo {index}", text, f"toolu_{index}"), home)


def worker(home: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-P", "-m", "ccmemory.embedding_worker"],
                            env=isolated_env(home), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_two_workers_started_at_once_embed_each_item_once(home: Path, project_dir: Path) -> None:
    texts = [f"Observation number {i} about the build cache" for i in range(12)]
    add_pending(home, project_dir, texts)
    assert pending(home) == len(texts)
    first, second = worker(home), worker(home)
    assert first.wait(WAIT_SECONDS) == 0 and second.wait(WAIT_SECONDS) == 0
    assert pending(home) == 0
    log = worker_log(home)
    embedded = [int(line.split("Embedded ")[1].split()[0]) for line in log.splitlines() if "Embedded " in line]
    assert sum(embedded) == len(texts), log
    assert rows(home, "SELECT COUNT(DISTINCT item_seq) AS n FROM memory_embeddings")[0]["n"] == len(texts)


def test_a_worker_whose_model_cannot_load_leaves_the_items_pending_and_says_why(home: Path,
                                                                                project_dir: Path) -> None:
    add_pending(home, project_dir, ["The kiwi exporter writes CSV files"])
    assert pending(home) == 1
    write_config(home, {"embedding": {"model": "no/such-model", "path": str(project_dir / "missing-model")}})
    process = worker(home)
    assert process.wait(WAIT_SECONDS) == 1
    assert pending(home) == 1
    log = worker_log(home)
    assert "Could not load embedding model 'no/such-model'" in log and "found by keywords" in log, log
    assert not (home / embedding_worker.LOCK_FILE).exists()
    assert "Could not load embedding model" in (home / embedding_worker.FAILED_FILE).read_text()
    assert not embedding_worker.wanted()  # no worker starts again for a while: one process per turn would fail alike


def test_a_running_server_embeds_what_a_hook_stores_within_seconds_and_a_worker_leaves_it_alone(
        home: Path, project_dir: Path) -> None:
    """The server holds the embedder lock and sees another process's commit by itself (no tool call wakes it)."""
    with running_server(home, project_dir) as server:
        server.list_tools()
        deadline = time.monotonic() + WAIT_SECONDS
        while (embedding_worker.holder() or {}).get("role") != "server":
            assert time.monotonic() < deadline, "the server never took the embedder lock"
            time.sleep(0.2)
        assert not embedding_worker.wanted()  # so the hooks start no worker while it runs
        add_pending(home, project_dir, ["psql reports PostgreSQL 17.2"])
        assert worker(home).wait(WAIT_SECONDS) == 0 and "embeds already (server)" in worker_log(home)
        while pending(home):
            assert time.monotonic() < deadline, "the server did not embed the hook's capture"
            time.sleep(0.2)
    assert embedding_worker.holder() is None  # let go when the server ended


def test_a_document_ingested_by_the_cli_is_found_by_meaning_without_embed(home: Path, project_dir: Path) -> None:
    text = f"# Operations\n\n## Database\n\n{FACT}.\n\n## Releases\n\n{OTHER}.\n"
    ingested = spawn(home, project_dir, "docs", "ingest", "--text", text, "--title", "Operations")
    assert ingested.returncode == 0, ingested.stderr
    wait_until_embedded(home)
    found = spawn(home, project_dir, "docs", "search", QUESTION, "--mode", "semantic", "--json")
    assert found.returncode == 0 and "not embedded yet" not in found.stderr, found.stderr
    assert FACT in json.loads(found.stdout)[0]["chunk"]["content"]


def embed_process(home: Path, project: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-P", "-m", "ccmemory", *args], cwd=project, env=isolated_env(home),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_embed_waits_for_the_process_holding_the_embedder_lock_then_embeds_what_is_left(
        home: Path, project_dir: Path) -> None:
    """`ccmemory embed` neither fails nor embeds beside another embedder: it waits, then finishes the work itself."""
    texts = [f"Observation number {i} about the build cache" for i in range(5)]
    add_pending(home, project_dir, texts)
    with locks.held(embedding_worker.lock_path(), stale_after=float("inf"), role=embedding_worker.WORKER):
        process = embed_process(home, project_dir, "embed")
        assert process.stderr is not None
        said = ""
        while "waiting for it" not in said:
            line = process.stderr.readline()
            assert line, f"embed ended without waiting: {said}"
            said += line
        assert "a background worker" in said
        assert pending(home) == len(texts)  # nothing embedded beside the holder
        assert os.path.exists(locks.request_path(embedding_worker.lock_path()))  # the worker is asked for a round
    out, err = process.communicate(timeout=WAIT_SECONDS)
    assert process.returncode == 0, err
    assert f"Embedded {len(texts)} item(s)" in out
    assert pending(home) == 0 and not (home / embedding_worker.LOCK_FILE).exists()


def test_embed_finishes_with_everything_embedded_while_the_server_runs(home: Path, project_dir: Path) -> None:
    with running_server(home, project_dir) as server:
        server.list_tools()
        deadline = time.monotonic() + WAIT_SECONDS
        while (embedding_worker.holder() or {}).get("role") != embedding_worker.SERVER:
            assert time.monotonic() < deadline, "the server never took the embedder lock"
            time.sleep(0.2)
        add_pending(home, project_dir, [f"Observation number {i} about the build cache" for i in range(20)])
        done = spawn(home, project_dir, "embed")
        assert done.returncode == 0, done.stderr
        assert pending(home) == 0
        assert (embedding_worker.holder() or {}).get("role") == embedding_worker.SERVER  # the server kept it


def fine_grained_tokenizer_model(folder: Path) -> Path:
    """A model folder whose tokenizer cuts every word into single characters: far more word pieces than MiniLM's."""
    tiny_model(folder, 8)
    config = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    config["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "WhitespaceSplit"}, {"type": "Split", "pattern": {"Regex": "."}, "behavior": "Isolated",
                                     "invert": False}]}
    (folder / "tokenizer.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def test_a_folder_models_windows_are_counted_in_its_own_tokenizers_word_pieces(home: Path, project_dir: Path,
                                                                                 tmp_path: Path) -> None:
    """The encoder cuts by the folder's tokenizer, so the windows that cover a long text are counted by it too."""
    folder = fine_grained_tokenizer_model(tmp_path / "char-model")
    write_config(home, {"embedding": {"path": str(folder)}})
    text = " ".join(["the quick brown fox jumps over the lazy dog"] * 10)  # 90 MiniLM word pieces, 350 characters
    assert tokens.windows(text) == [text]
    added = spawn(home, project_dir, "add", text)
    assert added.returncode == 0, added.stderr
    parts = rows(home, "SELECT COUNT(*) AS n FROM memory_embeddings")[0]["n"]
    assert parts == len(tokens.windows(text, tokens.counting_tokenizer(folder / "tokenizer.json"))) > 1
