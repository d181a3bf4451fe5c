"""The docs agree with the code: generated tables current, every command and tool described, links alive.

The tables of CLI commands, MCP tools and settings are rendered from the code by
``scripts/gen_docs.py``; these tests run its ``--check`` and also show that the check notices a
stale table. Beyond the tables, every command and tool must be named in the prose of the docs,
every relative link of the Markdown must lead to a file (and heading) that exists, and no file
cites a design document that is not in the repository.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MARKDOWN = sorted([ROOT / "README.md", ROOT / "ARCHITECTURE.md", ROOT / "BENCHMARKS.md", *(ROOT / "docs").glob("*.md")])
#: Files another change rewrites; their citations of outside documents go with that change.
CITATIONS_PENDING: set[str] = set()


def _gen_docs():
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen_docs = _gen_docs()


def _prose(path: Path) -> str:
    """A Markdown file without its generated blocks: what a person wrote."""
    return re.sub(r"<!-- generated:([a-z-]+) -->.*?<!-- /generated:\1 -->", "", path.read_text(encoding="utf-8"),
                  flags=re.S)


def test_the_generated_tables_match_the_code():
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_docs.py"), "--check"], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr


def test_the_check_fails_when_a_table_is_stale(tmp_path):
    for name in gen_docs.FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text((ROOT / name).read_text(encoding="utf-8"), encoding="utf-8")
    assert gen_docs.stale_files(tmp_path) == []
    settings = tmp_path / "docs" / "settings.md"
    settings.write_text(settings.read_text(encoding="utf-8").replace("| `capture.enabled` | `true` |",
                                                                     "| `capture.enabled` | `false` |"), encoding="utf-8")
    assert gen_docs.stale_files(tmp_path) == ["docs/settings.md"]


def test_every_file_with_a_generated_block_is_rendered_by_the_script():
    holders = {path.relative_to(ROOT).as_posix() for path in MARKDOWN
               if re.search(r"<!-- generated:[a-z-]+ -->", path.read_text(encoding="utf-8"))}
    assert holders == set(gen_docs.FILES)


def test_every_command_is_described_in_the_prose():
    prose = "\n".join(_prose(path) for path in MARKDOWN)
    missing = []
    for name, _ in gen_docs.walk_commands(gen_docs.cli_group()):
        words = name.split()
        if len(words) == 1:
            found = re.search(rf"(ccmemory |`){re.escape(name)}\b", prose)
        else:  # a subcommand: named on a line with its group (``context show|clear``, ``ccmemory files mv``)
            found = re.search(rf"\b{re.escape(words[0])}\b[^\n]*\b{re.escape(words[1])}\b", prose)
        if not found:
            missing.append(name)
    assert missing == []


def test_every_mcp_tool_is_described_in_the_prose():
    prose = "\n".join(_prose(path) for path in MARKDOWN)
    families = re.findall(r"`(\w+_)\*`", prose)  # ``docmem_update_*`` names the family
    missing = [tool.name for tool in gen_docs.mcp_tools()
               if not re.search(rf"`{re.escape(tool.name)}`", prose) and not any(tool.name.startswith(f) for f in families)]
    assert missing == []


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {_slug(heading) for heading in re.findall(r"^#{1,6} (.+)$", text, flags=re.M)}


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda path: path.relative_to(ROOT).as_posix())
def test_every_relative_link_leads_somewhere(path):
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            broken.append(target)
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(target)
    assert broken == []


def test_nothing_cites_a_document_outside_the_repository():
    """Design notes say the rule itself: no "seed 001" or "F5.2" a reader of the repository cannot open."""
    citation = re.compile(r"\bseed 0\d\d\b|\(F\d+[.,):]|\bF\d+\.\d+\b", re.I)
    files = [*MARKDOWN, *sorted((ROOT / "src").rglob("*.py")), *sorted((ROOT / "src").rglob("*.md"))]
    found = [f"{path.relative_to(ROOT).as_posix()}:{number}: {line.strip()}"
             for path in files if path.relative_to(ROOT).as_posix() not in CITATIONS_PENDING
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if citation.search(line)]
    assert found == []


def test_the_readme_stays_short():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) < 200
