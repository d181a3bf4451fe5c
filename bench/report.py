"""Write one benchmark's section of BENCHMARKS.md, between its markers, keeping the others."""

from __future__ import annotations

import re
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "BENCHMARKS.md"
HEADER = "# Benchmarks\n\nEach section is written by the script in `bench/` that it names.\n"


def write_section(key: str, title: str, body: str) -> None:
    """Replace (or append) the section ``<!-- bench:key -->`` … ``<!-- /bench:key -->``."""
    text = BENCHMARKS.read_text() if BENCHMARKS.exists() else HEADER
    section = f"<!-- bench:{key} -->\n## {title}\n\n{body.rstrip()}\n<!-- /bench:{key} -->"
    pattern = re.compile(rf"<!-- bench:{re.escape(key)} -->.*?<!-- /bench:{re.escape(key)} -->", re.S)
    text = pattern.sub(lambda _: section, text) if pattern.search(text) else f"{text.rstrip()}\n\n{section}\n"
    BENCHMARKS.write_text(text)


def shared_machine() -> str:
    """The machine line of a timing section: cores, that they are shared, the load, Python, OS, time."""
    import os
    import platform
    import time

    return (f"Machine: {platform.machine()}, {os.cpu_count()} cores shared with the rest of the team "
            f"(load average {os.getloadavg()[0]:.1f} at the end), Python {platform.python_version()}, "
            f"{platform.system()} {platform.release()}; {time.strftime('%Y-%m-%d %H:%M')}")
