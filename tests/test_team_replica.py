"""A team larger than ``sync.replica_max``: a machine keeps part of it, and its searches ask the server for the rest.

Against a real PostgreSQL 16 + pgvector (``testing.postgres``), through the real command line and
the real MCP server over stdio. The server is halted as a crash would halt it to show the fallback.
"""

from __future__ import annotations

import json
from pathlib import Path


from testing import postgres
from testing.mcp import running_server
from testing.team import Machine, Server, make_origin

WORDS = ["walrus", "pelican", "narwhal", "ocelot", "tapir", "quokka", "axolotl"]
REPLICA_MAX = 3


def _trimmed_machines(tmp_path: Path, cluster: postgres.Cluster) -> tuple[Server, Machine, Machine, dict[str, str]]:
    """A teammate who shared one memory per word, and a laptop keeping :data:`REPLICA_MAX` of them."""
    server = Server(cluster)
    origin = make_origin(tmp_path / "origin")
    teammate = Machine(tmp_path, "teammate", origin, server.member("alice"))
    laptop = Machine(tmp_path, "laptop", origin, server.member("bob"))
    laptop.add("warm-up so the project exists here")
    laptop.run("config", "set", "sync.replica_max", str(REPLICA_MAX))
    ids = teammate.fill([f"The {word} gateway listens on port {8000 + n}" for n, word in enumerate(WORDS)])
    assert teammate.sync()["pushed"] == len(WORDS)
    report = laptop.sync()
    assert report["trimmed"] == len(WORDS) - REPLICA_MAX, report
    kept = laptop.memories()
    assert sum(memory_id in kept for memory_id in ids) == REPLICA_MAX
    only_on_server = {word: memory_id for word, memory_id in zip(WORDS, ids) if memory_id not in kept}
    return server, teammate, laptop, only_on_server


def test_a_search_finds_a_team_memory_that_is_only_on_the_server(tmp_path: Path, cluster: postgres.Cluster) -> None:
    server, _teammate, laptop, only_on_server = _trimmed_machines(tmp_path, cluster)
    word, memory_id = next(iter(only_on_server.items()))
    result = laptop.run("search", f"{word} gateway port", "--mode", "keyword", "--json")
    hits = json.loads(result.stdout)
    assert hits[0]["memory"]["id"] == memory_id, hits
    assert hits[0]["shared"]["by"] == server.roles["alice"]  # labelled as a teammate's, like a pulled one
    assert "team server" not in result.stderr
    assert memory_id in laptop.memories()  # kept as a cache: the same search works offline now
    assert memory_id not in [hit["memory"]["id"] for hit in laptop.search(f"{word} gateway port", "--no-team")]
    # Every memory only on the server shares a word of the query, so all came as a cache; the next round
    # trims it back to the limit, and --full pulls everything again and trims the same way.
    assert laptop.sync()["trimmed"] == len(only_on_server)
    assert json.loads(laptop.run("sync", "--full", "--json").stdout)["trimmed"] == len(WORDS) - REPLICA_MAX


def test_a_question_in_words_finds_a_server_memory_that_lacks_some_of_them(tmp_path: Path,
                                                                          cluster: postgres.Cluster) -> None:
    """The server is asked for any of the question's words, as the local keyword side reads it, not all."""
    _server, _teammate, laptop, only_on_server = _trimmed_machines(tmp_path, cluster)
    word, memory_id = next(iter(only_on_server.items()))
    hits = laptop.search(f"Which port does our {word} gateway use in the staging cluster?")
    assert hits and hits[0]["memory"]["id"] == memory_id, hits


def test_with_the_server_stopped_the_search_returns_local_results_and_a_warning(
        tmp_path: Path, cluster: postgres.Cluster) -> None:
    _server, _teammate, laptop, only_on_server = _trimmed_machines(tmp_path, cluster)
    word = next(iter(only_on_server))
    cluster.halt()
    try:
        with running_server(laptop.home, laptop.project, CCMEMORY_SYNC_URL=laptop.url or "") as mcp:
            answer = mcp.call("memory_search", {"query": f"{word} gateway port", "mode": "keyword"})
        cli = laptop.run("search", f"{word} gateway port", "--mode", "keyword")
    finally:
        cluster.resume()
    assert not answer.is_error, answer.text
    assert "team server could not be asked" in answer.text and "kept on this machine" in answer.text, answer.text
    assert "gateway listens" in answer.text  # the local team memories still answer
    assert "team server could not be asked" in cli.stderr, cli.stderr
    assert "Traceback" not in cli.stderr and "PASSWORD" not in cli.stderr.upper().replace("***", "")
