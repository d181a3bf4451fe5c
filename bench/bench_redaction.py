"""Secret scanner cost, side by side with the scanner it replaced; writes BENCHMARKS.md.

Run: python bench/bench_redaction.py [--repeat 5] [--no-write]

The previous scanner (``src/ccmemory/hooks/privacy.py`` at commit ``ca45a88``) is read from git
history at run time and timed in the same process on the same inputs as
:func:`ccmemory.redaction.redact`: a typical 10,000-character capture of coding text, the same
text with secrets in it, and growing sizes of the adversarial input from issue 11
(``"a." * n + "://x@"``), whose cost grew with the square of its size. Ratios are the figure to
read: the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
import types
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "src"))

from report import write_section  # noqa: E402

from ccmemory import redaction  # noqa: E402

OLD_COMMIT = "ca45a88"


def old_scanner() -> types.ModuleType:
    source = subprocess.run(["git", "-C", str(REPO), "show", f"{OLD_COMMIT}:src/ccmemory/hooks/privacy.py"],
                            capture_output=True, text=True, check=True).stdout
    module = types.ModuleType("old_privacy")
    exec(compile(source, "old_privacy.py", "exec"), module.__dict__)
    return module


def best(function, text: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function(text)
        times.append(time.perf_counter() - start)
    return min(times)


def coding_text(size: int) -> str:
    lines = [
        "def load_config(path: str) -> dict:", "    with open(path) as handle:", "        return json.load(handle)",
        "Ran: pytest -q tests/test_store.py", "Output:", "....................F.....", "FAILED test_timeline",
        "Edited src/ccmemory/memories.py", "- return get(db, memory_id)", "+ return get(db, memory_id, project_id=p)",
        "max_tokens = 4096  # the token budget", "Authorization handled by the gateway", "url = 'https://x.org/a'",
    ]
    text = ""
    while len(text) < size:
        text += "\n".join(lines) + "\n"
    return text[:size]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-write", action="store_true")
    options = parser.parse_args()
    from secret_corpus import SECRETS

    old = old_scanner()
    typical = coding_text(10_000)
    secrets = "\n".join(text for _, text, _ in SECRETS)[:10_000]
    rows = []
    for label, text in (("10,000 chars of coding text", typical), ("10,000 chars with secrets", secrets)):
        new_t, old_t = best(redaction.redact, text, options.repeat), best(old.sanitize, text, options.repeat)
        rows.append(f"| {label} | {old_t * 1e3:.2f} ms | {new_t * 1e3:.2f} ms | {old_t / new_t:.2f} |")
    for n in (5_000, 10_000, 20_000, 40_000):
        text = "a." * n + "://x@"
        new_t, old_t = best(redaction.redact, text, 1), best(old.sanitize, text, 1)
        rows.append(f"| adversarial `\"a.\" * {n:,} + \"://x@\"` ({len(text):,} chars) | {old_t * 1e3:,.0f} ms | "
                    f"{new_t * 1e3:.1f} ms | {old_t / new_t:,.0f} |")
    leaked = sum(secret in redaction.redact(text) for _, text, secret in SECRETS)
    old_leaked = sum(secret in old.sanitize(text) for _, text, secret in SECRETS)
    body = "\n".join([
        f"Machine: {platform.machine()}, {os.cpu_count()} cores shared with the whole team, "
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}. "
        f"Command: `python bench/bench_redaction.py --repeat {options.repeat}`. Best of the runs; read the ratios.",
        "",
        "| input | old scanner (ca45a88) | `redaction.redact` | old / new |",
        "|---|---|---|---|",
        *rows,
        "",
        f"The old cost quadruples when the adversarial input doubles (quadratic); the new one doubles (linear). "
        f"Corpus of tests/secret_corpus.py: {len(SECRETS)} secrets, the old scanner left {old_leaked} "
        f"in place, the new one {leaked}.",
    ])
    print(body)
    if not options.no_write:
        write_section("redaction", "Secret scanner cost", body)


if __name__ == "__main__":
    main()
