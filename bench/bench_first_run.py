"""What the plugin's MCP launcher costs: the first-run build, and every later server start.

Run: python bench/bench_first_run.py [--starts 5] [--no-write]

First run: ``scripts/mcp_launcher.py --install`` into an empty data directory, once with
pip and no pip cache (what a user without uv gets), once with uv and an empty uv cache
when uv is on PATH. Both download the dependencies from PyPI. Later starts: spawn the
launcher the way Claude Code does and time until the server answers ``initialize`` on
stdout, beside starting ``python -m ccmemory.mcp.server`` directly.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LAUNCHER = REPO / "scripts" / "mcp_launcher.py"
sys.path.insert(0, str(REPO / "bench"))

from report import write_section  # noqa: E402

INITIALIZE = json.dumps({
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
}) + "\n"


def clean_env(data: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CCMEMORY_", "CLAUDE_"))}
    env.update({"CCMEMORY_HOME": str(data), **extra})
    return env


def first_run(installer: str, scratch: Path) -> tuple[float, int]:
    """Seconds for ``--install`` into an empty data dir, and the environment's size in MB."""
    data = scratch / f"data-{installer}"
    if installer == "pip":
        path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if not (Path(p) / "uv").exists())
        env = clean_env(data, PATH=path, PIP_NO_CACHE_DIR="1")
    else:
        env = clean_env(data, UV_CACHE_DIR=str(scratch / "uv-cache"))
    start = time.perf_counter()
    subprocess.run([sys.executable, str(LAUNCHER), "--install"], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    [venv] = [p for p in data.glob("venv-*") if p.is_dir()]
    size = sum(f.stat().st_size for f in venv.rglob("*") if f.is_file() and not f.is_symlink())
    return seconds, size // 1_000_000


def time_to_initialize(command: list[str], env: dict[str, str]) -> float:
    """Milliseconds from spawn to the answer to ``initialize``."""
    start = time.perf_counter()
    server = subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, cwd=REPO)
    assert server.stdin and server.stdout
    server.stdin.write(INITIALIZE)
    server.stdin.flush()
    answer = server.stdout.readline()
    elapsed = (time.perf_counter() - start) * 1000
    server.stdin.close()
    server.wait(timeout=30)
    if '"result"' not in answer:
        raise SystemExit(f"{command} did not answer initialize: {answer[:200]!r}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="ccmemory-bench-first-run-") as tmp:
        scratch = Path(tmp)
        builds = {"pip": first_run("pip", scratch)}
        if shutil.which("uv"):
            builds["uv"] = first_run("uv", scratch)
        env = clean_env(scratch / "data-pip", PYTHONPATH=str(REPO / "src"))
        [venv] = [p for p in (scratch / "data-pip").glob("venv-*") if p.is_dir()]
        venv_python = str(venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python"))
        launcher_ms = [time_to_initialize([sys.executable, str(LAUNCHER)], env) for _ in range(args.starts)]
        direct_ms = [time_to_initialize([venv_python, "-m", "ccmemory.mcp.server"], env) for _ in range(args.starts)]

    lines = [
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}; {time.strftime('%Y-%m-%d')}",
        f"Command: `python bench/bench_first_run.py --starts {args.starts}`",
        "",
        "First run after installing the plugin (`scripts/mcp_launcher.py --install` into an empty data",
        "directory; dependencies downloaded from PyPI, no cache). Claude Code gives an MCP server 30 s",
        "to connect; a slower first build goes on in the background and serves the next session.",
        "",
        "| installer | first-run build | environment size |",
        "|---|---:|---:|",
        *[f"| {name} | {seconds:.1f} s | {size} MB |" for name, (seconds, size) in builds.items()],
        "",
        f"Every later start, spawn to `initialize` answered (median of {args.starts}): through the launcher "
        f"**{statistics.median(launcher_ms):.0f} ms**, `python -m ccmemory.mcp.server` directly "
        f"{statistics.median(direct_ms):.0f} ms.",
    ]
    body = "\n".join(lines)
    print(body)
    if not args.no_write:
        write_section("first-run", "Plugin first run and MCP server start", body)


if __name__ == "__main__":
    main()
