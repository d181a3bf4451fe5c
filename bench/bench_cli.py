"""Whole-process CLI timings (list, get, add, stats, search keyword and hybrid), this build vs the previous one.

Run: python bench/bench_cli.py [--embedded DB] [--previous COMMIT] [--runs 7]

Both builds run as whole ``ccmemory`` processes (spawn to exit) under the same
interpreter, alternating command by command so machine load hits both alike.
The previous build is ``git archive`` of ``--previous`` (default: the commit
before this work) unpacked in a temporary folder. Each build gets its own copy
of the same store: ``coderecall-dev.json.gz`` replayed through the hooks, with
every memory's vector (``--embedded``: a replayed store embedded by
``bench/bench_embed.py``; the previous build gets them as float32, its layout).
Then, in one process, what loading the model costs this build.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

import numpy

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_embed import DATASET, DEFAULT_STORE, fresh_copy, replayed_store  # noqa: E402
from report import shared_machine, write_section  # noqa: E402

PREVIOUS = "f6e066b"
QUERY = "progress bar hidden when not a tty"
LAUNCH = "import sys; sys.path.insert(0, {src!r}); sys.argv[0] = 'ccmemory'; from ccmemory.cli import main; main()"


def previous_source(commit: str, folder: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit, "src"], capture_output=True, check=True)
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(folder, filter="data")
    return folder / "src"


def timed(src: Path, home: Path, project: Path, *args: str) -> float:
    env = {**os.environ, "CCMEMORY_HOME": str(home)}
    env.pop("CLAUDE_PROJECT_DIR", None)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", LAUNCH.format(src=str(src)), *args], cwd=project, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - started) * 1000


def give_float_vectors(previous_db: Path, embedded: Path) -> None:
    """The previous layout of the same vectors: float32, under the model id the previous build uses."""
    source = sqlite3.connect(embedded)
    rows = source.execute("SELECT e.item_seq, m.model_id, e.vector FROM memory_embeddings e "
                          "JOIN embedding_models m ON m.id = e.model").fetchall()  # this build: a model number
    source.close()
    conn = sqlite3.connect(previous_db)
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    for seq, model_id, vector in rows:
        values = numpy.frombuffer(vector, dtype=numpy.int8).astype(numpy.float32)
        values /= max(float(numpy.linalg.norm(values)), 1e-12)
        conn.execute("INSERT OR REPLACE INTO memory_embeddings(item_seq, model_id, vector, indexed, created_at) "
                     "VALUES (?, ?, ?, 0, ?)", (seq, model_id, values.tobytes(), now))
        conn.execute("UPDATE memories SET needs_embedding = 0 WHERE seq = ?", (seq,))
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('embeddings_model:memory', ?)", (rows[0][1],))
    conn.commit()
    conn.close()


def model_cost() -> dict[str, float]:
    """Milliseconds, in a fresh process, to import the runtime, load the model and embed one query."""
    probe = (
        "import time, os; t0 = time.perf_counter(); import onnxruntime, tokenizers; t1 = time.perf_counter(); "
        "from ccmemory import embeddings; e = embeddings.Embedder(); t2 = time.perf_counter(); "
        f"e.embed_query({QUERY!r}); t3 = time.perf_counter(); "
        "print((t1 - t0) * 1000, (t2 - t1) * 1000, (t3 - t2) * 1000)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(REPO / "src")}).stdout.split()
    return {"import onnxruntime + tokenizers": float(out[0]), "load the model (sha256 stamp, session)": float(out[1]),
            "embed one query": float(out[2])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=DEFAULT_STORE)
    parser.add_argument("--data", type=Path, default=DATASET, help="coderecall-dev.json.gz (default: ../shared/bench-data)")
    parser.add_argument("--embedded", type=Path, required=True, help="the replayed store embedded by this build")
    parser.add_argument("--previous", default=PREVIOUS,
                        help="a commit to compare with, or none (a build older than the replay's schema cannot read it)")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="ccmemory-bench-cli-"))
    project = folder / "project"
    project.mkdir()
    (project / ".git").mkdir()
    builds = {"this build": REPO / "src"}
    if args.previous != "none":  # its store is the replay made by this build's hooks, migrated by its own code
        builds = {"previous": previous_source(args.previous, folder / "previous-build"), **builds}
    homes = {name: folder / f"home-{index}" for index, name in enumerate(builds)}
    source = replayed_store(args.store, args.data) if "previous" in builds else args.embedded
    for name, home in homes.items():
        home.mkdir()
        if name == "this build":
            shutil.copyfile(args.embedded, home / "ccmemory.db")
        else:
            shutil.copyfile(fresh_copy(source, folder, "previous-store"), home / "ccmemory.db")
            timed(builds[name], home, project, "stats")  # migrate with the previous build's own code
            give_float_vectors(home / "ccmemory.db", args.embedded)
    replayed_project = sqlite3.connect(source).execute("SELECT path FROM projects LIMIT 1").fetchone()[0]
    for home in homes.values():
        conn = sqlite3.connect(home / "ccmemory.db")
        conn.execute("DELETE FROM projects WHERE path = ?", (str(project.resolve()),))  # made empty by `stats`
        conn.execute("UPDATE projects SET path = ? WHERE path = ?", (str(project.resolve()), replayed_project))
        conn.commit()
        conn.close()
    memory_id = sqlite3.connect(homes["this build"] / "ccmemory.db").execute(
        "SELECT id FROM memories ORDER BY seq DESC LIMIT 1").fetchone()[0]
    commands = {
        "list": ("list",), "get": ("get", memory_id), "add": ("add", "Releases are cut on Thursdays"),
        "stats": ("stats",), "search --mode keyword": ("search", QUERY, "--mode", "keyword"),
        "search (hybrid)": ("search", QUERY),
    }
    for name in builds:  # warm-up: bytecode, vector index, file cache
        for args_ in commands.values():
            timed(builds[name], homes[name], project, *args_)
    timings: dict[str, dict[str, list[float]]] = {label: {name: [] for name in builds} for label in commands}
    bare = []
    for _ in range(args.runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        bare.append((time.perf_counter() - started) * 1000)
        for label, args_ in commands.items():
            for name in builds:
                timings[label][name].append(timed(builds[name], homes[name], project, *args_))
    cost = model_cost()
    print({label: {n: round(statistics.median(t)) for n, t in by.items()} for label, by in timings.items()}, cost)
    lines = [
        shared_machine(),
        f"Command: `python bench/bench_cli.py --embedded <replayed store embedded by bench_embed.py> "
        f"--previous {args.previous} --runs {args.runs}`",
        "",
        f"Whole `ccmemory` processes, spawn to exit, median of {args.runs} alternating runs, milliseconds; a store of "
        "the replayed coding sessions with every vector. A bare `python -c pass` took "
        f"{statistics.median(bare):.0f} ms. Target: 500 ms.",
        "",
        f"| command | previous ({args.previous}) | this build | ratio |" if "previous" in builds
        else "| command | this build |",
        "|---|---:|---:|---:|" if "previous" in builds else "|---|---:|",
    ]
    for label, by in timings.items():
        after = statistics.median(by["this build"])
        if "previous" in builds:
            before = statistics.median(by["previous"])
            lines.append(f"| `{label}` | {before:.0f} | {after:.0f} | {after / before:.2f} |")
        else:
            lines.append(f"| `{label}` | {after:.0f} |")
    lines += ["", "What the model costs this build, in one fresh process (milliseconds): "
              + "; ".join(f"{step} {value:.0f}" for step, value in cost.items()) + "."]
    write_section("cli", "CLI commands as whole processes", "\n".join(lines))


if __name__ == "__main__":
    main()
