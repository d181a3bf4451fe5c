"""Team sync under load and failure, end to end with the real entry points, against a real PostgreSQL.

Real hook processes write, real ``ccmemory sync`` processes move memories, the real MCP server
searches; the server is the ``testing.postgres`` cluster, which a test may halt as a crash would
(``pg_ctl stop -m immediate``) and start again. What reached the server is read as the admin
with raw SQL, or byte for byte in a ``pg_dump``.
"""

from __future__ import annotations

import hashlib
import json
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from testing import postgres
from testing.hooks import assert_quiet_success, bash_call, common, rows, run_hook, tool_call, write_transcript
from testing.mcp import running_server
from testing.secret_corpus import SECRETS, chunks
from testing.team import Machine, Server


def _session(machine: Machine, session: str, calls: list[tuple[str, str]], **env: str) -> None:
    """A whole session through the real hooks: start, one capture per (command, output), Stop, SessionEnd."""
    project = machine.project
    transcript = project.parent / f"{session}.jsonl"
    write_transcript(transcript, [f"run {command}" for command, _ in calls])
    hooks = [("session_start", common(session, project, "SessionStart", source="startup"))]
    hooks += [("post_tool_use", bash_call(session, project, command, output, f"tu-{index}"))
              for index, (command, output) in enumerate(calls)]
    hooks += [("stop", common(session, project, "Stop", transcript_path=str(transcript), stop_hook_active=False)),
              ("session_end", common(session, project, "SessionEnd", transcript_path=str(transcript), reason="exit"))]
    for event, payload in hooks:
        result = run_hook(event, payload, machine.home, cwd=project, **env)
        assert result.returncode == 0 and result.stderr == b"", (event, result.stderr)


