"""scripts/import_graph.py: no core module imports an entry layer, no import cycle (beyond the listed debts)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "import_graph.py"


def graph(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-I", str(SCRIPT), *args], capture_output=True, text=True, timeout=120)


def package(root: Path, files: dict[str, str]) -> Path:
    for name, text in {"ccmemory/__init__.py": "", "ccmemory/hooks/__init__.py": "", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_the_code_has_no_new_layer_violation_or_cycle() -> None:
    result = graph()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "import cycles: 0" in result.stdout


def test_a_core_module_importing_a_hook_module_fails_even_lazily(tmp_path: Path) -> None:
    source = package(tmp_path / "src", {
        "ccmemory/hooks/capture.py": "SOURCE = 'capture'\n",
        "ccmemory/search.py": "def find():\n    from .hooks.capture import SOURCE\n    return SOURCE\n",
    })
    result = graph("--source", str(source), "--known", str(tmp_path / "none.txt"))
    assert result.returncode == 1
    assert "NEW: ccmemory.search -> ccmemory.hooks.capture" in result.stdout


def test_a_lazy_cycle_fails_and_a_type_checking_import_does_not_count(tmp_path: Path) -> None:
    source = package(tmp_path / "src", {
        "ccmemory/a.py": "from . import b\n",
        "ccmemory/b.py": "def f():\n    from .a import x\n",
        "ccmemory/c.py": "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from .d import D\n",
        "ccmemory/d.py": "from . import c\n",
    })
    result = graph("--source", str(source), "--known", str(tmp_path / "none.txt"))
    assert result.returncode == 1
    assert "cycle among ccmemory.a, ccmemory.b" in result.stdout and "import cycles: 1" in result.stdout


def test_a_listed_edge_that_is_gone_must_be_deleted(tmp_path: Path) -> None:
    source = package(tmp_path / "src", {"ccmemory/search.py": "import json\n"})
    known = tmp_path / "known.txt"
    known.write_text("ccmemory.search -> ccmemory.hooks.capture  # fixed since\n")
    result = graph("--source", str(source), "--known", str(known))
    assert result.returncode == 1
    assert "STALE: ccmemory.search -> ccmemory.hooks.capture" in result.stdout
