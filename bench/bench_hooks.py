"""Hook wall time as whole processes, beside a bare interpreter start; writes BENCHMARKS.md.

Run: python bench/bench_hooks.py [--runs 60] [--python /usr/bin/python3] [--no-write]

Every sample is a fresh process started the way Claude Code starts it
(``python3 -I -S hooks/run.py <event>``, with the flags hooks.json gives it, with the JSON payload on stdin), timed from
spawn to exit. Bare ``python -c pass`` runs are interleaved with the capture
runs in the same loop, so both see the same machine load. Bytecode caching is
on (as for users); the cache goes to a temporary PYTHONPYCACHEPREFIX so the
repository stays clean, and warm-up runs fill it. As in a real session, where
the MCP server keeps the database open, the benchmark holds one idle
connection, so a hook's close is not the last one (which would checkpoint the WAL).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from report import write_section  # noqa: E402


def default_python() -> str:
    return "/usr/bin/python3" if Path("/usr/bin/python3").exists() else (shutil.which("python3") or sys.executable)


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, int(round(pct / 100 * len(ordered) + 0.5)) - 1))
    return ordered[index]


def hook_flags() -> list[str]:
    """The interpreter flags hooks.json starts every hook with (``-I -S``), so the bench runs what Claude Code runs."""
    import json
    import shlex

    config = json.loads((REPO / "hooks.json").read_text())
    command = config["hooks"]["PostToolUse"][0]["hooks"][0]["command"].split("||")[0]
    words = shlex.split(command)
    return [word for word in words[1:] if word.startswith("-")]


def timed(command: list[str], payload: bytes | None, env: dict[str, str]) -> float:
    start = time.perf_counter()
    result = subprocess.run(command, input=payload, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    elapsed = (time.perf_counter() - start) * 1000
    if result.returncode != 0 or (result.stdout and b"SessionStart" not in result.stdout):
        raise SystemExit(f"{command} misbehaved: rc={result.returncode} stdout={result.stdout[:200]!r}")
    return elapsed


def bash_payload(project: Path, session: str, number: int) -> bytes:
    return json.dumps({
        "session_id": session, "transcript_path": str(project / f"{session}.jsonl"), "cwd": str(project),
        "prompt_id": "p1", "permission_mode": "default", "effort": {"level": "medium"},
        "hook_event_name": "PostToolUse", "tool_name": "Bash",
        "tool_input": {"command": f"pytest -q tests/test_{number}.py", "description": "Run the tests"},
        "tool_response": {"stdout": f"{number} passed in 0.{number}s\n" * 3, "stderr": "", "interrupted": False,
                          "isImage": False, "noOutputExpected": False},
        "tool_use_id": f"toolu_bench_{session}_{number}", "duration_ms": 800,
    }).encode()


def event_payload(project: Path, session: str, event: str, **fields: object) -> bytes:
    return json.dumps({"session_id": session, "transcript_path": str(project / f"{session}.jsonl"),
                       "cwd": str(project), "hook_event_name": event, **fields}).encode()


def seed_memory_files(home: Path, project: Path, count: int = 5) -> None:
    """Memory files of Claude's memory tool (2 KB each, one user-wide) for SessionStart to inject."""
    sys.path.insert(0, str(REPO / "src"))
    from ccmemory import db as database, projects
    from ccmemory.files import commands

    db = database.connect(home / "ccmemory.db")
    try:
        call = commands.Call(projects.project_id(db, project), None, "bench")
        for number in range(count):
            where = "/memories/user" if number == 0 else "/memories"
            commands.execute(db, {"command": "create", "path": f"{where}/notes{number}.md",
                                  "file_text": f"# Notes {number}\n" + "- a line of notes\n" * 110}, call)
    finally:
        db.close()