def _sync_process(machine: Machine) -> dict:
    result = machine.spawn("sync", "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)


def _hashes(machine: Machine) -> set[str]:
    """The content hashes of a machine's live memories, read from its store file."""
    return {hashlib.sha256(row["content"].encode()).hexdigest()
            for row in rows(machine.home, "SELECT content FROM memories WHERE is_deleted = 0")}


def _exactly_once(server: Server, expected: set[str]) -> None:
    on_server = [hashlib.sha256(content.encode()).hexdigest()
                 for (content,) in server.rows("SELECT content FROM ccmemory.memories WHERE NOT deleted")]
    assert len(on_server) == len(set(on_server)), "a memory is on the server twice"
    assert set(on_server) == expected


def test_captured_by_hooks_on_one_machine_found_by_memory_search_on_the_other(
        tmp_path: Path, server: Server, origin: Path) -> None:
    url = server.member("alice")
    laptop = Machine(tmp_path, "laptop", origin, url)
    desktop = Machine(tmp_path, "desktop", origin, url)
    _session(desktop, "s-desk-" + uuid.uuid4().hex[:6], [("ls", "README.md")])  # the desktop has opened the project
    _session(laptop, "s-lap-" + uuid.uuid4().hex[:6],
             [("make flamingo-migrate", "flamingo migration 0042 applied to the staging database")],
             CCMEMORY_SYNC_URL=url)
    assert _sync_process(laptop)["pushed"] >= 1
    assert _sync_process(desktop)["pulled"] >= 1
    with running_server(desktop.home, desktop.project) as mcp:
        answer = mcp.call("memory_search", {"query": "flamingo migration staging"})
    assert not answer.is_error and "flamingo migration 0042" in answer.text, answer.text
    assert str(laptop.project) != str(desktop.project)


def test_eight_clients_sync_at_once_and_converge(tmp_path: Path, server: Server, origin: Path) -> None:
    per_client = 500
    machines = [Machine(tmp_path, f"m{index}", origin, server.member(f"dev{index}")) for index in range(8)]
    expected: set[str] = set()
    for index, machine in enumerate(machines):
        texts = [f"client {index} decision {number}: keep the {uuid.uuid4().hex} cache warm" for number in
                 range(per_client)]
        machine.fill(texts)  # source manual: shared with the team
        expected |= {hashlib.sha256(text.encode()).hexdigest() for text in texts}
    for _round in range(2):
        running = [machine.start_sync() for machine in machines]
        for process in running:
            out, err = process.communicate(timeout=600)
            assert process.returncode == 0, out + err
    _exactly_once(server, expected)
    for machine in machines:
        assert _hashes(machine) == expected, machine.home.name


def _wait_for_rows(server: Server, process, at_least: int = 1) -> int:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        count = server.count()
        if count >= at_least:
            return count
        assert process.poll() is None, "the sync ended before any row reached the server"
        time.sleep(0.005)
    raise AssertionError("no row reached the server in time")


def _pushing(laptop: Machine, text: str) -> tuple[Machine, set[str], subprocess.Popen[str]]:
    """The laptop holding 3,000 distinct memories (``text`` with a number and a uuid), its sync started; their hashes."""
    texts = [text.format(number, uuid.uuid4().hex) for number in range(3000)]
    laptop.fill(texts)
    return laptop, {hashlib.sha256(text.encode()).hexdigest() for text in texts}, laptop.start_sync()


def _resynced_exactly_once(laptop: Machine, server: Server, expected: set[str]) -> None:
    """A new sync finishes what the broken one began: nothing pending or in conflict, each memory once everywhere."""
    report = _sync_process(laptop)
    assert report["conflicts"] == 0 and report["pending"] == 0, report
    _exactly_once(server, expected)
    assert _hashes(laptop) == expected


def test_a_client_killed_mid_push_loses_and_doubles_nothing(tmp_path: Path, server: Server, origin: Path) -> None:
    url = server.member("alice")
    laptop, expected, process = _pushing(Machine(tmp_path, "laptop", origin, url), "note {} on the {} rollout")
    reached = _wait_for_rows(server, process)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL
    assert reached < len(expected), "the push finished before the kill"
    _resynced_exactly_once(laptop, server, expected)
    desktop = Machine(tmp_path, "desktop", origin, url)
    desktop.fill(["warm-up"])
    _sync_process(desktop)
    assert _hashes(desktop) == expected | {hashlib.sha256(b"warm-up").hexdigest()}


def test_the_server_killed_mid_transaction_loses_and_doubles_nothing(
        tmp_path: Path, cluster: postgres.Cluster, server: Server, origin: Path) -> None:
    laptop, expected, process = _pushing(Machine(tmp_path, "laptop", origin, server.member("alice")),
                                         "gotcha {}: the {} queue drops messages")
    try:
        reached = _wait_for_rows(server, process)
        cluster.halt()
        out, err = process.communicate(timeout=120)
    finally:
        cluster.resume()
    assert reached < len(expected), "the push finished before the server stopped"
    assert process.returncode == 1, out + err
    assert "failed on the server" in err and "Traceback" not in err, err
    assert server.count() < len(expected)  # the batch in flight died with the server
    _resynced_exactly_once(laptop, server, expected)


def test_with_the_server_stopped_hooks_and_search_work_and_sync_resumes(
        tmp_path: Path, cluster: postgres.Cluster, server: Server, origin: Path) -> None:
    url = server.member("alice")
    laptop = Machine(tmp_path, "laptop", origin, url)
    laptop.fill(["The pelican service restarts at midnight"])
    _sync_process(laptop)
    cluster.halt()
    try:
        # The server's port now answers to this listener: any connection from a hook or a search would show.
        with socket.socket() as listener:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((cluster.host, cluster.port))
            listener.listen(8)
            listener.setblocking(False)
            _session(laptop, "s-off-" + uuid.uuid4().hex[:6],
                     [("make pelican-report", "pelican report: 3 restarts overnight")], CCMEMORY_SYNC_URL=url)
            with running_server(laptop.home, laptop.project, CCMEMORY_SYNC_URL=url) as mcp:
                answer = mcp.call("memory_search", {"query": "pelican restarts"})
            assert not answer.is_error
            assert "midnight" in answer.text and "pelican report" in answer.text, answer.text
            with pytest.raises(BlockingIOError):
                listener.accept()
        offline = laptop.spawn("sync")
        assert offline.returncode == 1, offline.stdout + offline.stderr
        assert "connecting failed" in offline.stderr and "run `ccmemory sync` again later" in offline.stderr
        assert "Traceback" not in offline.stderr and "PASSWORD" not in offline.stderr.upper().replace("***", "")
    finally:
        cluster.resume()
    report = _sync_process(laptop)
    assert report["pending"] == 0 and report["pushed"] >= 1, report
    _exactly_once(server, _hashes(laptop))


def test_the_secret_corpus_captured_and_synced_leaves_no_secret_on_the_server(
        tmp_path: Path, server: Server, origin: Path) -> None:
    laptop = Machine(tmp_path, "laptop", origin, server.member("alice"))
    texts = [text for _, text, _ in SECRETS]
    session = "s-secrets-" + uuid.uuid4().hex[:6]
    project = laptop.project
    for index, chunk in enumerate(chunks(texts, 3000)):
        for payload in (bash_call(session, project, chunk, chunk, f"b{index}"),
                        tool_call(session, project, "Write", {"file_path": str(project / f"f{index}.txt"),
                                                             "content": chunk}, {"type": "create"}, f"w{index}")):
            assert_quiet_success(run_hook("post_tool_use", payload, laptop.home, cwd=project))
    transcript = project.parent / f"{session}.jsonl"
    write_transcript(transcript, chunks(texts, 1500))
    for event, payload in (("stop", common(session, project, "Stop", transcript_path=str(transcript),
                                           last_assistant_message=texts[0], stop_hook_active=False)),
                           ("session_end", common(session, project, "SessionEnd", transcript_path=str(transcript),
                                                  reason="exit"))):
        assert_quiet_success(run_hook(event, payload, laptop.home, cwd=project))
    laptop.add("Deploy notes for the release")
    report = _sync_process(laptop)
    assert report["pushed"] >= 3, report
    dump = server.dump()
    assert b"Deploy notes" in dump and b"aws configure set aws_access_key_id" in dump  # the captures are there
    leaked = [fmt for fmt, _, secret in SECRETS if secret.encode() in dump]
    assert leaked == [], leaked


def test_a_row_written_on_the_server_by_hand_is_pulled_without_breaking_sync(
        tmp_path: Path, server: Server, origin: Path) -> None:
    """A member may write rows with psql (or another client): defaults the local store refuses are made valid."""
    import psycopg

    url = server.member("alice")
    laptop = Machine(tmp_path, "laptop", origin, url)
    laptop.add("warm-up")
    _sync_process(laptop)
    (project, team_id), = server.rows("SELECT project, team_id FROM ccmemory.projects")
    with psycopg.connect(url) as conn:
        conn.execute("INSERT INTO ccmemory.memories (id, team_id, project, scope, created_at, updated_at, content, "
                     "category) VALUES (%s, %s, %s, 'team', now(), now(), 'Written by hand about the otter API', "
                     "'no such category')", (uuid.uuid4().hex, team_id, project))
    report = _sync_process(laptop)
    assert report["pulled"] == 1, report
    assert [hit["memory"]["content"] for hit in laptop.search("otter")] == ["Written by hand about the otter API"]
