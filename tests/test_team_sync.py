"""The sync client against a real PostgreSQL 16 + pgvector (``testing.postgres``): two machines and a teammate.

A "machine" is a throwaway data dir with its own clone of one git repository (another path, the
same portable identity), running the real ``ccmemory`` command line (and the real hooks where
the hook is the point) with ``CCMEMORY_SYNC_URL`` naming the server as its member role. What
reached the server is read as the admin, with raw SQL. No mock of the server or of the driver.
"""

from __future__ import annotations

import json
import socket
import uuid
from pathlib import Path

import pytest

from testing.cli import invoke
from testing.team import Machine, Server, state
from testing.hooks import assert_quiet_success, bash_call, common, run_hook, write_config


def test_a_memory_added_on_one_machine_is_found_on_the_other(tmp_path: Path, server: Server, origin: Path) -> None:
    url = server.member("alice")
    laptop = Machine(tmp_path, "laptop", origin, url)
    desktop = Machine(tmp_path, "desktop", origin, url)
    desktop.add("warm-up so the project exists here")
    memory_id = laptop.add("We chose the blue-green deploy because the database migrations are slow",
                           category="architecture")
    pushed = laptop.sync()
    assert pushed["pushed"] == 1 and pushed["team"] == "core" and pushed["role"] == server.roles["alice"], pushed
    pulled = desktop.sync()
    assert pulled["pulled"] >= 1, pulled
    hits = desktop.search("blue-green deploy")
    assert [hit["memory"]["id"] for hit in hits] == [memory_id]
    assert hits[0]["shared"] is None  # my own memory, from my other machine: no teammate label
    again = laptop.sync()
    assert again["pushed"] == 0 and again["pulled"] >= 1  # the desktop's warm-up memory; nothing echoed back
    assert laptop.sync()["pulled"] == 0
    assert state(laptop) == state(desktop)


