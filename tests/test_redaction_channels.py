"""The redaction corpus through every write channel, then a byte search of the whole data directory.

Every realistic fake secret of :mod:`testing.secret_corpus` (≥ 60 in ≥ 30 formats) is sent through each
way text reaches the store: the capture hook (Bash command and output, Write, Edit, Read, an MCP
tool's input), transcripts read by the Stop hook, the MCP tools ``memory_add``, ``docs_ingest``
(text and a file in the project) and ``docmem_create_node``, the CLI ``add`` and ``docs ingest``,
the real ``ccmemory import`` of an export-format file carrying the secrets in every field (memory
content, tags, files and metadata at any depth, session summary and metadata, document title, URL,
metadata and chunks, docmem nodes, memory files), and the store's own ``add`` with the secrets in
tags, files and metadata. Then every file under the data directory (database, WAL, logs,
backups) is searched byte for byte: none of the secrets may be there.
The look-alikes go through ``memory_add``: at most 2 may come back changed.
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

from ccmemory import db as database, memories, migrations, projects
from testing.hooks import assert_quiet_success, common, run_hook, tool_call, write_config, write_transcript
from testing.mcp import running_server
from testing.secret_corpus import chunks, LOOKALIKES, SECRETS
from testing.cli import spawn


def _hook_channels(home: Path, project_dir: Path, texts: list[str]) -> int:
    calls = 0
    for index, chunk in enumerate(chunks(texts, 3000)):
        f = str(project_dir / f"f{index}.txt")
        payloads = [
            tool_call("s-bash", project_dir, "Bash", {"command": chunk},
                      {"stdout": chunk, "stderr": chunk, "interrupted": False}, f"b{index}"),
            tool_call("s-write", project_dir, "Write", {"file_path": f, "content": chunk}, {"type": "create"},
                      f"w{index}"),
            tool_call("s-edit", project_dir, "Edit", {"file_path": f, "old_string": chunk, "new_string": chunk},
                      {"filePath": f}, f"e{index}"),
            tool_call("s-read", project_dir, "Read", {"file_path": f},
                      {"type": "text", "file": {"filePath": f, "content": chunk, "numLines": 3}}, f"r{index}"),
            tool_call("s-mcp", project_dir, "mcp__deploy__run", {"script": chunk},
                      {"content": [{"type": "text", "text": chunk}]}, f"m{index}"),
        ]
        for payload in payloads:
            assert_quiet_success(run_hook("post_tool_use", payload, home, CCMEMORY_DEBUG="1"))
            calls += 1
    # a skipped tool is logged with its name (debug log on): the log line must be redacted too (a tool name
    # is at most 512 characters: a longer one is ignored, payload.FIELD_LIMITS); each text starts a line, as
    # in every other channel (a command such as redis's AUTH is read at the start of a line)
    for index, chunk in enumerate(chunks(texts, 480)):
        skipped = tool_call("s-skip", project_dir, f"Skipped\n{chunk}", {}, "", f"k{index}")
        assert_quiet_success(run_hook("post_tool_use", skipped, home, CCMEMORY_DEBUG="1"))
        calls += 1
    for index, chunk in enumerate(chunks(texts, 280)):
        session = f"s-transcript-{index}"
        transcript = project_dir / f"{session}.jsonl"
        write_transcript(transcript, [chunk, chunk])
        assert_quiet_success(run_hook("post_tool_use", tool_call(session, project_dir, "Bash", {"command": "ls"},
                                                                  {"stdout": "a"}, "t"), home))
        assert_quiet_success(run_hook("stop", common(session, project_dir, "Stop", transcript_path=str(transcript),
                                                     last_assistant_message=chunk), home))
        calls += 1
    return calls


def _cli(home: Path, cwd: Path, *args: str, stdin: str | None = None) -> None:
    result = spawn(home, cwd, *args, stdin=stdin)
    assert result.returncode == 0, result.stderr


def _export_file(path: Path, project_dir: Path, texts: list[str], secrets: list[str]) -> int:
    """An export-format JSON Lines file with every text (a secret in its context) in every field an import stores.

    A bare secret is only recognisable by the name it is stored under (``{"api_key": …}``).
    """
    project = str(project_dir.resolve())
    times = {"created_at": "2026-01-01T00:00:00.000Z", "updated_at": "2026-01-01T00:00:00.000Z"}
    records: list[dict] = [{"type": "header", "format": "ccmemory-export", "version": 1},
                           {"type": "project", "path": project, "name": "project", "created_at": times["created_at"]}]
    for index, chunk in enumerate(chunks(texts, 2000)):
        records.append({"type": "session", "id": f"imported-{index}", "project": project,
                        "started_at": times["created_at"], "ended_at": times["updated_at"], "summary": chunk,
                        "transcript_path": None, "metadata": {"notes": [chunk]}})
    for index, (text, secret) in enumerate(zip(texts, secrets)):
        records.append({
            "type": "memory", "id": str(uuid.UUID(int=index + 1)), "project": project,
            "session_id": f"imported-{index % 3}", "content": text, "sector": "semantic", "tier": "project",
            "category": "general", "tags": ["ops", text], "files": [text],
            "importance": 0.5, "salience": 0.5, "reference_count": 0, "last_accessed": None, "valid_until": None,
            "is_deleted": False, "deleted_at": None, "source": "import", "dedupe_key": None,
            "metadata": {"text": text, "deep": {"list": [[text, 1], {"api_key": secret}]}, text: 1}, **times,
        })
        records.append({"type": "docmem_node", "id": f"node{index}", "project": project, "parent_id": None,
                        "order_value": 1.0, "content": text, "token_count": 1, "context_type": "note",
                        "context_name": "", "context_value": "", "readonly": False, "hash": "", **times})
    for index, chunk in enumerate(chunks(texts, 4000)):
        records.append({"type": "document", "id": f"doc-{index}", "project": project, "title": chunk[:300],
                        "source_path": None, "source_url": f"https://example.com/{index}?{chunk[:200]}",
                        "content_hash": "0" * 64, "metadata": {"by": chunk},
                        "chunks": [{"ordinal": 0, "heading": chunk[:200], "content": chunk}], **times})
        records.append({"type": "memory_file", "project": project, "path": f"/memories/import{index}.md",
                        "content": chunk, "version": 1, **times})
    path.write_text("\n".join(json.dumps(record) for record in records) + "\n")
    return len(records) - 1


def _data_files(home: Path) -> dict[str, bytes]:
    return {str(p.relative_to(home)): p.read_bytes() for p in home.rglob("*") if p.is_file()}


def test_every_secret_through_every_channel_leaves_no_byte_in_the_data_directory(
        home: Path, project_dir: Path) -> None:
    write_config(home, {"capture": {"max_field_chars": 9000, "max_result_chars": 60000,
                                    "skip_tools": ["Skipped*"]}})
    texts = [text for _, text, _ in SECRETS]
    secrets = [secret for _, _, secret in SECRETS]
    hook_calls = _hook_channels(home, project_dir, texts)

    with running_server(home, project_dir) as server:
        for text in texts:
            assert not server.call("memory_add", {"content": text}).is_error
        for chunk in chunks(texts, 20_000):
            assert not server.call("docs_ingest", {"content": chunk, "title": "Runbook"}).is_error
        (project_dir / "ops.md").write_text("# Ops\n\n" + "\n\n".join(texts))
        assert not server.call("docs_ingest", {"path": "ops.md"}).is_error
        root = server.call("docmem_create", {}).text.rsplit(" ", 1)[-1]
        for text in texts[:20]:
            answer = server.call("docmem_create_node", {"target_id": root, "content": text, "context_type": "note",
                                                        "context_name": "ops", "context_value": "", "mode": "append-child"})
            assert not answer.is_error, answer.text

    for chunk in chunks(texts, 9000):
        _cli(home, project_dir, "add", "--category", "gotcha", stdin=chunk)
    (project_dir / "cli.md").write_text("# CLI\n\n" + "\n\n".join(texts))
    _cli(home, project_dir, "docs", "ingest", str(project_dir / "cli.md"))
    export_file = project_dir.parent / "export.jsonl"
    imported = _export_file(export_file, project_dir, texts, secrets)
    _cli(home, project_dir, "import", str(export_file), "--into-project", str(project_dir))

    db = database.connect(home / "ccmemory.db")
    try:
        project = projects.project_id(db, project_dir)
        assert db.scalar("SELECT COUNT(*) FROM memories WHERE source = 'import'") == len(texts)
        for text, secret in zip(texts, secrets):  # the store's own add, every field carrying the secret
            memories.add(db, project_id=project, content=text, source="api", tags=[text], files=[text],
                         metadata={"text": text, "deep": [{"token": secret}], text: 1})
        stored = db.scalar("SELECT COUNT(*) FROM memories")
        migrations._backup(db, migrations.current_version(db))  # the copy an upgrade writes beside the file
        files = _data_files(home)  # while a connection is open, so the WAL is still there
    finally:
        db.close()
    assert hook_calls >= 5 and stored >= 3 * len(texts) and imported > 2 * len(texts)
    assert {"ccmemory.db", "ccmemory.db-wal", "logs/hooks.log"} <= set(files)
    assert any(name.endswith(".bak") for name in files) and b"Skipped" in files["logs/hooks.log"]
    found = {secret: name for secret in secrets for name, data in files.items() if secret.encode() in data}
    assert found == {}, f"{len(found)} secrets found on disk, e.g. {list(found.items())[:3]}"


def test_look_alikes_through_memory_add_are_kept(home: Path, project_dir: Path) -> None:
    with running_server(home, project_dir) as server:
        ids = [re.search(r"Memory created: (\S+)", server.call("memory_add", {"content": text}).text).group(1)
               for text in LOOKALIKES]
    db = database.connect(home / "ccmemory.db")
    try:
        stored = {m.id: m.content for m in memories.get_many(db, ids, project_id=None)[0]}
    finally:
        db.close()
    touched = [text for memory_id, text in zip(ids, LOOKALIKES) if stored[memory_id] != text]
    assert len(touched) <= 2, touched
    assert json.dumps(touched)
