"""Dates in a search query: calendar dates, and times said relative to now, as the ranges search prefers."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from typing import Iterator

import pytest

from ccmemory import db as database
from ccmemory import memories, projects, search
from ccmemory.query_dates import date_range

#: A Tuesday, late in the evening (UTC).
NOW = "2023-05-30T22:53:00.000Z"


@pytest.fixture
def zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The local time zone is UTC unless a test sets TZ again; restored afterwards."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize("query, expected", [
    ("what did we do yesterday?", ("2023-05-29T00", "2023-05-30T00")),
    ("the deploy today", ("2023-05-30T00", "2023-05-31T00")),
    ("the day before yesterday", ("2023-05-28T00", "2023-05-29T00")),
    ("the bug fixed 3 days ago", ("2023-05-26T00", "2023-05-29T00")),
    ("the milestone I mentioned four weeks ago", ("2023-04-29T10", "2023-05-06T10")),
    ("the concert last Saturday", ("2023-05-27T00", "2023-05-28T00")),
    ("lunch last Tuesday", ("2023-05-23T00", "2023-05-24T00")),
    ("what we met about on Tuesday", ("2023-05-30T00", "2023-05-31T00")),
    ("jogging last week", ("2023-05-22T00", "2023-05-29T00")),
    ("the outage last month", ("2023-04-01T00", "2023-05-01T00")),
    ("hires last year", ("2022-01-01T00", "2023-01-01T00")),
    ("trips in the past three months", ("2023-02-28T15", "2023-05-30T22")),
    ("what changed this week", ("2023-05-29T00", "2023-05-30T22")),
    ("a couple of months ago", ("2023-03-15T20", "2023-04-15T07")),
    ("decided on 8 May 2023, not yesterday", ("2023-05-08T00", "2023-05-09T00")),
])
def test_a_time_said_relative_to_now_names_its_range(zone: None, query: str, expected: tuple[str, str]) -> None:
    found = date_range(query, NOW)
    assert found is not None and (found[0][:13], found[1][:13]) == expected


@pytest.mark.parametrize("query", ["How many weeks ago did I start using Ibotta?", "the last time we changed the parser",
                                   "what does this function return", "the day the build broke",
                                   "the past tense of a log line", "What time do I wake up on Saturday mornings?",
                                   "the gym on Tuesdays"])
def test_words_that_name_no_time_name_no_range(zone: None, query: str) -> None:
    assert date_range(query, NOW) is None


def test_a_day_starts_at_local_midnight(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "America/Los_Angeles")
    time.tzset()
    try:
        # 22:53 UTC is 15:53 in Los Angeles (UTC-7 in May): its "today" began at 07:00 UTC.
        assert date_range("what did we ship today", NOW) == ("2023-05-30T07:00:00.000Z", "2023-05-31T07:00:00.000Z")
    finally:
        monkeypatch.undo()
        time.tzset()


def test_yesterday_in_a_search_prefers_yesterdays_memory(home, project_dir, zone: None) -> None:
    db = database.connect(vectors=False)
    project = projects.project_id(db, project_dir)
    today = datetime.now(timezone.utc).replace(hour=12, minute=0, second=0, microsecond=0)
    for days in (0, 1, 9):
        memories.add(db, project_id=project, content="Deployed the billing service",
                     created_at=(today - timedelta(days=days)).isoformat())
    hits = search.search(db, "what did we deploy yesterday", project_id=project, mode="keyword")
    assert hits[0].memory.created_at.startswith((today - timedelta(days=1)).date().isoformat())
    hits = search.search(db, "the billing deploy last week", project_id=project, mode="keyword")
    monday = today - timedelta(days=today.weekday())
    assert monday - timedelta(days=7) <= datetime.fromisoformat(hits[0].memory.created_at.replace("Z", "+00:00")) \
        < monday
    db.close()
