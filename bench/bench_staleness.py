"""What staleness against the code costs: the capture hook before and after, and search with and without it.

Run: python bench/bench_staleness.py [--baseline REV] [--runs 40] [--memories 10000] [--no-write]

1. **Capture, whole work.** The hook forks its storing into a detached child, so the tool call only
   waits for the parent; here each sample is timed from spawn until the child has stored the
   observation (its ``inflight`` marker is gone), for a Read of a real 8 KB project file. The
   baseline tree (``--baseline``, default ``main``) is exported with ``git archive`` and run in the
   same loop, interleaved with this tree and a bare ``python -c pass`` start, so all three see the same
   load; the figures are ratios to the bare start.
2. **Search.** One store of ``--memories`` captured Reads and Edits naming 400 project files, of
   which a quarter changed since and a few are gone; keyword searches (limit 5) run against it and
   against a copy whose rows record no file states (what a store captured before staleness holds),
   alternated in one process. The first search of each store also fingerprints the files it sees;
   that one-off cost is reported apart.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "bench"))

from bench_hooks import default_python, hook_flags  # noqa: E402
from report import shared_machine, write_section  # noqa: E402

WORDS = ["pricing", "discount", "invoice", "cart", "tax", "refund", "coupon", "ledger", "payout", "webhook"]


def read_payload(project: Path, session: str, number: int, name: str) -> bytes:
    path = project / name
    return json.dumps({
        "session_id": session, "transcript_path": str(project / f"{session}.jsonl"), "cwd": str(project),
        "hook_event_name": "PostToolUse", "tool_name": "Read", "tool_input": {"file_path": str(path)},
        "tool_response": {"type": "text", "file": {"filePath": str(path), "content": "x", "numLines": 200,
                                                   "totalLines": 200}},
        "tool_use_id": f"toolu_{session}_{number}",
    }).encode()


def until_stored(command: list[str], payload: bytes | None, env: dict[str, str], home: Path) -> float:
    """Milliseconds from spawn until the process and its detached capture child are done."""
    start = time.perf_counter()
    result = subprocess.run(command, input=payload, capture_output=True, env=env)
    if result.returncode != 0:
        raise SystemExit(f"{command} failed: {result.stderr[:300]!r}")
    folder = home / "inflight"
    while folder.exists() and any(folder.iterdir()):
        time.sleep(0.0005)
    return (time.perf_counter() - start) * 1000


def bench_capture(baseline: str, runs: int, python: str) -> list[str]:
    with tempfile.TemporaryDirectory(prefix="ccmemory-bench-stale-") as tmp:
        base = Path(tmp)
        before = base / "before"
        before.mkdir()
        archive = subprocess.run(["git", "-C", str(REPO), "archive", baseline, "hooks", "src"], capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
        project = base / "project"
        (project / ".git").mkdir(parents=True)
        for number in range(20):
            (project / f"module_{number}.py").write_text("def f():\n    return 1\n" * 400)
        flags = hook_flags()
        clean = {k: v for k, v in os.environ.items()
                 if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH", "CLAUDE_PLUGIN_DATA", "CCMEMORY_DISABLE")}
        trees = {"before": before, "after": REPO}
        envs = {label: {**clean, "CCMEMORY_HOME": str(base / f"home-{label}"),
                        "PYTHONPYCACHEPREFIX": str(base / f"pycache-{label}")} for label in trees}
        commands = {label: [python, *flags, str(tree / "hooks" / "run.py"), "post_tool_use"]
                    for label, tree in trees.items()}
        bare = [python, "-c", "pass"]
        times: dict[str, list[float]] = {"bare": [], "before": [], "after": []}
        for number in range(runs + 3):
            sample = {"bare": until_stored(bare, None, envs["after"], base / "none")}
            for label in ("before", "after") if number % 2 else ("after", "before"):
                payload = read_payload(project, "s", number, f"module_{number % 20}.py")
                sample[label] = until_stored(commands[label], payload, envs[label], base / f"home-{label}")
            if number >= 3:  # the first runs fill the bytecode caches and create the databases
                for label, value in sample.items():
                    times[label].append(value)
    bare_p50 = statistics.median(times["bare"])
    rows = [f"| {label} | {statistics.median(times[label]):.1f} | {statistics.median(times[label]) / bare_p50:.2f}× |"
            for label in ("bare", "before", "after")]
    return ["| capture of a Read, spawn until stored | p50 ms | / bare |", "|---|---:|---:|", *rows]


def build_store(path: Path, project: Path, count: int, seed: int = 7) -> None:
    from ccmemory import db as database, memories, projects, staleness

    rng = random.Random(seed)
    names = [f"src/{rng.choice(WORDS)}_{number}.py" for number in range(400)]
    for name in names:
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(f"# {name}\n" + "x = 1\n" * rng.randint(10, 2000))
    db = database.connect(path, vectors=False)
    try:
        project_id = projects.project_id(db, project)
        with db.transaction():
            for number in range(count):
                named = rng.sample(names, rng.randint(1, 3))
                files = [str(project / name) for name in named]
                tool = "Edit" if number % 4 == 0 else "Read"
                content = f"{'Edited' if tool == 'Edit' else 'Read'} {' '.join(named)} {rng.choice(WORDS)}"
                metadata = {"tool": tool, staleness.SEEN_KEY: staleness.record(files, str(project))}
                memories.add(db, project_id=project_id, content=content, sector="episodic", tier="project",
                             files=files, session_id=f"s{number // 50}", source="capture", metadata=metadata)
    finally:
        db.close()
    for name in names[:100]:  # a quarter changed since, a few gone
        (project / name).write_text("changed\n" + (project / name).read_text())
    for name in names[100:110]:
        (project / name).unlink()


def bench_search(count: int, queries: int) -> tuple[list[str], dict[str, float]]:
    from ccmemory import db as database, memories, projects, search, staleness

    with tempfile.TemporaryDirectory(prefix="ccmemory-bench-stale-search-") as tmp:
        base = Path(tmp)
        project = base / "project"
        (project / ".git").mkdir(parents=True)
        with_states, without = base / "with.db", base / "without.db"
        build_store(with_states, project, count)
        shutil.copy(with_states, without)
        plain = database.connect(without, vectors=False)
        plain.execute("UPDATE memories SET metadata = json_remove(metadata, '$.seen')")
        plain.close()
        stores = {"with": database.connect(with_states, vectors=False), "without": database.connect(without,
                                                                                                    vectors=False)}
        project_id = projects.project_id(stores["with"], project)
        rng = random.Random(3)
        asked = [f"{rng.choice(WORDS)} {rng.choice(WORDS)}" for _ in range(queries)]
        first: dict[str, float] = {}
        for label, db in stores.items():  # the first search fingerprints what it sees
            start = time.perf_counter()
            search.search(db, asked[0], project_id=project_id, mode="keyword", track=False)
            first[label] = (time.perf_counter() - start) * 1000
        times: dict[str, list[float]] = {"with": [], "without": []}
        stale_hits = shown = 0
        for query in asked:
            for label, db in stores.items():
                start = time.perf_counter()
                hits = search.search(db, query, project_id=project_id, mode="keyword", track=False)
                times[label].append((time.perf_counter() - start) * 1000)
                if label == "with":
                    stale_hits, shown = stale_hits + sum(1 for hit in hits if hit.stale), shown + len(hits)
        stored = memories.list_memories(stores["with"], project_id=project_id, limit=count)
        stale_stored = len(staleness.check(stores["with"], stored, learn=False)) / max(1, len(stored))
        for db in stores.values():
            db.close()
    rows = ["| keyword search, limit 5 | p50 ms | p95 ms |", "|---|---:|---:|"]
    for label, title in (("without", "rows without file states"), ("with", "rows with file states (checked)")):
        ordered = sorted(times[label])
        rows.append(f"| {title} | {statistics.median(ordered):.2f} | {ordered[int(len(ordered) * 0.95) - 1]:.2f} |")
    return rows, {"first_with": first["with"], "first_without": first["without"],
                  "stale_stored": stale_stored, "stale_shown": stale_hits / max(1, shown)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", default="main", help="git revision the capture is compared with")
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--python", default=default_python())
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    capture = bench_capture(args.baseline, args.runs, args.python)
    searching, extra = bench_search(args.memories, args.queries)
    body = "\n".join([
        shared_machine(),
        f"Command: `python bench/bench_staleness.py --baseline {args.baseline} --runs {args.runs} "
        f"--memories {args.memories} --queries {args.queries}` (hooks on `{args.python}`)",
        "",
        f"Capture, whole work (parent and detached child), interleaved with `{args.baseline}` (before) in one loop:",
        "",
        *capture,
        "",
        f"Search over {args.memories:,} captured memories naming 400 files (100 changed since, 10 gone), "
        "alternated in one process:",
        "",
        *searching,
        "",
        f"The first search of the store with file states, which also fingerprints the files it sees: "
        f"{extra['first_with']:.1f} ms (without: {extra['first_without']:.1f} ms). "
        f"{extra['stale_stored']:.0%} of the stored memories are stale, {extra['stale_shown']:.0%} of the hits shown "
        "(stale ones keep 0.7 of their score, so current ones about the same words come first).",
    ])
    print(body)
    if not args.no_write:
        write_section("staleness", "Staleness against the code: capture and search cost", body)


if __name__ == "__main__":
    main()