def test_the_same_memory_edited_on_both_machines_keeps_both_texts_and_converges(
        tmp_path: Path, server: Server, origin: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = server.member("alice")
    laptop = Machine(tmp_path, "laptop", origin, url)
    desktop = Machine(tmp_path, "desktop", origin, url)
    desktop.add("warm-up")
    memory_id = laptop.add("The cache lives for five minutes")
    laptop.sync()
    desktop.sync()
    from ccmemory import db as database, memories

    for machine, text in ((laptop, "The cache lives for ten minutes (laptop)"),
                          (desktop, "The cache lives for one hour (desktop)")):
        monkeypatch.setenv("CCMEMORY_HOME", str(machine.home))  # an edit as the viewer and memory_update make it
        store = database.connect(vectors=False)
        try:
            memories.rewrite(store, memory_id, text, project_id=None)
        finally:
            store.close()
    first = laptop.sync()
    second = desktop.sync()
    assert first["conflicts"] == 0 and second["conflicts"] == 1, (first, second)
    laptop.sync()
    desktop.sync()
    assert state(laptop) == state(desktop)
    texts = {row[1] for row in state(laptop)}
    assert {"The cache lives for ten minutes (laptop)", "The cache lives for one hour (desktop)"} <= texts
    winner = laptop.memories()[memory_id]
    assert winner["content"] == "The cache lives for one hour (desktop)" and not winner["is_superseded"]
    loser = next(m for m in laptop.memories().values() if m["content"].endswith("(laptop)"))
    assert loser["is_superseded"] and loser["metadata"]["conflict_copy_of"] == memory_id
    on_server = server.rows("SELECT content, superseded_by FROM ccmemory.memories WHERE NOT deleted")
    assert ("The cache lives for ten minutes (laptop)", memory_id) in on_server


def test_deleting_and_unsharing_propagate(tmp_path: Path, server: Server, origin: Path) -> None:
    alice = Machine(tmp_path, "alice", origin, server.member("alice"))
    bob = Machine(tmp_path, "bob", origin, server.member("bob"))
    bob.add("warm-up")
    doomed = alice.add("The staging database is rebuilt every night")
    taken_back = alice.add("Ask Carol before touching the billing tables")
    alice.sync()
    bob.sync()
    assert {hit["memory"]["id"] for hit in bob.search("staging database rebuilt")} == {doomed}
    labelled = bob.search("billing tables")
    assert labelled[0]["shared"]["by"] == server.roles["alice"], labelled
    alice.run("delete", doomed)
    alice.run("sync", "share", taken_back, "--scope", "personal")
    report = alice.sync()
    assert report["deleted"] == 1 and report["unshared"] == 1, report
    bob.sync()
    assert bob.search("staging database rebuilt") == [] and bob.search("billing tables") == []
    assert doomed not in bob.memories() and taken_back not in bob.memories()
    assert server.rows("SELECT deleted, content FROM ccmemory.memories WHERE id = %s", (doomed,)) == [(True, "")]
    assert server.rows("SELECT scope FROM ccmemory.memories WHERE id = %s", (taken_back,)) == [("personal",)]


def test_a_teammate_sees_curated_team_memories_only_and_can_switch_them_off(
        tmp_path: Path, server: Server, origin: Path) -> None:
    alice = Machine(tmp_path, "alice", origin, server.member("alice"))
    bob = Machine(tmp_path, "bob", origin, server.member("bob"))
    bob.add("bob's own note about zebra stripes")
    decision = alice.add("Decision: zebra releases are cut on Thursdays", category="architecture")
    session = "s-" + uuid.uuid4().hex[:8]
    assert_quiet_success(run_hook("post_tool_use", bash_call(session, alice.project, "make zebra-report",
                                                           "zebra report printed raw output", "tu-1"),
                                  alice.home, cwd=alice.project))
    alice.sync()
    bob.sync()
    found = bob.search("zebra")
    ids = {hit["memory"]["id"] for hit in found}
    assert decision in ids
    assert not any("zebra report" in hit["memory"]["content"] for hit in found), found
    raw_on_server = server.rows("SELECT scope, owner FROM ccmemory.memories WHERE source = 'capture'")
    assert raw_on_server == [("personal", server.roles["alice"])]  # alice's machines only; row-level security hides it from bob
    shared = next(hit for hit in found if hit["memory"]["id"] == decision)["shared"]
    assert shared["by"] == server.roles["alice"] and shared["at"]
    text = bob.run("search", "zebra", "--mode", "keyword").stdout
    assert f"shared by {server.roles['alice']}" in text
    without = {hit["memory"]["id"] for hit in bob.search("zebra", "--no-team")}
    assert decision not in without and without, without


def test_private_spans_and_secrets_never_reach_the_server(tmp_path: Path, server: Server, origin: Path) -> None:
    alice = Machine(tmp_path, "alice", origin, server.member("alice"))
    secret = "ghp_" + "Zq8" * 12
    alice.add(f"Deploy notes <private>the vault is behind door 7</private> then export GITHUB_TOKEN={secret}")
    session = "s-" + uuid.uuid4().hex[:8]
    run_hook("post_tool_use", bash_call(session, alice.project, "cat .env", f"AWS_SECRET_ACCESS_KEY={secret}", "tu-9"),
             alice.home, cwd=alice.project)
    alice.sync()
    dump = server.dump()
    assert b"Deploy notes" in dump
    assert secret.encode() not in dump and b"door 7" not in dump and secret[4:20].encode() not in dump


def test_an_opted_out_project_and_a_project_without_git_never_sync(tmp_path: Path, server: Server,
                                                                   origin: Path) -> None:
    alice = Machine(tmp_path, "alice", origin, server.member("alice"))
    (alice.project / ".ccmemory-off").write_text("")
    alice.add("Secret roadmap of the opted-out project")
    plain = tmp_path / "plain"
    plain.mkdir()
    assert invoke(alice.home, plain, "add", "Notes of a folder without git", **alice.env()).returncode == 0
    report = alice.sync()
    assert report["pushed"] == 0, report
    assert server.rows("SELECT count(*) FROM ccmemory.memories") == [(0,)]
    status = json.loads(alice.run("sync", "status", "--json").stdout)
    reasons = {project["why"] for project in status["projects"]}
    assert any("opted out by" in why for why in reasons) and any("no git history" in why for why in reasons), reasons
    assert status["pending"] == 0 and status["last_sync"]["ok"]


def test_offline_sync_fails_clearly_and_search_still_works(tmp_path: Path, server: Server, origin: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    url = f"postgresql://alice:hunter2secret@127.0.0.1:{closed}/nowhere"
    laptop = Machine(tmp_path, "laptop", origin, url)
    memory_id = laptop.add("The offline memory about kiwis")
    result = laptop.run("sync", ok=False)
    assert result.returncode == 1
    assert "connecting failed" in result.stderr and "run `ccmemory sync` again later" in result.stderr
    assert "hunter2secret" not in result.stderr + result.stdout
    assert [hit["memory"]["id"] for hit in laptop.search("kiwis")] == [memory_id]
    status = laptop.run("sync", "status").stdout
    assert "FAILED" in status and "hunter2secret" not in status and "***" in status
    assert json.loads(laptop.run("sync", "status", "--json").stdout)["pending"] >= 1


def test_hooks_never_touch_the_network(tmp_path: Path, origin: Path) -> None:
    """sync.url names a port this test listens on: every hook succeeds quietly and nothing ever connects to it."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.setblocking(False)
        port = listener.getsockname()[1]
        laptop = Machine(tmp_path, "laptop", origin, f"postgresql://alice@127.0.0.1:{port}/ccmemory")
        write_config(laptop.home, {"sync": {"url": laptop.url}})
        session = "s-" + uuid.uuid4().hex[:8]
        for event, payload in (
                ("session_start", common(session, laptop.project, "SessionStart", source="startup")),
                ("post_tool_use", bash_call(session, laptop.project, "make test", "all tests passed", "tu-1")),
                ("stop", common(session, laptop.project, "Stop", stop_hook_active=False)),
                ("session_end", common(session, laptop.project, "SessionEnd", reason="exit"))):
            result = run_hook(event, payload, laptop.home, cwd=laptop.project)
            assert result.returncode == 0 and result.stderr == b"", result.stderr
        with pytest.raises(BlockingIOError):
            listener.accept()
    assert laptop.search("make test"), "the hooks stored the session as always"


def test_vectors_travel_with_their_model_and_another_model_embeds_itself(
        tmp_path: Path, server: Server, origin: Path) -> None:
    url = server.member("alice")
    laptop = Machine(tmp_path, "laptop", origin, url)
    desktop = Machine(tmp_path, "desktop", origin, url)
    other = Machine(tmp_path, "other", origin, url)
    write_config(other.home, {"embedding": {"model": "BAAI/bge-small-en-v1.5"}})
    for machine in (desktop, other):
        machine.add("warm-up")
    desktop.run("embed")
    memory_id = laptop.add("Embeddings are computed on the client and travel with their model id")
    laptop.run("embed")
    laptop.sync()
    assert server.rows("SELECT embedding_model IS NOT NULL, embedding_dims FROM ccmemory.memories WHERE id = %s",
                       (memory_id,)) == [(True, 384)]
    desktop.sync()
    other.sync()
    assert json.loads(desktop.run("stats", "--json").stdout)["pending_embeddings"] == 0
    hits = desktop.run("search", "where are vectors computed", "--mode", "semantic", "--json")
    assert memory_id in hits.stdout
    assert memory_id in other.memories()
    assert json.loads(other.run("stats", "--json").stdout)["pending_embeddings"] >= 1  # embeds it with its own model
