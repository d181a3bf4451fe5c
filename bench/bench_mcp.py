"""MCP server: time to the first ``tools/list``, and ``memory_search`` round trips at 10k memories.

Run: python bench/bench_mcp.py [--starts 7] [--size 10000] [--queries 40]

Start-up is measured as Claude Code 2.1.330 talks to a fresh server process
(captured from ``claude mcp list``): a ``server/discover`` probe carrying the
2026-07-28 envelope, then ``tools/list`` with the same envelope; the clock runs
from spawning the process to the ``tools/list`` answer, then on to the answer of
a first ``memory_search`` (which waits for the database and the embedding model).
Round trips go through the MCP SDK's stdio client in the protocol era Claude
Code 2.1.330 negotiates, against a store of synthetic memories built like
``bench_search.py`` builds it (4,000 really embedded texts, the rest their noisy
copies); every query is new, so each is embedded.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from bench_search import QUERIES, build_store, corpus_vectors, percentile, synthetic_texts  # noqa: E402
from report import write_section  # noqa: E402

from ccmemory import embeddings  # noqa: E402

SERVER = [sys.executable, "-m", "ccmemory.mcp.server"]
BENCH_PROJECT = "/bench"  # the project path bench_search.build_store registers
ENVELOPE = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
                      "io.modelcontextprotocol/clientCapabilities": {}}}


def server_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_PLUGIN_DATA", "CLAUDE_CODE_SESSION_ID")}
    env.update({"CCMEMORY_HOME": str(home), "CLAUDE_PROJECT_DIR": BENCH_PROJECT, "PYTHONPATH": str(ROOT / "src")})
    return env


def one_start(home: Path, cwd: Path) -> tuple[float, float]:
    """Seconds from spawn to the tools/list answer, and to the first memory_search answer."""
    started = time.perf_counter()
    process = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               env=server_env(home), cwd=cwd)
    assert process.stdin and process.stdout

    def request(number: int | str, method: str, params: dict[str, Any]) -> dict[str, Any]:
        message = {"jsonrpc": "2.0", "id": number, "method": method, "params": {**ENVELOPE, **params}}
        process.stdin.write(json.dumps(message).encode() + b"\n")
        process.stdin.flush()
        return json.loads(process.stdout.readline())

    request("server-discover-probe-1", "server/discover", {})
    request(0, "tools/list", {})
    listed = time.perf_counter() - started
    answer = request(1, "tools/call", {"name": "memory_search", "arguments": {"query": "why did the deploy fail"}})
    searched = time.perf_counter() - started
    assert not answer["result"]["isError"], answer
    process.stdin.close()
    process.wait(timeout=30)
    return listed, searched


async def round_trips(home: Path, cwd: Path, queries: int) -> dict[str, list[float]]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=SERVER[0], args=SERVER[1:], env=server_env(home), cwd=str(cwd))
    timings: dict[str, list[float]] = {"hybrid": [], "keyword": []}
    async with Client(params, mode="auto", read_timeout_seconds=120) as client:
        await client.list_tools()
        await client.call_tool("memory_search", {"query": "warm up the model"})
        for mode in timings:
            for number in range(queries):
                query = f"{QUERIES[number % len(QUERIES)]} {mode} {number}"
                started = time.perf_counter()
                result = await client.call_tool("memory_search", {"query": query, "mode": mode})
                timings[mode].append((time.perf_counter() - started) * 1000)
                assert not result.is_error and f"({mode})" in result.content[0].text, result.content[0].text
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=7)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=40)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="ccmemory-bench-mcp-"))
    home = folder / "home"
    os.environ["CCMEMORY_HOME"] = str(home)
    embedder = embeddings.Embedder(embeddings.ModelSpec())
    texts = synthetic_texts(args.size)
    db = build_store(home / "ccmemory.db", texts, corpus_vectors(embedder, texts, real=min(4000, args.size)),
                     embedder.model_id)
    db.close()
    del embedder

    starts = [one_start(home, folder) for _ in range(args.starts)]
    listed = [s for s, _ in starts]
    searched = [s for _, s in starts]
    print(f"first tools/list: median {statistics.median(listed):.2f} s, max {max(listed):.2f} s; "
          f"first search answer: median {statistics.median(searched):.2f} s")
    timings = anyio.run(round_trips, home, folder, args.queries)
    for mode, values in timings.items():
        print(f"{mode}: p50 {statistics.median(values):.1f} ms, p95 {percentile(values, 0.95):.1f} ms")

    lines = [
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}; {time.strftime('%Y-%m-%d')}",
        f"Command: `python bench/bench_mcp.py --starts {args.starts} --size {args.size} --queries {args.queries}`",
        "",
        f"Start-up, {args.starts} fresh server processes over a store of {args.size:,} memories, seconds from spawn "
        "(an enveloped `server/discover` probe, then `tools/list`, as Claude Code 2.1.330 sends them):",
        "",
        "| answer | median | min | max |",
        "|---|---:|---:|---:|",
        f"| first `tools/list` | {statistics.median(listed):.2f} | {min(listed):.2f} | {max(listed):.2f} |",
        f"| first `memory_search` (opens the DB, loads the model) | {statistics.median(searched):.2f} | "
        f"{min(searched):.2f} | {max(searched):.2f} |",
        "",
        f"`memory_search` round trip through the MCP SDK stdio client (2026-07-28 protocol, as Claude Code 2.1.330 "
        f"negotiates it), {args.size:,} memories, limit 5, {args.queries} new queries per mode, warm server; "
        "milliseconds:",
        "",
        "| mode | p50 | p95 | max |",
        "|---|---:|---:|---:|",
    ]
    for mode, values in timings.items():
        lines.append(f"| {mode} | {statistics.median(values):.1f} | {percentile(values, 0.95):.1f} | "
                     f"{max(values):.1f} |")
    write_section("mcp", "MCP server start-up and search round trip", "\n".join(lines))


if __name__ == "__main__":
    main()
