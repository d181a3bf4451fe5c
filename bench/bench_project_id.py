"""The hook path's question "which project is this checkout?" for a checkout already seen, in process.

Run: python bench/bench_project_id.py [--src DIR] [--calls 2000] [--rounds 7]

``--src`` is the ``src/`` folder whose ccmemory answers (default: this checkout's), so two trees
can be compared with one interpreter. A one-commit git repository is made in a temporary folder,
seen once (its first sight runs git), then ``projects.project_id`` is timed ``rounds`` × ``calls``
times; the median per call is printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

AUTHOR = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
          "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", default=str(Path(__file__).resolve().parents[1] / "src"))
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    sys.path.insert(0, args.src)
    from ccmemory import db as database, projects

    with tempfile.TemporaryDirectory(prefix="ccmemory-bench-project-") as folder:
        os.environ["CCMEMORY_HOME"] = os.path.join(folder, "home")
        repo = os.path.join(folder, "repo")
        env = {**os.environ, **AUTHOR}
        subprocess.run(["git", "init", "-q", repo], check=True, env=env)
        Path(repo, "README.md").write_text("bench\n")
        subprocess.run(["git", "-C", repo, "add", "README.md"], check=True, env=env)
        subprocess.run(["git", "-C", repo, "commit", "-q", "-m", "first"], check=True, env=env)
        db = database.connect(vectors=False)
        projects.project_id(db, repo)
        per_call = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            for _ in range(args.calls):
                projects.project_id(db, repo)
            per_call.append((time.perf_counter() - start) / args.calls * 1e6)
        db.close()
    print(f"{args.src}: project_id of a known checkout, median of {args.rounds} x {args.calls} calls: "
          f"{statistics.median(per_call):.1f} us")


if __name__ == "__main__":
    main()