def summarize(label: str, samples: list[float]) -> str:
    return (f"| {label} | {len(samples)} | {statistics.median(samples):.1f} | {percentile(samples, 95):.1f} | "
            f"{max(samples):.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=60, help="capture runs (and bare starts); at least 50")
    parser.add_argument("--python", default=default_python(), help="interpreter Claude Code would start")
    parser.add_argument("--no-write", action="store_true", help="print only; leave BENCHMARKS.md alone")
    args = parser.parse_args()
    hooks = REPO / "hooks"
    flags = hook_flags()
    python = args.python
    with tempfile.TemporaryDirectory(prefix="ccmemory-bench-hooks-") as tmp:
        base = Path(tmp)
        project = base / "project"
        (project / ".git").mkdir(parents=True)
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH", "CLAUDE_PLUGIN_DATA", "CCMEMORY_DISABLE")}
        env.update(CCMEMORY_HOME=str(base / "home"), PYTHONPYCACHEPREFIX=str(base / "pycache"))
        capture = [python, *flags, str(hooks / "run.py"), "post_tool_use"]
        bare = [python, "-c", "pass"]
        for number in range(3):  # warm-up: bytecode cache, database creation
            timed(capture, bash_payload(project, "warmup", number), env)
            timed(bare, None, env)
        held = sqlite3.connect(str(base / "home" / "ccmemory.db"))  # stands in for the MCP server's connection
        held.execute("SELECT COUNT(*) FROM memories").fetchall()
        floor = [python, "-c", "import json, sqlite3"]
        bare_ms: list[float] = []
        floor_ms: list[float] = []
        capture_ms: list[float] = []
        for number in range(args.runs):
            bare_ms.append(timed(bare, None, env))
            floor_ms.append(timed(floor, None, env))
            capture_ms.append(timed(capture, bash_payload(project, "main", number), env))

        seed_memory_files(base / "home", project)
        start_ms, stop_ms, end_ms = [], [], []
        for number in range(20):
            session = f"s{number}"
            for call in range(3):
                timed(capture, bash_payload(project, session, call), env)
            stop_ms.append(timed([python, *flags, str(hooks / "run.py"), "stop"], event_payload(
                project, session, "Stop", stop_hook_active=False,
                last_assistant_message="Fixed the failing tests because the fixture leaked state."), env))
            end_ms.append(timed([python, *flags, str(hooks / "run.py"), "session_end"],
                                event_payload(project, session, "SessionEnd", reason="other"), env))
            start_ms.append(timed([python, *flags, str(hooks / "run.py"), "session_start"],
                                  event_payload(project, f"next{number}", "SessionStart", source="startup"), env))
        held.close()

    version = subprocess.run([python, "-c", "import platform; print(platform.python_version())"],
                             capture_output=True, text=True).stdout.strip()
    ratio = statistics.median(capture_ms) / statistics.median(bare_ms)
    body = "\n".join([
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}; "
        f"{time.strftime('%Y-%m-%d')}; load average at the end {os.getloadavg()[0]:.1f}",
        f"Interpreter: `{python}` (Python {version}), stdlib only on the hook path",
        f"Command: `python bench/bench_hooks.py --runs {args.runs} --python {python}`",
        "",
        "Whole-process wall time in milliseconds, from spawn to exit, payload on stdin; one idle connection held "
        "open as the MCP server does.",
        "",
        "| process | runs | p50 | p95 | max |",
        "|---|---:|---:|---:|---:|",
        summarize("`python -c pass` (bare start)", bare_ms),
        summarize("`python -c 'import json, sqlite3'` (the floor of a stdlib hook)", floor_ms),
        summarize("PostToolUse capture (Bash observation)", capture_ms),
        summarize("Stop (extractive summary of 3 calls + a local-context entry)", stop_ms),
        summarize("SessionEnd (end + promote)", end_ms),
        summarize(f"SessionStart (5 memory files, local context, up to {args.runs + 63} memories)", start_ms),
        "",
        f"Capture p50 / bare p50 = **{ratio:.2f}×** (goal ≤ 2×); importing json and sqlite3 alone is "
        f"{statistics.median(floor_ms) / statistics.median(bare_ms):.2f}× bare. SessionEnd's budget in Claude Code "
        "is 1,500 ms for all its hooks together.",
    ])
    print(body)
    if not args.no_write:
        write_section("hooks", "Hook latency", body)


if __name__ == "__main__":
    main()
