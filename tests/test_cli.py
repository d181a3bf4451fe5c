"""The `ccmemory` command line, run as a real process: output formats, JSON, exit codes, help."""

from __future__ import annotations

import json
import os
import re

import pytest
from testing.cli import invoke as run, spawn

from ccmemory import embedding_worker, locks


def test_add_takes_the_time_it_happened(home, project_dir):
    dated = run(home, project_dir, "add", "Release 1.0 shipped", "--created-at", "2023-05-08", "--json")
    assert json.loads(dated.stdout)["created_at"] == "2023-05-08T00:00:00.000Z"
    wrong = run(home, project_dir, "add", "Release 2.0 shipped", "--created-at", "soon")
    assert wrong.returncode == 2 and "ISO-8601" in wrong.stderr


def test_a_memory_added_is_found_by_a_paraphrase_in_the_next_command(home, project_dir):
    added = json.loads(run(home, project_dir, "add", "We moved to PostgreSQL 17", "--json").stdout)
    run(home, project_dir, "add", "The deploy script runs on Fridays")
    found = run(home, project_dir, "search", "which database server do we run", "--mode", "semantic", "--json")
    assert found.returncode == 0 and "not embedded yet" not in found.stderr
    hits = json.loads(found.stdout)
    assert hits[0]["memory"]["id"] == added["id"] and not hits[0]["weak"]
    assert json.loads(run(home, project_dir, "search", "postgres version", "--json").stdout)[0]["memory"]["id"] \
        == added["id"]


def test_add_search_get_delete_round_trip(home, project_dir):
    added = run(home, project_dir, "add", "The API uses JWT tokens for auth", "--category", "architecture", "--json")
    assert added.returncode == 0, added.stderr
    memory = json.loads(added.stdout)
    assert memory["category"] == "architecture"
    run(home, project_dir, "add", "Run make test before pushing")

    found = run(home, project_dir, "search", "JWT authentication", "--limit", "1")
    assert found.returncode == 0, found.stderr
    lines = found.stdout.splitlines()
    assert lines[0].startswith("1. [") and memory["id"][:8] in lines[0]
    assert lines[1].startswith("   The API uses JWT")

    as_json = json.loads(run(home, project_dir, "search", "JWT", "--json", "--mode", "keyword").stdout)
    assert as_json[0]["memory"]["id"] == memory["id"] and 0 <= as_json[0]["score"] <= 1

    shown = run(home, project_dir, "get", memory["id"][:8])
    assert shown.returncode == 0 and "The API uses JWT tokens for auth" in shown.stdout

    deleted = run(home, project_dir, "delete", memory["id"])
    assert deleted.returncode == 0 and "soft-deleted" in deleted.stdout
    assert "No results found for: JWT" in run(home, project_dir, "search", "JWT", "--mode", "keyword").stdout
    assert run(home, project_dir, "restore", memory["id"]).returncode == 0
    listed = json.loads(run(home, project_dir, "list", "--json").stdout)
    assert [item["content"] for item in listed] == ["Run make test before pushing", "The API uses JWT tokens for auth"]


def test_content_from_stdin_and_validation_exit_codes(home, project_dir):
    assert run(home, project_dir, "add", stdin="Piped memory text\n").returncode == 0
    too_long = run(home, project_dir, "add", "x" * 10_001)
    assert too_long.returncode == 2 and "Content exceeds maximum length of 10,000 characters" in too_long.stderr
    empty = run(home, project_dir, "add", stdin="")
    assert empty.returncode == 2 and "Content is required" in empty.stderr
    bad_category = run(home, project_dir, "add", "x", "--category", "nonsense")  # no terminal: the default
    assert bad_category.returncode == 0 and "architecture" in bad_category.stderr
    assert "category: general" in bad_category.stdout
    assert run(home, project_dir, "search", "   ").returncode == 2


def test_unknown_ids_exit_1_with_a_hint(home, project_dir):
    for args in (("get", "abc12345"), ("delete", "abc12345"), ("reinforce", "abc12345")):
        result = run(home, project_dir, *args)
        assert result.returncode == 1, args
        assert "abc12345" in result.stderr and ("ccmemory list" in result.stderr or "memory_search" in result.stderr)


def test_lifecycle_commands(home, project_dir):
    old = json.loads(run(home, project_dir, "add", "Cache TTL is 5 minutes", "--json").stdout)["id"]
    new = json.loads(run(home, project_dir, "add", "Cache TTL is 1 hour", "--json").stdout)["id"]
    assert "reinforced" in run(home, project_dir, "reinforce", old, "--amount", "0.2").stdout
    assert "de-emphasized" in run(home, project_dir, "deemphasize", old).stdout
    assert "superseded" in run(home, project_dir, "supersede", old, new).stdout
    hits = run(home, project_dir, "search", "cache TTL", "--mode", "keyword", "--json").stdout
    assert [hit["memory"]["id"] for hit in json.loads(hits)] == [new]
    hits = run(home, project_dir, "search", "cache TTL", "--mode", "keyword", "--include-superseded").stdout
    assert "[SUPERSEDED]" in hits and "superseded by" in hits


