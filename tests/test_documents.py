"""Documents: chunking, re-ingest, errors, and search over chunks."""

from __future__ import annotations

import http.server
import threading

import pytest

from ccmemory import config, documents, embeddings, projects, safe_files
from ccmemory.errors import ValidationError

GUIDE = """# Service guide

Intro paragraph.

## Setup

Run `make install`. Then run `make test`.

```sh
# not a heading inside a fence
```

## Deploy

Push to main; CI deploys to staging, then production after approval.

### Rollback

Use `kubectl rollout undo`.
"""


def test_markdown_is_chunked_by_heading_with_heading_paths():
    title, chunks = documents.chunk_text(GUIDE)
    assert title == "Service guide"
    headings = [heading for heading, _ in chunks]
    assert headings == ["Service guide", "Service guide > Setup", "Service guide > Deploy",
                        "Service guide > Deploy > Rollback"]
    assert "# not a heading inside a fence" in chunks[1][1]


def test_ingest_by_path_then_unchanged_then_changed(db, project, tmp_path):
    file = tmp_path / "guide.md"
    file.write_text(GUIDE)
    first = documents.ingest(db, project_id=project, path=str(file), root=str(tmp_path))
    assert first.title == "Service guide" and first.chunk_count == 4 and not first.unchanged
    again = documents.ingest(db, project_id=project, path=str(file), root=str(tmp_path))
    assert again.id == first.id and again.unchanged
    file.write_text(GUIDE + "\n## Monitoring\nDashboards are in Grafana.\n")
    changed = documents.ingest(db, project_id=project, path=str(file), root=str(tmp_path))
    assert changed.id == first.id and changed.chunk_count == 5
    assert db.scalar("SELECT COUNT(*) FROM chunks") == 5
    assert len(documents.list_documents(db, project)) == 1


def test_reingesting_unchanged_text_rechunks_when_the_chunker_changed(db, project, tmp_path, monkeypatch):
    """Chunks stored under an older, larger limit are replaced on the next ingest although the text is the same."""
    from ccmemory import chunking

    file = tmp_path / "long.md"
    file.write_text("# Long\n\n" + " ".join(f"Sentence {n} explains the retry policy." for n in range(200)))
    current = chunking.chunk_sections
    monkeypatch.setattr(chunking, "chunk_sections", lambda sections: current(sections, limit=510))
    old = documents.ingest(db, project_id=project, path=str(file), root=str(tmp_path))
    monkeypatch.setattr(chunking, "chunk_sections", current)
    again = documents.ingest(db, project_id=project, path=str(file), root=str(tmp_path))
    assert again.id == old.id and not again.unchanged and again.chunk_count > old.chunk_count
    assert documents.ingest(db, project_id=project, path=str(file), root=str(tmp_path)).unchanged
    assert db.scalar("SELECT COUNT(*) FROM chunks WHERE needs_embedding = 1") == again.chunk_count


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "exactly one of path, url or content"),
        ({"content": "x", "path": "y"}, "exactly one of path, url or content"),
        ({"content": "   "}, "empty"),
        ({"path": "/no/such/file.md"}, "No file at"),
        ({"url": "ftp://example.invalid/x"}, "Only http"),
    ],
)
def test_ingest_errors_are_clear(db, project, tmp_path, kwargs, message):
    with pytest.raises(ValidationError, match=message):
        documents.ingest(db, project_id=project, root=str(tmp_path), **kwargs)


def test_binary_files_and_directories_are_refused(db, project, tmp_path):
    binary = tmp_path / "image.md"
    binary.write_bytes(b"\x89PNG\0\0\0binary")
    with pytest.raises(ValidationError, match="binary"):
        documents.ingest(db, project_id=project, path=str(binary), root=str(tmp_path))
    with pytest.raises(ValidationError, match="directory") as refused:
        documents.ingest(db, project_id=project, path=str(tmp_path), root=str(tmp_path))
    assert "`ccmemory docs ingest " in str(refused.value)


def test_a_secret_file_is_refused_before_it_is_read(db, project, tmp_path):
    key = tmp_path / "config" / "master.key"
    key.parent.mkdir()
    key.write_text("8af457e24e260166b07139523942d17f\n")
    with pytest.raises(ValidationError, match="whole content is a secret"):
        documents.ingest(db, project_id=project, path=str(key), root=str(tmp_path))
    assert db.scalar("SELECT COUNT(*) FROM documents") == 0


#: A bare token: nothing in it says it is a secret, only the name of the file holding it (``.vault-token``).
TOKEN = "hvs.CAESIJ0kq3bXr5wQ9zT1uVyA7mNs"


def test_a_link_is_judged_by_the_file_it_leads_to(db, project, tmp_path):
    """A link's own name says nothing (red team, hole A): one to a secret-named file is refused as that file, one out
    of the project as outside it, each saying what to do; a link to a plain file of the project is read as that file."""
    root = tmp_path / "project"
    (root / "docs").mkdir(parents=True)
    (root / ".vault-token").write_text(TOKEN + "\n")
    (root / "guide.md").write_text(GUIDE)
    (tmp_path / "outside.md").write_text("# Outside\n\nNot the project's.\n")
    for name, target in (("notes.md", "../.vault-token"), ("elsewhere.md", "../../outside.md"), ("guide.md", "../guide.md")):
        (root / "docs" / name).symlink_to(target)
    with pytest.raises(ValidationError, match=r"notes\.md \(a link to .*/\.vault-token\) is named like a file whose "
                                              r"whole content is a secret.*put what the documents should say"):
        documents.ingest(db, project_id=project, path=str(root / "docs" / "notes.md"), root=str(root))
    with pytest.raises(ValidationError, match=r"elsewhere\.md resolves to .*outside\.md, outside the project .*copy "
                                              r"the file itself \(not a link to it\) into the project"):
        documents.ingest(db, project_id=project, path=str(root / "docs" / "elsewhere.md"), root=str(root))
    document = documents.ingest(db, project_id=project, path=str(root / "docs" / "guide.md"), root=str(root))
    assert document.source_path == str((root / "guide.md").resolve()) and document.title == "Service guide"
    assert db.scalar("SELECT COUNT(*) FROM documents") == 1


