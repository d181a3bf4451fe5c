"""docmem_view and docmem_query_nodes through a real MCP client talking to the real server over stdio."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from ccmemory import db as database, memories, paths, projects, sessions
from ccmemory.docmem import view
from ccmemory.mcp import docmem_tools as tools
from testing.env import isolated_env
from testing.mcp import running_server
from testing.repo import SOURCE

USER_TEXT = b"# Project rules\n\nAlways run the tests.\n"
STALE = b"\n# DOCMEM Dynamic\n" + view.BEGIN.encode() + b"\n\n## gone\n\nleft by an earlier server\n\n" + \
    view.END.encode() + b"\n"
#: Memories the server's loop embeds (in rounds of 16, each a transaction) while docmem queries run.
BACKLOG = 400
QUERIES = 400


async def _session_calls(project_dir: Path, home: Path, steps: list[tuple[str, dict]]) -> tuple[list, list]:
    env = isolated_env(home, PYTHONPATH=str(SOURCE))
    server = StdioServerParameters(command=sys.executable, args=["-m", "ccmemory.mcp.server"], env=env,
                                   cwd=str(project_dir))
    results = []
    files = []
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as client:
            await client.initialize()
            listed = {tool.name for tool in (await client.list_tools()).tools}
            results.append(listed)
            files.append((project_dir / "CLAUDE.md").read_bytes())
            for name, arguments in steps:
                result = await client.call_tool(name, arguments)
                results.append((result.is_error, result.content[0].text))
                files.append((project_dir / "CLAUDE.md").read_bytes())
    return results, files


def test_docmem_view_over_mcp(home, db, project, project_dir):
    memories.add(db, project_id=project, content="The deploy script needs AWS_PROFILE.", session_id="s-42")
    sessions.set_summary(db, "s-42", "Fixed the deploy script.")
    (project_dir / "CLAUDE.md").write_bytes(USER_TEXT + STALE)

    results, files = anyio.run(_session_calls, project_dir, home, [
        ("docmem_query_nodes", {"sql": "SELECT id, content FROM nodes WHERE parent_id IS NULL"}),
        ("docmem_view", {"action": "add", "node_id": "session:s-42"}),
        ("docmem_view", {"action": "add", "node_id": "no-such-node"}),
        ("docmem_view", {"action": "remove", "node_id": "session:s-42"}),
        ("docmem_view", {"action": "remove", "node_id": "session:s-42"}),
    ])

    assert {tool.name for tool in tools.TOOLS} <= results[0]
    is_error, text = results[1]
    assert not is_error and '"id": "session:s-42"' in text
    assert files[1] == USER_TEXT  # the server's start removed the section an earlier server left
    is_error, text = results[2]
    assert not is_error and text.startswith("result> docmem_view Added 'session:s-42'. Active views: [session:s-42]")
    assert text.endswith("The deploy script needs AWS_PROFILE.\n" + text.splitlines()[-1] + "\n")  # the expansion
    assert text.splitlines()[-1].startswith("</ccmemory-data-")  # comes back for this session, quoted as data
    written = files[2]
    assert written.startswith(USER_TEXT + b"\n# DOCMEM Dynamic\n") and b"gone" not in written
    assert b"## session:s-42\n\n```text\nsession:s-42 session:" in written and b"Fixed the deploy script." in written
    is_error, text = results[3]
    assert is_error and "no-such-node" in text and "docmem_query_nodes" in text
    assert files[3] == written
    is_error, text = results[4]
    assert not is_error and "Active views: []" in text
    assert files[4] == USER_TEXT  # the last view removed: the section is gone, the user's text untouched
    is_error, text = results[5]
    assert not is_error and "was not an active view" in text and files[5] == USER_TEXT



def test_docmem_queries_beside_the_embedding_loop_leave_the_server_running(tmp_path):
    """docmem_query_nodes opens its own read-only connection while the background loop embeds on another.

    Both are on the server's SQLite binding: a connection of the standard library's SQLite beside apsw's (a second
    copy of SQLite in the process) truncated the ``-shm`` file apsw had mapped, and the loop's next read ended the
    server with SIGBUS ("Connection closed" in the client).
    """
    project_dir = tmp_path / "project"
    (project_dir / ".git").mkdir(parents=True)
    home = tmp_path / "home"
    db = database.connect(paths.ensure_private_dir(home) / paths.DB_FILENAME)
    try:
        project = projects.project_id(db, project_dir)
        for number in range(BACKLOG):
            memories.add(db, project_id=project, content=f"Deploy note {number}: the release runs make {number}")
    finally:
        db.close()
    with running_server(home, project_dir) as server:
        for _ in range(QUERIES):
            answer = server.call("docmem_query_nodes", {"sql": "SELECT count(*) AS n FROM nodes"})
            assert not answer.is_error, answer.text
        assert "Deploy note" in server.call("memory_search", {"query": "deploy note release"}).text