def test_stats_docs_and_embed(home, project_dir):
    guide = project_dir / "guide.md"
    guide.write_text("# Guide\n\n## Release\nTag the commit and push the tag.\n")  # one chunk: "Guide" has no text
    # An embedder that embeds nothing holds the lock, so the chunk still waits for `embed` below.
    with locks.held(embedding_worker.lock_path(), stale_after=float("inf"), role=embedding_worker.SERVER):
        assert "Document ingested" in run(home, project_dir, "docs", "ingest", str(guide)).stdout
        assert "Document unchanged" in run(home, project_dir, "docs", "ingest", str(guide)).stdout
    run(home, project_dir, "add", "Releases are cut on Thursdays")  # embedded as it is added
    stats = json.loads(run(home, project_dir, "stats", "--json").stdout)
    assert stats["memories"] == 1 and stats["documents"] == 1 and stats["pending_embeddings"] == 1
    assert stats["database_bytes"] >= os.path.getsize(home / "ccmemory.db")  # file + WAL
    assert stats["bytes_per_memory"] == round(stats["database_bytes"] / 1) and stats["memories_added"] == 1
    shown = run(home, project_dir, "stats").stdout
    assert "KB per memory" in shown and "Growth: 1 memories in the last 7 days" in shown
    embedded = run(home, project_dir, "embed")
    assert embedded.returncode == 0 and "Embedded 1 item(s)" in embedded.stdout
    after = run(home, project_dir, "stats", "--json")
    assert after.returncode == 0, after.stderr
    assert json.loads(after.stdout)["pending_embeddings"] == 0
    found = run(home, project_dir, "docs", "search", "how do I publish a release")
    assert found.returncode == 0 and "Guide#Guide > Release" in found.stdout


def test_doctor_passes_on_a_working_install(home, project_dir):
    result = run(home, project_dir, "doctor", "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    checks = {check["name"]: check for check in json.loads(result.stdout)}
    assert all(check["ok"] for check in checks.values())
    assert checks["config"]["detail"] == f"no {home / 'config.json'}: the defaults apply"
    assert checks["data dir"]["detail"] == str(home)


def test_demo_removes_its_temporary_data_dir_and_says_so(home, project_dir, tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    result = spawn(None, project_dir, "demo", TMPDIR=str(scratch), timeout=300)  # tempfile reads TMPDIR once
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Removed the demo's temporary data dir" in result.stdout
    assert list(scratch.glob("ccmemory-demo-*")) == []


def _commands() -> list[tuple[str, ...]]:
    import click

    from ccmemory.cli import cli

    context = click.Context(cli)
    found: list[tuple[str, ...]] = [()]
    for name in cli.list_commands(context):
        command = cli.get_command(context, name)
        found.append((name,))
        for sub in getattr(command, "commands", {}):
            found.append((name, sub))
    return found


@pytest.mark.parametrize("path", _commands(), ids=lambda path: " ".join(path) or "ccmemory")
def test_every_command_has_help(home, project_dir, path):
    result = run(home, project_dir, *path, "--help")
    assert result.returncode == 0 and "Usage:" in result.stdout


def test_unknown_command_is_a_usage_error(home, project_dir):
    result = run(home, project_dir, "frobnicate")
    assert result.returncode == 2 and "Unknown command: frobnicate. Run 'ccmemory --help'." in result.stderr
    typo = run(home, project_dir, "serach", "x")
    assert typo.returncode == 2 and "Did you mean 'search'?" in typo.stderr


def test_no_arguments_shows_the_help_with_the_commands(home, project_dir):
    result = run(home, project_dir)
    assert result.returncode == 0, result.stderr
    assert "Commands:" in result.stdout and all(name in result.stdout for name in ("index", "init", "search"))


def test_every_command_module_is_mapped_for_the_lazy_group():
    """A new module under ccmemory.cli with COMMANDS must be added to COMMAND_MODULES, or its commands vanish."""
    import pkgutil
    from importlib import import_module

    import ccmemory.cli
    from ccmemory.cli import COMMAND_MODULES

    listed = {}
    for info in pkgutil.iter_modules(ccmemory.cli.__path__):
        for command in getattr(import_module(f"ccmemory.cli.{info.name}"), "COMMANDS", []):
            listed[command.name] = info.name
    assert listed == COMMAND_MODULES


def test_search_shows_the_top_5_with_scores_and_cut_previews_and_limit_n(home, project_dir):
    """Seed 001 F5.7: top 5 by default, each with its score and a preview cut to one line; --limit=N gives N."""
    for number in range(7):
        text = f"Deploy step {number}: the deploy pipeline " + "uploads the bundle and waits for the health check " * 4
        assert run(home, project_dir, "add", text).returncode == 0
    default = run(home, project_dir, "search", "deploy pipeline", "--mode", "keyword")
    assert default.returncode == 0, default.stderr
    rows = [line for line in default.stdout.splitlines() if re.match(r"\d+\. \[\d\.\d\d\] ", line)]
    assert [row.split(".")[0] for row in rows] == ["1", "2", "3", "4", "5"]
    previews = [line.strip() for line in default.stdout.splitlines() if line.startswith("   ")]
    assert len(previews) == 5 and all(p.startswith("Deploy step") and p.endswith("the…") and len(p) <= 100
                                      for p in previews)  # cut after a whole word
    three = run(home, project_dir, "search", "deploy pipeline", "--mode", "keyword", "--limit=3")
    assert len([line for line in three.stdout.splitlines() if re.match(r"\d+\. \[", line)]) == 3


def test_add_prints_the_id_it_stored(home, project_dir):
    """Seed 001 F5.5: `add "API uses JWT tokens" --category=architecture` creates it and prints its id."""
    done = run(home, project_dir, "add", "API uses JWT tokens", "--category=architecture")
    assert done.returncode == 0, done.stderr
    printed = re.search(r"Memory created: (\S+) \(sector: \w+, category: architecture\)", done.stdout)
    assert printed, done.stdout
    stored = json.loads(run(home, project_dir, "get", printed.group(1), "--json").stdout)["memories"][0]
    assert stored["id"] == printed.group(1) and stored["content"] == "API uses JWT tokens"
    assert stored["category"] == "architecture"
