"""Fixtures shared by every test: an isolated data dir, real database files, one loaded model."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterator

import pytest

from ccmemory import db as database
from ccmemory import embedding_worker, embeddings, locks, projects

from testing import home_guard

TYPE_CHECKING = False
if TYPE_CHECKING:
    from testing.postgres import Cluster
    from testing.team import Server

_real_home: Path | None = None
_real_home_before: dict[str, tuple[int, int]] = {}


def pytest_configure(config: pytest.Config) -> None:
    """A throwaway HOME for the whole run (see ``home_guard``), before any test or fixture runs."""
    global _real_home, _real_home_before
    import tempfile

    if _real_home is None:
        run_dir = Path(tempfile.mkdtemp(prefix="ccmemory-test-run-"))
        _real_home, _real_home_before = home_guard.isolate(run_dir)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run when anything was written where the user's real memory or Claude Code's settings live."""
    if _real_home is None:
        return
    found = home_guard.changes(_real_home_before, home_guard.fingerprint(home_guard.watched_paths(_real_home)))
    if found:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        lines = ["the tests wrote outside their own directories, into the user's real home:", *found[:50]]
        if reporter is not None:
            reporter.write_line("\n".join(lines), red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(autouse=True)
def _sys_path_kept() -> Iterator[None]:
    """Undo what a test adds to sys.path (the launcher loaded from a plugin copy adds its src/): a later
    test's spawned processes would otherwise import ccmemory from that copy."""
    saved = list(sys.path)
    yield
    sys.path[:] = saved


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh CCMEMORY_HOME for this test (never the user's real memory)."""
    data = tmp_path / "ccmemory-home"
    monkeypatch.setenv("CCMEMORY_HOME", str(data))
    monkeypatch.delenv("CLAUDE_PLUGIN_DATA", raising=False)
    return data


@pytest.fixture
def project_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    (folder / ".git").mkdir(parents=True)
    return folder


@pytest.fixture
def db(home: Path) -> Iterator[database.Database]:
    """The hook-path connection: standard-library sqlite3, no extension."""
    connection = database.connect(vectors=False)
    yield connection
    connection.close()


@pytest.fixture
def vdb(home: Path) -> Iterator[database.Database]:
    """The CLI/MCP connection: apsw with sqlite-vec loaded."""
    connection = database.connect(vectors=True)
    assert connection.vectors_loaded, connection.vector_error
    yield connection
    connection.close()


@pytest.fixture
def project(db: database.Database, project_dir: Path) -> int:
    return projects.project_id(db, project_dir)


@pytest.fixture(scope="session")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> embeddings.Embedder:
    """The built-in offline model, loaded once per test run."""
    import os

    previous = os.environ.get("CCMEMORY_HOME")
    os.environ["CCMEMORY_HOME"] = str(tmp_path_factory.mktemp("model-home"))
    try:
        return embeddings.Embedder(embeddings.ModelSpec())
    finally:
        if previous is None:
            os.environ.pop("CCMEMORY_HOME", None)
        else:
            os.environ["CCMEMORY_HOME"] = previous


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """A throwaway PostgreSQL with pgvector for a team test module (skipped when none can start, failed in CI)."""
    from testing.team import cluster_or_skip

    yield from cluster_or_skip()


@pytest.fixture
def server(cluster: Cluster) -> Server:
    """A fresh team database on the cluster (modules that need the schema made otherwise define their own)."""
    from testing.team import Server

    return Server(cluster)


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """A git repository the team tests' machines clone."""
    from testing.team import make_origin

    return make_origin(tmp_path / "origin")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The ``long`` loops run when CCMEMORY_LONG_TESTS=1 (.ci/run sets it); their short forms always run."""
    import os

    if os.environ.get("CCMEMORY_LONG_TESTS") == "1":
        return
    skip = pytest.mark.skip(reason="full-size loop: set CCMEMORY_LONG_TESTS=1 to run it (.ci/run does)")
    for item in items:
        if "long" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def idle_embedder(home: Path) -> Iterator[None]:
    """The data dir's embedder lock held by an idle holder, as by a server that embeds nothing.

    For tests that compare every row before and after a command: the embedding worker that hooks and
    commands start would otherwise embed the store's waiting memories in between.
    """
    with locks.held(embedding_worker.lock_path(), stale_after=float("inf"), role=embedding_worker.SERVER):
        yield
