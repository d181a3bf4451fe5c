"""What the plugin costs a real session: a scripted 50-tool-call `claude -p` run with the plugin vs without.

Run: python bench/bench_session.py [--calls 50] [--rounds 3] [--versions 2.1.197,2.1.330] [--turn-seconds 0,1]

The real Claude Code CLI (each version installed under ``~/.cache/ccmemory-test``)
talks to the fake Messages API on 127.0.0.1 (``testing/fake_anthropic.py``),
which answers every turn with one Bash tool call (``true``) until ``--calls``
calls have run, then a closing text. Two throwaway users per version: one
without the plugin, one with it installed from this working copy, as a user
would. Rounds alternate between them so machine load hits both alike. After
each plugin run the bench checks that every tool call was stored, in order.
``--turn-seconds`` sets how long the fake model takes per turn: at 0 the 50 calls
follow each other within milliseconds, far faster than any model, so every
capture process competes with the next call for the 2 cores; a real model takes
seconds per turn, during which the background captures finish.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from report import shared_machine, write_section  # noqa: E402
from testing.claude_code import ClaudeCode  # noqa: E402
from testing.fake_anthropic import FakeAnthropic, text, tool_use  # noqa: E402

PREFIX = Path.home() / ".cache" / "ccmemory-test"
SETTLE_SECONDS = 30


def binary(version: str) -> Path:
    folder = PREFIX / f"claude-code-{version}"
    if not folder.exists() and version == "2.1.330":
        folder = PREFIX / "claude-code"
    [found] = list(folder.glob("node_modules/@anthropic-ai/claude-code-*/claude"))
    return found


def script(calls: int):
    def answer(body: dict) -> list[dict]:
        done = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        if done >= calls:
            return [text("Done.")]
        return [dict(tool_use("Bash", command=f"true {done}", description=f"step {done}"), id=f"toolu_step{done:03d}")]
    return answer


def run_session(cc: ClaudeCode, project: Path) -> float:
    started = time.perf_counter()
    cc.run("-p", "Run the steps", "--allowedTools", "Bash", "--output-format", "json", cwd=project, timeout=600,
           env={"ENABLE_TOOL_SEARCH": "false"})
    return time.perf_counter() - started


def stored_in_order(db_path: Path, calls: int, session_ids_before: set[str]) -> tuple[int, bool, set[str]]:
    """How many steps the newest session stored, and whether their order (created_at, seq) is the calls' order."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=10)
        sessions = {row[0] for row in db.execute("SELECT id FROM sessions")}
        new = sessions - session_ids_before
        steps = [row[0] for row in db.execute(
            "SELECT json_extract(metadata, '$.tool_use_id') FROM memories WHERE source = 'capture' AND session_id IN "
            f"({','.join('?' * len(new))}) ORDER BY created_at, seq", tuple(new))] if new else []
        db.close()
        if len(steps) >= calls or time.monotonic() > deadline:
            return len(steps), steps == sorted(steps), sessions
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--versions", default="2.1.197,2.1.330")
    parser.add_argument("--turn-seconds", default="0,1", help="the fake model's time per turn, one run for each")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="ccmemory-bench-session-"))
    results = []
    for version in args.versions.split(","):
        with FakeAnthropic(script(args.calls)) as fake:
            users = {}
            for name in ("without", "with"):
                cc = ClaudeCode(binary(version), root / version / name, fake.url)
                project = root / version / name / "project"
                project.mkdir(parents=True)
                (project / ".git").mkdir()
                if name == "with":
                    cc.install_plugin(project)
                users[name] = (cc, project)
            run_session(*users["without"])  # warm-up: first start of this CLI, file caches
            run_session(*users["with"])
            db_path = users["with"][0].data / "ccmemory.db"
            for turn_seconds in (float(value) for value in args.turn_seconds.split(",")):
                fake.delay = turn_seconds
                timings: dict[str, list[float]] = {"without": [], "with": []}
                _, _, known = stored_in_order(db_path, 0, set())
                checks = []
                for _ in range(args.rounds):
                    for name in ("without", "with"):
                        timings[name].append(run_session(*users[name]))
                    stored, ordered, known = stored_in_order(db_path, args.calls, known)
                    checks.append((stored, ordered))
                ratio = statistics.median(timings["with"]) / statistics.median(timings["without"])
                results.append((version, turn_seconds, timings, ratio, checks))
                print(version, turn_seconds, {k: [round(t, 2) for t in v] for k, v in timings.items()},
                      f"ratio {ratio:.3f}", checks, flush=True)
    lines = [
        shared_machine(),
        f"Command: `python bench/bench_session.py --calls {args.calls} --rounds {args.rounds} "
        f"--versions {args.versions} --turn-seconds {args.turn_seconds}`",
        "",
        f"Wall time of `claude -p` running {args.calls} Bash tool calls scripted by the fake API on loopback, "
        "plugin installed vs not, rounds alternating; seconds (median of the rounds). \"model s/turn\" is how "
        "long the fake model takes to answer each turn (a real model takes seconds); \"in call order\": the "
        "stored observations sorted by the time each payload arrived follow the calls.",
        "",
        "| Claude Code | model s/turn | without plugin | with plugin | ratio | observations stored per run "
        "| in call order |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    for version, turn_seconds, timings, ratio, checks in results:
        lines.append(
            f"| {version} | {turn_seconds:g} | {statistics.median(timings['without']):.2f} "
            f"| {statistics.median(timings['with']):.2f} | **{ratio:.3f}** "
            f"| {', '.join(str(s) for s, _ in checks)} of {args.calls} | "
            f"{'yes' if all(o for _, o in checks) else 'no'} |")
    lines += ["", "At 0 s a turn the calls come milliseconds apart, so every call's capture process (a Python start, "
                  "~20 ms of CPU at least) competes with the next call for the 2 cores, and Stop waits (at most 5 s) "
                  "for the captures still running; their arrival stamps are taken once each process has started, "
                  "so calls closer than that may swap places. With any model time per turn the captures finish "
                  "in the background and what remains is the session's fixed costs."]
    write_section("session", "A 50-tool-call session with and without the plugin", "\n".join(lines))


if __name__ == "__main__":
    main()
