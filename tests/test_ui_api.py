"""The viewer's JSON API over a real database: token, validation, project isolation, edits, paging, docmem.

Requests go through Starlette's in-process client to the real application;
tests that need the real server (loopback binding, free port, event stream)
start ``ccmemory ui`` as a subprocess (see ``testing/ui.py``).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest
from starlette.testclient import TestClient

from ccmemory import db as database
from ccmemory import memories, projects, sessions
from ccmemory.docmem import view
from ccmemory.docmem.nodes import Docmem
from ccmemory.ui.app import create_app
from ccmemory.ui.viewer import Viewer

from testing.hooks import run_hook, tool_call
from testing.ui import api_get, events_until, running_ui
from testing.cli import spawn

SECRET_TEXTS = {
    "AKIAIOSFODNN7EXAMPLE": "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
    "ghp_16C7e42F292c6912E7710c838347Ae178B4a": "push with token ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "hunter2hunter2": "DB_PASSWORD=hunter2hunter2",
    "s3cr3tpassw0rd": "postgres://admin:s3cr3tpassw0rd@db.internal:5432/app",
}


@pytest.fixture
def viewer(home: Path) -> Iterator[Viewer]:
    launched = Viewer(semantic=False)
    yield launched
    launched.stop()


@pytest.fixture
def client(viewer: Viewer) -> Iterator[TestClient]:
    with TestClient(create_app(viewer), base_url="http://127.0.0.1") as test_client:
        test_client.headers["Authorization"] = f"Bearer {viewer.token}"
        yield test_client


@pytest.fixture
def two_projects(db: database.Database, tmp_path: Path) -> dict[str, Any]:
    """Projects A and B, each with memories and a session; A also has a docmem tree."""
    found: dict[str, Any] = {}
    for name in ("alpha", "beta"):
        folder = tmp_path / name
        (folder / ".git").mkdir(parents=True)
        project = projects.project_id(db, folder)
        session_id = f"{name}-session"
        sessions.ensure(db, session_id, project)
        sessions.set_summary(db, session_id, f"Worked on the {name} parser")
        added = [memories.add(db, project_id=project, content=f"{name} fact {i}: the {name} parser uses tokens",
                              session_id=session_id) for i in range(3)]
        found[name] = {"project": project, "memories": added, "session": session_id, "dir": folder}
    store = Docmem(db, found["alpha"]["project"])
    root = store.create("alpha-notes")
    store.create_node(root.id, "Alpha design notes", ("note", "design", ""), "append-child")
    found["alpha"]["root"] = root.id
    return found


def _error(response: Any, status: int) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["status"] == status
    return body["error"]


# ------------------------------------------------------------------ the token and the host

API_REQUESTS = [
    ("GET", "/api/projects"), ("GET", "/api/projects/1"), ("GET", "/api/projects/1/stats"),
    ("GET", "/api/projects/1/sessions"),
    ("GET", "/api/projects/1/memories"), ("POST", "/api/projects/1/memories"), ("GET", "/api/projects/1/search?q=x"),
    ("GET", "/api/projects/1/memories/x"), ("PATCH", "/api/projects/1/memories/x"),
    ("DELETE", "/api/projects/1/memories/x"), ("POST", "/api/projects/1/memories/x/restore"),
    ("POST", "/api/projects/1/memories/x/reinforce"), ("POST", "/api/projects/1/memories/x/deemphasize"),
    ("POST", "/api/projects/1/memories/x/supersede"), ("GET", "/api/projects/1/docmem"),
    ("GET", "/api/projects/1/docmem/x"), ("GET", "/api/projects/1/docmem/x/expand"),
    ("GET", "/api/projects/1/claude-md"), ("GET", "/api/projects/1/files"),
    ("GET", "/api/projects/1/files/content?path=/memories/a.md"), ("PUT", "/api/projects/1/files/content"),
    ("DELETE", "/api/projects/1/files/content?path=/memories/a.md"), ("POST", "/api/projects/1/files/rename"),
    ("POST", "/api/projects/1/gc"),
    ("GET", "/api/events"), ("GET", "/api/no-such-route"),
]


@pytest.mark.parametrize("method,path", API_REQUESTS)
def test_every_api_route_needs_the_token(client: TestClient, db: database.Database, two_projects: dict[str, Any],
                                         method: str, path: str) -> None:
    before = memories.stats(db)
    for headers in ({"Authorization": ""}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic abc"}):
        response = client.request(method, path, headers=headers, json={"content": "x"} if method != "GET" else None)
        assert "token" in _error(response, 401)
    assert memories.stats(db) == before


def test_token_in_the_query_string_only_opens_the_event_stream(client: TestClient, viewer: Viewer) -> None:
    del client.headers["Authorization"]
    _error(client.get(f"/api/projects?token={viewer.token}"), 401)


def test_the_page_is_served_without_the_token_and_holds_no_data(client: TestClient,
                                                                 two_projects: dict[str, Any]) -> None:
    del client.headers["Authorization"]
    page = client.get("/")
    assert page.status_code == 200 and "<script src=\"app.js\"" in page.text
    assert "alpha" not in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    for asset in ("/app.js", "/style.css"):
        assert client.get(asset).status_code == 200
    assert "http" not in client.get("/app.js").text.replace("HTTP ${", "")  # nothing loaded from the network


def test_requests_naming_another_host_are_refused(client: TestClient) -> None:
    """A DNS-rebinding page reaches 127.0.0.1 under its own host name: refused before the token is checked."""
    assert client.get("/api/projects", headers={"Host": "attacker.example:8000"}).status_code == 400
    assert client.get("/api/projects", headers={"Host": "localhost:8000"}).status_code == 200


# ------------------------------------------------------------------ validation errors say what is wrong

def test_validation_errors_name_the_argument_and_the_fix(client: TestClient, db: database.Database,
                                                        two_projects: dict[str, Any]) -> None:
    a = two_projects["alpha"]
    base = f"/api/projects/{a['project']}"
    one = f"{base}/memories/{a['memories'][0].id}"
    cases = [
        (client.get(f"{base}/memories?limit=abc"), "'limit' must be a number"),
        (client.get(f"{base}/memories?limit=0"), "'limit' must be between 1 and 200"),
        (client.get(f"{base}/memories?limit=5000"), "'limit' must be between 1 and 200"),
        (client.get(f"{base}/memories?sector=feelings"), "'sector' must be one of episodic"),
        (client.get(f"{base}/memories?deleted=maybe"), "'deleted' must be one of exclude, include, only"),
        (client.get(f"{base}/memories?cursor=garbage"), "next_cursor of a previous page"),
        (client.get(f"{base}/search"), "Query cannot be empty"),
        (client.get(f"{base}/search?q=x&mode=fuzzy"), "'mode' must be one of hybrid"),
        (client.post(f"{base}/memories", content=b"{not json"), "not valid JSON"),
        (client.post(f"{base}/memories", json=["a list"]), "must be a JSON object, got list"),
        (client.post(f"{base}/memories", json={}), "Content is required"),
        (client.post(f"{base}/memories", json={"content": "x" * 10_001}), "exceeds maximum length of 10,000"),
        (client.post(f"{base}/memories", json={"content": "x", "colour": "red"}), "Unknown field(s) 'colour'"),
        (client.patch(one, json={}), "Nothing to change"),
        (client.patch(one, json={"content": "   "}), "Content is required"),
        (client.patch(one, json={"tags": [1, 2]}), "'tags' must be a list of strings"),
        (client.patch(one, json={"sector": "nope"}), "'sector' must be one of"),
        (client.patch(one, json={"salience": 1}), "this request takes: content, tags, sector"),
        (client.post(f"{one}/reinforce", json={"amount": 7}), "'amount' must be between 0 and 1"),
        (client.post(f"{one}/supersede", json={}), "Send either 'new_id'"),
        (client.post(f"{one}/supersede", json={"new_id": a["memories"][0].id}), "cannot supersede itself"),
        (client.delete(f"{one}?hard=perhaps"), "'hard' must be true or false"),
        (client.get("/api/projects/abc"), "A project id is a whole number"),
        (client.get(f"{base}/docmem/{a['root']}/expand?tokens=-1"), "'tokens' must be between 1 and 50000"),
    ]
    for response, expected in cases:
        assert expected in _error(response, 400), (response.request.url, response.text)
    assert "No project with id 999" in _error(client.get("/api/projects/999/memories"), 404)
    assert "No API route" in _error(client.get("/api/nothing"), 404)
    assert memories.get(db, a["memories"][0].id, project_id=None).content == a["memories"][0].content


# ------------------------------------------------------------------ no project's data leaks into another's

def test_one_project_never_reaches_another_projects_data(client: TestClient, db: database.Database,
                                                         two_projects: dict[str, Any]) -> None:
    a, b = two_projects["alpha"], two_projects["beta"]
    before = {m.id: m for m in memories.list_memories(db, project_id=a["project"], limit=100)}
    via_b = f"/api/projects/{b['project']}"
    target = a["memories"][0].id
    requests = [
        client.get(f"{via_b}/memories/{target}"),
        client.get(f"{via_b}/memories/{target[:8]}"),
        client.patch(f"{via_b}/memories/{target}", json={"content": "overwritten from beta"}),
        client.post(f"{via_b}/memories/{target}/reinforce", json={}),
        client.post(f"{via_b}/memories/{target}/deemphasize", json={}),
        client.post(f"{via_b}/memories/{target}/supersede", json={"content": "beta replaces alpha"}),
        client.post(f"{via_b}/memories/{b['memories'][0].id}/supersede", json={"new_id": target}),
        client.post(f"{via_b}/memories/{target}/restore"),
        client.delete(f"{via_b}/memories/{target}"),
        client.delete(f"{via_b}/memories/{target}?hard=true"),
        client.get(f"{via_b}/docmem/{a['root']}"),
        client.get(f"{via_b}/docmem/{a['root']}/expand"),
        client.get(f"{via_b}/docmem/session:{a['session']}"),
        client.get(f"{via_b}/docmem/memory:{target}"),
    ]
    for response in requests:
        assert "not found" in _error(response, 404).lower() or "no memory" in _error(response, 404).lower()
    after = {m.id: m for m in memories.list_memories(db, project_id=a["project"], limit=100)}
    assert after == before
    assert len(memories.list_memories(db, project_id=b["project"], limit=100)) == 3  # nothing new in beta

    listed = client.get(f"{via_b}/memories?deleted=include&limit=200").json()["memories"]
    found = client.get(f"{via_b}/search?q=alpha parser tokens&mode=keyword").json()["hits"]
    timeline = client.get(f"{via_b}/sessions").json()["sessions"]
    trees = client.get(f"{via_b}/docmem").json()
    shown = json.dumps([listed, found, timeline, trees])
    assert "alpha" not in shown
    assert {m["project_id"] for m in listed} == {b["project"]}
    assert [s["id"] for s in timeline] == [b["session"]]


# ------------------------------------------------------------------ edits go through the store's write path

def test_an_edit_changes_content_tags_and_sector_in_place(client: TestClient, db: database.Database,
                                                          two_projects: dict[str, Any]) -> None:
    a = two_projects["alpha"]
    url = f"/api/projects/{a['project']}/memories/{a['memories'][0].id}"
    detail = client.patch(url, json={"content": "The parser now streams tokens", "tags": ["parser", "perf"],
                                     "sector": "procedural"}).json()
    assert detail["memory"]["content"] == "The parser now streams tokens"
    assert detail["memory"]["tags"] == ["parser", "perf"] and detail["memory"]["sector"] == "procedural"
    stored = memories.get(db, a["memories"][0].id, project_id=None)
    assert (stored.content, stored.tags, stored.sector) == ("The parser now streams tokens", ["parser", "perf"],
                                                           "procedural")
    hits = client.get(f"/api/projects/{a['project']}/search?q=streams&mode=keyword").json()["hits"]
    # the keyword index followed the edit (search may add the memory next to a hit as context after it)
    assert hits[0]["memory"]["id"] == a["memories"][0].id and all("streams" not in h["memory"]["content"]
                                                                 for h in hits[1:])
    only_tags = client.patch(url, json={"tags": []}).json()["memory"]
    assert only_tags["tags"] == [] and only_tags["content"] == "The parser now streams tokens"


def test_edits_and_new_memories_are_redacted_like_every_other_write(client: TestClient, db: database.Database,
                                                                     two_projects: dict[str, Any]) -> None:
    a = two_projects["alpha"]
    base = f"/api/projects/{a['project']}/memories"
    text = "Notes:\n" + "\n".join(SECRET_TEXTS.values())
    edited = client.patch(f"{base}/{a['memories'][0].id}", json={"content": text}).json()["memory"]["content"]
    created = client.post(base, json={"content": text, "tags": ["DB_PASSWORD=hunter2hunter2"]}).json()["memory"]
    replaced = client.post(f"{base}/{a['memories'][1].id}/supersede", json={"content": text}).json()["new"]["memory"]
    for content in (edited, created["content"], replaced["content"],
                    memories.get(db, a["memories"][0].id, project_id=None).content,
                    memories.get(db, created["id"], project_id=None).content):
        assert "Notes:" in content and "[REDACTED" in content
        for secret in SECRET_TEXTS:
            assert secret not in content
    data = b"".join(p.read_bytes() for p in Path(db.path).parent.glob("ccmemory.db*"))
    for secret in SECRET_TEXTS:
        assert secret.encode() not in data


# ------------------------------------------------------------------ actions

def test_reinforce_deemphasize_supersede_delete_restore(client: TestClient, two_projects: dict[str, Any]) -> None:
    a = two_projects["alpha"]
    base = f"/api/projects/{a['project']}"
    first, second, third = (m.id for m in a["memories"])
    up = client.post(f"{base}/memories/{first}/reinforce", json={}).json()["memory"]["salience"]
    down = client.post(f"{base}/memories/{first}/deemphasize", json={"amount": 0.5}).json()["memory"]["salience"]
    assert up > 0.5 and down == pytest.approx(up * 0.5)

    result = client.post(f"{base}/memories/{second}/supersede", json={"content": "alpha fact 1, corrected"}).json()
    assert result["old"]["superseded_by"] == result["new"]["memory"]["id"]
    assert result["new"]["supersedes"] == [second]
    assert client.get(f"{base}/memories?superseded=only").json()["memories"][0]["id"] == second
    hits = client.get(f"{base}/search?q=alpha fact&mode=keyword").json()["hits"]
    assert second not in [h["memory"]["id"] for h in hits]

    assert client.delete(f"{base}/memories/{third}").json() == {"deleted": True, "id": third, "hard": False}
    assert third not in [m["id"] for m in client.get(f"{base}/memories").json()["memories"]]
    assert [m["id"] for m in client.get(f"{base}/memories?deleted=only").json()["memories"]] == [third]
    assert client.post(f"{base}/memories/{third}/restore").json()["memory"]["is_deleted"] is False
    assert client.delete(f"{base}/memories/{third}?hard=true").json()["hard"] is True
    _error(client.get(f"{base}/memories/{third}"), 404)
    created = client.post(f"{base}/memories", json={"content": "Always run the linter before pushing",
                                                    "category": "pattern"})
    assert created.status_code == 201 and created.json()["memory"]["source"] == "ui"


def test_paging_walks_every_memory_once_newest_first(client: TestClient, db: database.Database,
                                                      project: int) -> None:
    added = [memories.add(db, project_id=project, content=f"note {i}", tier="session" if i % 3 else "project")
             for i in range(120)]
    memories.delete(db, added[5].id, project_id=None)
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        query = f"/api/projects/{project}/memories?limit=50" + (f"&cursor={cursor}" if cursor else "")
        page = client.get(query).json()
        assert page["total"] == 119 and not page["total_is_lower_bound"]
        seen += [m["id"] for m in page["memories"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert pages == 3
    assert seen == [m.id for m in reversed(added) if m.id != added[5].id]
    by_tier = client.get(f"/api/projects/{project}/memories?tier=project&limit=200").json()
    assert by_tier["total"] == 40 and {m["tier"] for m in by_tier["memories"]} == {"project"}
    long = memories.add(db, project_id=project, content="x" * 5000)
    listed = client.get(f"/api/projects/{project}/memories?limit=1").json()["memories"][0]
    assert listed["id"] == long.id and listed["content_truncated"] and len(listed["content"]) < 5000
    assert len(client.get(f"/api/projects/{project}/memories/{long.id}").json()["memory"]["content"]) == 5000


def test_hybrid_search_uses_the_embedding_model(home: Path, db: database.Database, project: int) -> None:
    memories.add(db, project_id=project, content="The staging database listens on port 5433")
    memories.add(db, project_id=project, content="Prefer tabs over spaces in the Makefile")
    viewer = Viewer(semantic=True)
    try:
        with TestClient(create_app(viewer), base_url="http://127.0.0.1") as client:
            client.headers["Authorization"] = f"Bearer {viewer.token}"
            assert viewer.background.wait_for_model(120)[0] is not None  # a shared machine may load slowly
            found = client.get(f"/api/projects/{project}/search?q=which port does the DB use").json()
    finally:
        viewer.stop()
    assert found["mode_used"] == "hybrid", found["warnings"]
    assert found["hits"][0]["memory"]["content"].startswith("The staging database")


# ------------------------------------------------------------------ sessions, docmem, CLAUDE.md, storage

def test_sessions_docmem_claude_md_and_storage(client: TestClient, two_projects: dict[str, Any]) -> None:
    a = two_projects["alpha"]
    base = f"/api/projects/{a['project']}"
    timeline = client.get(f"{base}/sessions").json()
    assert timeline["sessions"][0]["summary"] == "Worked on the alpha parser"
    assert timeline["sessions"][0]["memories"] == 3 and timeline["next_offset"] is None
    in_session = client.get(f"{base}/memories?session={a['session']}").json()
    assert in_session["total"] == 3

    trees = client.get(f"{base}/docmem").json()
    assert [r["id"] for r in trees["roots"]] == [a["root"]]
    node = client.get(f"{base}/docmem/{a['root']}").json()
    assert node["children"][0]["content"] == "Alpha design notes"
    session_tree = client.get(f"{base}/docmem/session:{a['session']}").json()
    assert session_tree["children_total"] == 3
    assert "Alpha design notes" in client.get(f"{base}/docmem/{a['root']}/expand").json()["text"]

    assert client.get(f"{base}/claude-md").json() == {"path": str(a["dir"] / "CLAUDE.md"), "exists": False,
                                                     "sections": [], "node_ids": []}
    (a["dir"] / "CLAUDE.md").write_text("# Project rules\n")
    view.sync(a["dir"] / "CLAUDE.md", [(a["root"], "Alpha design notes")])
    shown = client.get(f"{base}/claude-md").json()
    assert shown["node_ids"] == [a["root"]] and "Alpha design notes" in shown["sections"][0]

    header = client.get(base).json()
    assert header["project"]["name"] == "alpha" and "stats" not in header
    stats = client.get(f"{base}/stats").json()
    assert stats["stats"]["memories"] == 3 and stats["all_projects"]["memories"] == 6
    assert stats["storage"]["database_bytes"] > 0
    assert stats["storage"]["total_bytes"] >= stats["storage"]["database_bytes"]
    listed = client.get("/api/projects").json()
    assert {p["name"]: p["memories"] for p in listed["projects"]} == {"alpha": 3, "beta": 3}
    assert "procedural" in listed["sectors"] and "gotcha" in listed["categories"]


def test_the_projects_list_shows_identity_paths_and_counts(client: TestClient, db: database.Database, tmp_path: Path) -> None:
    import subprocess

    from testing.env import isolated_env

    def git(cwd: Path, *args: str) -> None:
        subprocess.run(["git", *args], cwd=cwd, env=isolated_env(None), check=True, capture_output=True, timeout=60)

    first = tmp_path / "shop"
    first.mkdir()
    git(first, "init", "-q")
    git(first, "commit", "-q", "--allow-empty", "-m", "root")
    git(tmp_path, "clone", "-q", str(first), str(tmp_path / "shop-clone"))
    gone = tmp_path / "shop-clone"
    project = projects.project_id(db, first)
    assert projects.project_id(db, gone) == project
    memories.add(db, project_id=project, content="The shop's prices are in cents")
    gone.rename(tmp_path / "elsewhere")

    (shown,) = client.get("/api/projects").json()["projects"]
    assert shown["id"] == project and shown["identity"].startswith("git:") and shown["memories"] == 1
    assert {a["path"]: a["exists"] for a in shown["aliases"]} == {str(first.resolve()): True, str(gone.resolve()): False}
    assert (shown["sessions"], shown["documents"], shown["memory_files"]) == (0, 0, 0)
    assert [shown] == projects.list_all(db)  # the same core function as `ccmemory projects --json`


# ------------------------------------------------------------------ /memories files

def test_memory_files_create_edit_rename_delete_through_the_memory_tool_core(
        client: TestClient, two_projects: dict[str, Any]) -> None:
    a, b = (f"/api/projects/{two_projects[name]['project']}" for name in ("alpha", "beta"))
    created = client.put(f"{a}/files/content", json={"path": "/memories/notes.md", "content": "# Notes\n",
                                                     "version": None}).json()
    assert created["message"] == "Saved /memories/notes.md" and created["file"]["version"] == 1
    shared = client.put(f"{a}/files/content", json={"path": "/memories/user/prefs.md", "content": "tabs",
                                                    "version": None}).json()["file"]
    assert shared["scope"] == "user"

    edited = client.put(f"{a}/files/content", json={"path": "/memories/notes.md", "content": "# Notes\nport 6543\n",
                                                    "version": 1}).json()["file"]
    assert edited["version"] == 2 and "6543" in edited["content"]
    stale = client.put(f"{a}/files/content", json={"path": "/memories/notes.md", "content": "lost", "version": 1})
    assert "changed while it was being edited" in _error(stale, 409)
    assert "already exists" in _error(client.post(f"{a}/files/rename", json={
        "old_path": "/memories/notes.md", "new_path": "/memories/user/prefs.md"}), 409)
    for bad in ("/etc/passwd", "/memories/../x.md", "/memories/%2e%2e/x.md", "/memories/a.txt"):
        assert "Error" in _error(client.put(f"{a}/files/content", json={"path": bad, "content": "x",
                                                                        "version": None}), 400)
    assert "'path'" in _error(client.get(f"{a}/files/content"), 400)

    assert {f["path"] for f in client.get(f"{a}/files").json()["files"]} == {"/memories/notes.md",
                                                                          "/memories/user/prefs.md"}
    assert [f["path"] for f in client.get(f"{b}/files").json()["files"]] == ["/memories/user/prefs.md"]
    _error(client.get(f"{b}/files/content?path=/memories/notes.md"), 404)
    _error(client.delete(f"{b}/files/content?path=/memories/notes.md"), 409)
    assert client.get(f"{a}/files/content?path=/memories/notes.md").json()["version"] == 2

    renamed = client.post(f"{a}/files/rename", json={"old_path": "/memories/notes.md",
                                                     "new_path": "/memories/project/notes.md"}).json()
    assert renamed["message"].startswith("Successfully renamed /memories/notes.md")
    gone = client.delete(f"{a}/files/content?path=/memories/project/notes.md").json()
    assert gone["message"].startswith("Successfully deleted")
    assert [f["path"] for f in client.get(f"{a}/files").json()["files"]] == ["/memories/user/prefs.md"]


def test_memory_files_written_from_the_page_are_redacted(client: TestClient, two_projects: dict[str, Any]) -> None:
    a = f"/api/projects/{two_projects['alpha']['project']}"
    text = "Deploy notes\n" + "\n".join(SECRET_TEXTS.values())
    saved = client.put(f"{a}/files/content", json={"path": "/memories/deploy.md", "content": text, "version": None})
    assert "[REDACTED]" in saved.json()["message"]
    stored = client.get(f"{a}/files/content?path=/memories/deploy.md").json()["content"]
    assert stored.startswith("Deploy notes") and "[REDACTED" in stored
    for secret in SECRET_TEXTS:
        assert secret not in stored


# ------------------------------------------------------------------ the real server

def test_ccmemory_ui_listens_on_loopback_with_a_fresh_token(home: Path, project_dir: Path) -> None:
    with running_ui(home, project_dir) as first, running_ui(home, project_dir) as second:
        assert first.url.startswith("http://127.0.0.1:") and first.port != second.port
        assert first.token != second.token and len(first.token) >= 40
        assert api_get(first, "/api/projects")["projects"] == []
        with pytest.raises(urllib.error.HTTPError) as refused:
            api_get(first, "/api/projects", token=second.token)
        assert refused.value.code == 401
        listening = Path("/proc/net/tcp").read_text().splitlines()[1:]
        local = {line.split()[1] for line in listening if line.split()[3] == "0A"}
        assert f"0100007F:{first.port:04X}" in local  # 127.0.0.1 only, not 0.0.0.0
        assert f"00000000:{first.port:04X}" not in local


def test_the_event_stream_reports_a_hook_capture(home: Path, project_dir: Path) -> None:
    with running_ui(home, project_dir) as ui:
        payload = tool_call("live-1", project_dir, "Bash", {"command": "make test"},
                            {"stdout": "42 passed", "stderr": "", "interrupted": False}, "toolu_live_1")
        messages = events_until(ui, lambda: run_hook("post_tool_use", payload, home, cwd=project_dir),
                                wanted="change")
        assert messages[0][0] == "ready" and messages[-1][0] == "change"
        assert messages[-1][1]["latest_seq"] > messages[0][1]["latest_seq"]
        project = api_get(ui, "/api/projects")["projects"][0]
        listed = api_get(ui, f"/api/projects/{project['id']}/memories")["memories"]
        assert "make test" in listed[0]["content"]


def test_a_taken_port_is_a_usage_error_that_says_what_to_do(home: Path, project_dir: Path) -> None:
    import socket

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        result = spawn(home, project_dir, "ui", "--no-open", "--keyword-only", "--port", str(taken.getsockname()[1]),
                       timeout=120)
    finally:
        taken.close()
    assert result.returncode == 2
    assert "Cannot listen on 127.0.0.1" in result.stderr and "leave it out to use a free one" in result.stderr


def test_gc_previews_then_collects_this_project_only(client: TestClient, db: database.Database,
                                                    two_projects: dict[str, Any]) -> None:
    a, b = two_projects["alpha"], two_projects["beta"]
    for name in ("alpha", "beta"):
        memories.delete(db, two_projects[name]["memories"][0].id, project_id=two_projects[name]["project"])
    url = f"/api/projects/{a['project']}/gc"
    preview = client.post(url, json={"deleted_after_days": 0}).json()  # a dry run unless told otherwise
    assert preview["dry_run"] is True and preview["purged"] == 1
    assert client.get(f"/api/projects/{a['project']}/memories?deleted=only").json()["total"] == 1
    done = client.post(url, json={"deleted_after_days": 0, "dry_run": False}).json()
    assert done["dry_run"] is False and done["purged"] == 1
    assert client.get(f"/api/projects/{a['project']}/memories?deleted=only").json()["total"] == 0
    assert client.get(f"/api/projects/{b['project']}/memories?deleted=only").json()["total"] == 1
    assert "'older_than_days' must be between 0" in _error(client.post(url, json={"older_than_days": -1}), 400)
    assert "Unknown tier" in _error(client.post(url, json={"tiers": ["forever"]}), 400)