def test_a_link_swapped_after_the_open_is_refused_not_read_under_the_new_name(db, project, tmp_path, monkeypatch):
    """The secret-name check reads the name of the very file opened: a link to ``.vault-token`` when it is opened and
    to ``guide.md`` when its name is checked is refused, not read as the guide."""
    (tmp_path / ".vault-token").write_text(TOKEN + "\n")
    (tmp_path / "guide.md").write_text(GUIDE)
    link = tmp_path / "notes.md"
    link.symlink_to(".vault-token")
    opened = safe_files.open_regular

    def open_then_swap(path: str, *, root: str | None = None):
        handle = opened(path, root=root)
        link.unlink()
        link.symlink_to("guide.md")
        return handle

    monkeypatch.setattr(safe_files, "open_regular", open_then_swap)
    with pytest.raises(ValidationError, match="changed while it was being opened"):
        documents.ingest(db, project_id=project, path=str(link), root=str(tmp_path))
    assert db.scalar("SELECT COUNT(*) FROM documents") == 0


def serve_once(body: bytes, content_type: str, path: str) -> str:
    """Serve one GET on loopback in a thread; returns the URL."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)

    def handle() -> None:
        server.handle_request()
        server.server_close()

    threading.Thread(target=handle, daemon=True).start()
    return f"http://127.0.0.1:{server.server_port}{path}"


@pytest.fixture
def loopback_allowed(home):
    """The user's opt-in for fetching from 127.0.0.1 (pages on loopback are refused otherwise)."""
    config.write_file_settings({"docs": {"allow_private_hosts": ["127.0.0.1"]}})


def test_ingest_from_a_local_url(db, project, loopback_allowed):
    url = serve_once(b"# Runbook\n\nRestart the worker with systemctl restart worker.", "text/markdown; charset=utf-8",
                     "/runbook.md")
    document = documents.ingest(db, project_id=project, url=url)
    assert document.title == "Runbook" and document.source_url == url


PAGE = b"""<!DOCTYPE html><html><head><title>Deploy Handbook | Acme</title>
<script>window.analytics = {track: function () {}};</script><style>body { color: red }</style></head>
<body><nav><a href="/">Home</a> <a href="/docs">Docs</a></nav>
<h1>Deploying</h1><p>Every release goes out through the <b>release</b> pipeline &amp; needs approval.</p>
<h2>Rollback</h2><ul><li>Run the rollback job</li><li>Tell the channel</li></ul>
<pre>make rollback
  VERSION=previous</pre><footer>Copyright Acme</footer></body></html>"""


def test_an_html_page_is_stored_as_readable_text_with_its_title(db, project, loopback_allowed):
    url = serve_once(PAGE, "text/html; charset=utf-8", "/handbook")
    document = documents.ingest(db, project_id=project, url=url)
    assert document.title == "Deploy Handbook | Acme"
    rows = db.rows("SELECT heading, content FROM chunks WHERE document_id = ? ORDER BY ordinal", (document.id,))
    text = "\n".join(row["content"] for row in rows)
    assert "release pipeline & needs approval" in text
    for noise in ("<", "window.analytics", "color: red", "Home", "Copyright"):
        assert noise not in text
    assert [row["heading"] for row in rows] == ["Deploying", "Deploying > Rollback"]
    assert "- Run the rollback job\n- Tell the channel" in text
    assert "```\nmake rollback\n  VERSION=previous\n```" in text


def test_an_html_file_is_converted_too(db, project, tmp_path):
    page = tmp_path / "handbook.html"
    page.write_bytes(PAGE)
    document = documents.ingest(db, project_id=project, path=str(page), root=str(tmp_path))
    assert document.title == "Deploy Handbook | Acme"
    assert "<script" not in db.scalar("SELECT group_concat(content) FROM chunks")


def test_document_search_finds_sections(vdb, project_dir, embedder):
    project = projects.project_id(vdb, project_dir)
    documents.ingest(vdb, project_id=project, content=GUIDE)
    documents.ingest(vdb, project_id=project, content="# Style\n\nUse black and ruff for Python formatting.",
                     title="Style guide")
    assert embeddings.embed_pending(vdb, embedder) == 5
    hits = documents.search(vdb, "how do I undo a bad release", project_id=project, embedder=embedder)
    assert hits[0].chunk.heading == "Service guide > Deploy > Rollback"
    keyword = documents.search(vdb, "ruff", project_id=project, mode="keyword")
    assert [hit.document.title for hit in keyword] == ["Style guide"]
    assert documents.search(vdb, "qqqzzz", project_id=project, mode="keyword") == []
    with pytest.raises(ValidationError, match="Query cannot be empty"):
        documents.search(vdb, "", project_id=project)
