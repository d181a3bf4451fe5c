"""The examples `ccmemory init` ships are never searchable as the project's knowledge until a person writes some."""

from __future__ import annotations

import shutil
from pathlib import Path

from ccmemory.knowledge import indexer
from testing.cli import invoke as ccmemory
from testing.knowledge import git

FIRST_RELEASE_GOTCHAS = Path(__file__).parent / "fixtures" / "gotchas_v1.md"


def initialised(home: Path, tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    assert git(home, repo, "init", "-q").returncode == 0
    done = ccmemory(home, repo, "init", "--no-hook")
    assert done.returncode == 0, done.stderr
    return repo


def test_index_after_init_finds_no_invented_example(home: Path, tmp_path: Path) -> None:
    repo = initialised(home, tmp_path)
    done = ccmemory(home, repo, "index")
    assert done.returncode == 0, done.stderr
    for query in ("date format gotcha", "timestamps UTC", "how to write an entry"):
        found = ccmemory(home, repo, "search", query, "--json")
        assert found.returncode == 0, found.stderr
        assert "gotchas.md" not in found.stdout, (query, found.stdout)


def test_an_entry_the_user_writes_is_indexed_and_the_example_is_not(home: Path, tmp_path: Path) -> None:
    repo = initialised(home, tmp_path)
    gotchas = repo / ".claude" / "knowledge" / "gotchas.md"
    gotchas.write_text(gotchas.read_text() + "\n### Invoices round half-even\nTotals use banker's rounding.\n")
    assert ccmemory(home, repo, "index").returncode == 0
    found = ccmemory(home, repo, "search", "invoice rounding")
    assert "gotchas.md#invoices-round-half-even" in found.stdout
    assert "gotchas.md#timestamps-are-stored-in-utc" not in ccmemory(home, repo, "search", "timestamps UTC").stdout


def test_a_project_set_up_by_the_first_release_keeps_its_unedited_template_out(home: Path, tmp_path: Path) -> None:
    repo = initialised(home, tmp_path)
    shutil.copyfile(FIRST_RELEASE_GOTCHAS, repo / ".claude" / "knowledge" / "gotchas.md")
    done = ccmemory(home, repo, "index")
    assert done.returncode == 0 and "the unedited template" in done.stdout + done.stderr
    assert "gotchas.md" not in ccmemory(home, repo, "search", "timestamps stored in UTC", "--json").stdout


def test_the_first_release_template_fixture_is_the_one_the_indexer_knows() -> None:
    import hashlib

    assert hashlib.sha256(FIRST_RELEASE_GOTCHAS.read_bytes()).hexdigest() in indexer.UNEDITED_TEMPLATES


def test_init_next_steps_name_the_marketplace_step(home: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(home, repo, "init", "-q")
    done = ccmemory(home, repo, "init", "--no-hook")
    assert "claude plugin marketplace add" in done.stdout
    assert done.stdout.index("marketplace add") < done.stdout.index("claude plugin install ccmemory@ccmemory")
