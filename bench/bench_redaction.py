"""Secret scanner cost, side by side with the scanners it replaced; writes BENCHMARKS.md.

Run: python bench/bench_redaction.py [--repeat 5] [--no-write] [--shared ../shared/bench-data]

Three earlier scanners are read from git history at run time and timed in the same process on the
same inputs as :func:`ccmemory.redaction.redact`: the quadratic one of issue 11
(``src/ccmemory/hooks/privacy.py`` at ``ca45a88``), the one before issue 19's redaction work
(``redaction.py`` and its rules at ``e121600``) and the one before the second red-team pass (``01ae99a``:
secrets said in prose in other languages, in tables, more vendor forms). Inputs: a typical 10,000-character
capture of coding text, the same serialized as JSON (escapes, which are now decoded and scanned too), text
dense with secrets (the corpus of testing/secret_corpus.py), coding text and prose in other languages that
name passwords, tokens and keys on every line without holding one (the worst case of the rules for other
languages and for tables: they are tried at each such word), and growing sizes of the adversarial input from issue 11
(``"a." * n + "://x@"``), whose cost grew with the square of its size. With the shared bench data
beside the repository (``--shared``), every text of it (conversations and real coding sessions, holding no
secret) is redacted by the last two scanners: how many each changes, and how many come out differently.
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
#: The last commit before the second red-team pass (prose in other languages, tables, more vendor forms).
LAST_COMMIT = "01ae99a"


def _show(commit: str, path: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), "show", f"{commit}:{path}"],
                          capture_output=True, text=True, check=True).stdout


def old_scanner() -> types.ModuleType:
    module = types.ModuleType("old_privacy")
    exec(compile(_show(OLD_COMMIT, "src/ccmemory/hooks/privacy.py"), "old_privacy.py", "exec"), module.__dict__)
    return module


def scanner_at(commit: str, folder: Path) -> types.ModuleType:
    """``redaction.py`` of ``commit`` with its own rule file (written under ``folder``), rules loaded."""
    (folder / "rules").mkdir(parents=True)
    (folder / "rules" / "secrets.json").write_text(_show(commit, "src/ccmemory/rules/secrets.json"))
    module = types.ModuleType(f"redaction_{commit}")
    module.__dict__["__file__"] = str(folder / "redaction.py")
    exec(compile(_show(commit, "src/ccmemory/redaction.py"), f"redaction_{commit}.py", "exec"), module.__dict__)
    module.rules()
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


def naming_text(size: int) -> str:
    """Coding notes and prose in other languages that name passwords, tokens and keys without holding one."""
    lines = [
        "def check_password(user, password):", "    if not verify(password, user.password_hash):",
        "Исправил проверку: пароль теперь хешируется через bcrypt", "токен обновляется каждые 15 минут, ключ в vault",
        "密码长度至少8位，令牌有效期为一小时", "Das Passwort wird nie im Klartext gespeichert",
        "la contraseña se guarda cifrada", "Tests passed: 42, the build is green",
    ]
    text = ""
    while len(text) < size:
        text += "\n".join(lines) + "\n"
    return text[:size]


def real_texts(shared: Path) -> list[str]:
    """Every turn of the LongMemEval and LoCoMo dev sets and every string of the coderecall set (hook payloads and
    transcripts of real coding sessions) longer than 20 characters: text holding no secret."""
    import gzip

    texts = [turn["content"] for question in json.load(gzip.open(shared / "longmemeval-s-dev.json.gz", "rt"))
             for session in question["haystack_sessions"] for turn in session]
    for conversation in json.load(open(shared / "locomo10-dev.json")):
        texts += [turn.get("text", "") for key, turns in conversation["conversation"].items()
                  if key.startswith("session_") and isinstance(turns, list) for turn in turns]
    stack = [json.load(gzip.open(shared / "coderecall-dev.json.gz", "rt"))]
    while stack:
        item = stack.pop()
        if isinstance(item, str) and len(item) > 20:
            texts.append(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "bench-data",
                        help="the shared bench data, whose texts hold no secret (skipped when absent)")
    options = parser.parse_args()
    from testing.secret_corpus import SECRETS

    old = old_scanner()
    with tempfile.TemporaryDirectory(prefix="ccmemory-bench-redaction-") as folder:
        previous = scanner_at(PREVIOUS_COMMIT, Path(folder) / "previous")
        last = scanner_at(LAST_COMMIT, Path(folder) / "last")
    typical = coding_text(10_000)
    secrets = "\n".join(text for _, text, _ in SECRETS)[:10_000]
    scanners = (old.sanitize, previous.redact, last.redact, redaction.redact)
    rows = []
    for label, text in (("10,000 chars of coding text", typical),
                        ("the same as JSON (escaped line breaks)", json.dumps({"stdout": typical})),
                        ("10,000 chars dense with secrets", secrets),
                        ("10,000 chars naming secrets in five languages, none held", naming_text(10_000))):
        times = [best(scan, text, options.repeat) for scan in scanners]
        rows.append(f"| {label} | " + " | ".join(f"{t * 1e3:.2f} ms" for t in times)
                    + f" | {times[3] / times[1]:.2f} | {times[3] / times[2]:.2f} |")
    for n in (5_000, 10_000, 20_000, 40_000):
        text = "a." * n + "://x@"
        times = [best(scan, text, 1) for scan in scanners]
        rows.append(f"| adversarial `\"a.\" * {n:,} + \"://x@\"` ({len(text):,} chars) | {times[0] * 1e3:,.0f} ms | "
                    + " | ".join(f"{t * 1e3:.1f} ms" for t in times[1:])
                    + f" | {times[3] / times[1]:.2f} | {times[3] / times[2]:.2f} |")
    left = [sum(secret in scan(text) for _, text, secret in SECRETS) for scan in scanners]
    changed = ""
    if options.shared.is_dir():
        texts = real_texts(options.shared)
        touched = [sum(scan(text) != text for text in texts) for scan in scanners[2:]]
        differ = sum(last.redact(text) != redaction.redact(text) for text in texts)
        changed = (f" On the {len(texts):,} texts of the shared bench data ({sum(map(len, texts)) / 1e6:.0f} MB of "
                   f"conversations and real coding sessions, no secret among them), the scanner before the second "
                   f"red-team pass changes {touched[0]:,}, `redact` {touched[1]:,}, and {differ:,} come out "
                   "differently.")
    body = "\n".join([
        f"Machine: {platform.machine()}, {os.cpu_count()} cores shared with the whole team, "
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}, load average "
        f"{os.getloadavg()[0]:.1f}. Command: `python bench/bench_redaction.py --repeat {options.repeat}`. "
        "Best of the runs; read the ratios.",
        "",
        f"| input | quadratic scanner ({OLD_COMMIT}) | before issue 19 ({PREVIOUS_COMMIT}) | before the second red-team "
        f"pass ({LAST_COMMIT}) | `redaction.redact` | now / {PREVIOUS_COMMIT} | now / {LAST_COMMIT} |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"The quadratic cost quadruples when the adversarial input doubles; the others double (linear). "
        f"Corpus of testing/secret_corpus.py: {len(SECRETS)} secrets; the quadratic scanner left {left[0]} "
        f"in place, the one before issue 19 {left[1]}, the one before the second red-team pass {left[2]}, "
        f"`redact` {left[3]}.{changed}",
    ])
    print(body)
    if not options.no_write:
        write_section("redaction", "Secret scanner cost", body)


if __name__ == "__main__":
    main()
