"""Does a Claude Code version honour ``"async": true`` on a PostToolUse hook? Measured, not assumed.

Run: python bench/bench_async_hooks.py [--versions 2.1.197,2.1.330] [--calls 4] [--sleep 2]

A throwaway user's ``settings.json`` holds one PostToolUse hook that sleeps
``--sleep`` seconds and then appends the tool call's id to a file. The fake
Messages API on loopback scripts ``--calls`` Bash calls. The session runs once
with the hook synchronous and once with ``"async": true``: when async is
honoured, the second run is about calls x sleep seconds shorter. The file then
says whether each async hook still finished, under ``-p``, before teardown.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_session import binary, run_session, script  # noqa: E402
from report import shared_machine, write_section  # noqa: E402
from testing.claude_code import ClaudeCode  # noqa: E402
from testing.fake_anthropic import FakeAnthropic  # noqa: E402


def configure(cc: ClaudeCode, asynchronous: bool, sleep: float, record: Path) -> None:
    command = (f"sleep {sleep}; {sys.executable} -c \"import json, sys; "
               f"open({str(record)!r}, 'a').write(json.load(sys.stdin)['tool_use_id'] + chr(10))\"")
    hook: dict = {"type": "command", "command": command, "timeout": 60}
    if asynchronous:
        hook["async"] = True
    settings = {"hooks": {"PostToolUse": [{"matcher": "*", "hooks": [hook]}]}}
    (cc.home / ".claude").mkdir(parents=True, exist_ok=True)
    (cc.home / ".claude" / "settings.json").write_text(json.dumps(settings))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", default="2.1.197,2.1.330")
    parser.add_argument("--calls", type=int, default=4)
    parser.add_argument("--sleep", type=float, default=2.0)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="ccmemory-bench-async-"))
    rows = []
    for version in args.versions.split(","):
        with FakeAnthropic(script(args.calls)) as fake:
            outcome = {}
            for asynchronous in (False, True):
                folder = root / version / ("async" if asynchronous else "sync")
                cc = ClaudeCode(binary(version), folder, fake.url)
                project = folder / "project"
                project.mkdir(parents=True)
                record = folder / "hook-ran.txt"
                configure(cc, asynchronous, args.sleep, record)
                seconds = run_session(cc, project)
                time.sleep(args.sleep + 1)
                ran = len(record.read_text().splitlines()) if record.exists() else 0
                outcome[asynchronous] = (seconds, ran)
        rows.append((version, outcome))
        print(version, outcome, flush=True)
    lines = [
        shared_machine(),
        f"Command: `python bench/bench_async_hooks.py --versions {args.versions} --calls {args.calls} "
        f"--sleep {args.sleep:g}`",
        "",
        f"`claude -p` with {args.calls} Bash calls and a PostToolUse hook that sleeps {args.sleep:g} s, "
        "synchronous vs `\"async\": true` (fake API on loopback); seconds, and how many hook runs finished:",
        "",
        "| Claude Code | sync | async | saved | sync hooks finished | async hooks finished |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for version, outcome in rows:
        (sync_s, sync_ran), (async_s, async_ran) = outcome[False], outcome[True]
        lines.append(f"| {version} | {sync_s:.1f} | {async_s:.1f} | {sync_s - async_s:.1f} | "
                     f"{sync_ran}/{args.calls} | {async_ran}/{args.calls} |")
    lines += ["", "Both versions run async hooks without making the tool call wait. An async hook still running "
                  "when `claude -p` exits is ended with it, so ccmemory's capture hook forks after reading its "
                  "payload and stores the observation from a child in a session of its own (every call stored: "
                  "see the 50-call session section)."]
    write_section("async-hooks", "Are async hooks honoured?", "\n".join(lines))


if __name__ == "__main__":
    main()
