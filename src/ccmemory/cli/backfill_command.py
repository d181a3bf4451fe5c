"""``ccmemory backfill``: bring past Claude Code sessions into memory from their transcripts.

A thin door onto :mod:`ccmemory.backfill`: opens the store, runs it with a progress bar on
stderr (at a terminal), prints the summary line and what was left out per project (``--json``:
the report as JSON). Ctrl+C ends the run after the session under way (a second Ctrl+C at once, rolling
that session back), keeps the sessions done, says so and exits 130; the next run continues.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

import click

from .. import backfill as backfilling, clock
from .common import (INTERRUPTED_EXIT, echo, embed_in_background, emit_json, fail, handles_errors, json_option,
                     load_settings, open_db)


@click.command()
@click.option("--project", "project", type=click.Path(file_okay=False),
              help="Only the sessions of the project containing this directory (it may no longer exist).")
@click.option("--since", help="Only sessions that ended on or after this date (ISO-8601, e.g. 2026-01-31).")
@click.option("--dry-run", is_flag=True, help="Read every transcript and report, but store nothing.")
@click.option("--embed", "embed_after", is_flag=True,
              help="Embed what was stored before returning (else a background worker embeds it while you go on).")
@json_option
@handles_errors
def backfill(project: str | None, since: str | None, dry_run: bool, embed_after: bool, as_json: bool) -> None:
    """Bring past Claude Code sessions into memory from their transcripts, as live capture would have stored them."""
    if since:
        try:
            clock.parse(since)
        except ValueError as exc:
            fail(f"--since: {exc}", 2)
    config = load_settings()
    report = backfilling.Report()
    db = open_db()
    bar = None
    asked: list[int] = []

    def stop_after_this_session(signum: int, _frame: Any) -> None:
        if asked:
            raise KeyboardInterrupt
        asked.append(signum)

    previous = signal.signal(signal.SIGINT, stop_after_this_session)
    try:
        progress = None
        if not as_json and sys.stderr.isatty():
            shown = click.progressbar(length=1, label="Bringing in past sessions", file=sys.stderr)
            shown.__enter__()
            bar = shown

            def progress(done: int, total: int) -> None:
                shown.length = total
                shown.update(done - shown.pos)
        backfilling.run(db, config, project=os.path.abspath(project) if project else None, since=since,
                        dry_run=dry_run, progress=progress, report=report, stop=lambda: bool(asked))
        if report.interrupted:
            raise KeyboardInterrupt
        if report.stored and not dry_run and not embed_after:
            embed_in_background(db)
    except KeyboardInterrupt:
        report.interrupted = True
        if bar is not None:
            bar.__exit__(None, None, None)
            bar = None
        _print(report, as_json)
        echo(f"Interrupted: the {report.taken} session(s) brought in so far are kept; "
             "run `ccmemory backfill` again to continue.", err=True)
        sys.exit(INTERRUPTED_EXIT)
    finally:
        signal.signal(signal.SIGINT, previous)
        if bar is not None:
            bar.__exit__(None, None, None)
        db.close()
    _print(report, as_json)
    if embed_after and report.stored and not dry_run:
        from .maintenance import embed

        click.get_current_context().invoke(embed)


def _print(report: backfilling.Report, as_json: bool) -> None:
    if as_json:
        emit_json(report.as_dict())
        return
    echo(report.summary_line())
    for root, counts in sorted(report.projects.items()):
        echo(f"  {root}: {counts['sessions']} session(s), {counts['tool_calls']} tool call(s)")
    if report.problems:
        echo("Problems: " + "; ".join(f"{n} {kind}" for kind, n in sorted(report.problems.items())))
    for item in report.named:
        echo(f"  {item['path']}: {item['why']}")


COMMANDS = [backfill]
