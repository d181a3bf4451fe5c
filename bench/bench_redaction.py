"""Secret scanner cost, side by side with the scanners it replaced; writes BENCHMARKS.md.

Run: python bench/bench_redaction.py [--repeat 5] [--no-write]

Two earlier scanners are read from git history at run time and timed in the same process on the
same inputs as :func:`ccmemory.redaction.redact`: the quadratic one of issue 11
(``src/ccmemory/hooks/privacy.py`` at ``ca45a88``) and the one before issue 19's redaction work
(``redaction.py`` and its rules at ``e121600``). Inputs: a typical 10,000-character capture of
coding text, the same serialized as JSON (escapes, which are now decoded and scanned too), text
dense with secrets (the corpus of testing/secret_corpus.py), and growing sizes of the adversarial
input from issue 11 (``"a." * n + "://x@"``), whose cost grew with the square of its size.
Ratios are the figure to read: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "src"))

from report import write_section  # noqa: E402

from ccmemory import redaction  # noqa: E402

OLD_COMMIT = "ca45a88"
#: The last commit before issue 19's redaction changes.
PREVIOUS_COMMIT = "e121600"


def _show(commit: str, path: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), "show", f"{commit}:{path}"],
                          capture_output=True, text=True, check=True).stdout


def old_scanner() -> types.ModuleType:
    module = types.ModuleType("old_privacy")
    exec(compile(_show(OLD_COMMIT, "src/ccmemory/hooks/privacy.py"), "old_privacy.py", "exec"), module.__dict__)
    return module


def previous_scanner(folder: Path) -> types.ModuleType:
    """``redaction.py`` of :data:`PREVIOUS_COMMIT` with its own rule file (written under ``folder``)."""
    (folder / "rules").mkdir()
    (folder / "rules" / "secrets.json").write_text(_show(PREVIOUS_COMMIT, "src/ccmemory/rules/secrets.json"))
    module = types.ModuleType("previous_redaction")
    module.__dict__["__file__"] = str(folder / "redaction.py")
    exec(compile(_show(PREVIOUS_COMMIT, "src/ccmemory/redaction.py"), "previous_redaction.py", "exec"),
         module.__dict__)
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
    from testing.secret_corpus import SECRETS

    old = old_scanner()
    with tempfile.TemporaryDirectory(prefix="ccmemory-bench-redaction-") as folder:
        previous = previous_scanner(Path(folder))
        previous.rules()
    typical = coding_text(10_000)
    secrets = "\n".join(text for _, text, _ in SECRETS)[:10_000]
    rows = []
    for label, text in (("10,000 chars of coding text", typical),
                        ("the same as JSON (escaped line breaks)", json.dumps({"stdout": typical})),
                        ("10,000 chars dense with secrets", secrets)):
        new_t = best(redaction.redact, text, options.repeat)
        old_t, previous_t = best(old.sanitize, text, options.repeat), best(previous.redact, text, options.repeat)
        rows.append(f"| {label} | {old_t * 1e3:.2f} ms | {previous_t * 1e3:.2f} ms | {new_t * 1e3:.2f} ms | "
                    f"{new_t / previous_t:.2f} |")
    for n in (5_000, 10_000, 20_000, 40_000):
        text = "a." * n + "://x@"
        new_t, old_t, previous_t = best(redaction.redact, text, 1), best(old.sanitize, text, 1), \
            best(previous.redact, text, 1)
        rows.append(f"| adversarial `\"a.\" * {n:,} + \"://x@\"` ({len(text):,} chars) | {old_t * 1e3:,.0f} ms | "
                    f"{previous_t * 1e3:.1f} ms | {new_t * 1e3:.1f} ms | {new_t / previous_t:.2f} |")
    leaked = sum(secret in redaction.redact(text) for _, text, secret in SECRETS)
    old_leaked = sum(secret in old.sanitize(text) for _, text, secret in SECRETS)
    previous_leaked = sum(secret in previous.redact(text) for _, text, secret in SECRETS)
    body = "\n".join([
        f"Machine: {platform.machine()}, {os.cpu_count()} cores shared with the whole team, "
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}, load average "
        f"{os.getloadavg()[0]:.1f}. Command: `python bench/bench_redaction.py --repeat {options.repeat}`. "
        "Best of the runs; read the ratios.",
        "",
        f"| input | quadratic scanner ({OLD_COMMIT}) | before issue 19 ({PREVIOUS_COMMIT}) | `redaction.redact` | "
        "now / before |",
        "|---|---|---|---|---|",
        *rows,
        "",
        f"The quadratic cost quadruples when the adversarial input doubles; the others double (linear). "
        f"Corpus of testing/secret_corpus.py: {len(SECRETS)} secrets; the quadratic scanner left {old_leaked} "
        f"in place, the one before issue 19 {previous_leaked}, `redact` {leaked}.",
    ])
    print(body)
    if not options.no_write:
        write_section("redaction", "Secret scanner cost", body)


if __name__ == "__main__":
    main()
