"""Issue 19, item 6: everything ccmemory reads or writes in a project resolves inside it.

A hostile repository (its ``.claude/memory.config.json``, symlinks, ``/dev/zero`` and FIFO
manifests, a ``.claude`` or ``.claude/memory`` link to elsewhere) is run through the real CLI
(``init``, ``index``, ``analyze``, ``discover``, ``search``, ``embed``), a real ``git commit``
with the pre-commit hook ``init`` installs, and the real hooks. After each: no byte of a file
outside the project is in the data directory, nothing outside the project changed, every
command finished and said what it refused, and nothing was written under the fake HOME's
``.claude/commands``. The last tests race a symlink swap against ``safe_files.open_fd``.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import uuid
from pathlib import Path

import pytest

from ccmemory import safe_files
from testing.hooks import common, run_hook, tool_call
from testing.cli import spawn as ccmemory
from testing.mcp import running_server
from testing.knowledge import AUTH, git, write_files

#: Bytes that must never reach the data directory: each outside file holds its own marker.
SECRET = "OUTSIDESECRET" + uuid.uuid4().hex[:12]
HOME_SECRET = "HOMENOTESECRET" + uuid.uuid4().hex[:12]
#: The bare token of a secret-named file inside the repository: only its name says it is one.
VAULT_TOKEN = "VAULTTOKEN" + uuid.uuid4().hex[:12]


# --- fixtures and checks ------------------------------------------------------------------------------------------

@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    """An outside folder and a fake HOME, both holding secrets; an empty git repository beside them."""
    outside = tmp_path / "outside"
    write_files(outside, {
        "pgpass": f"db.internal:5432:*:admin:{SECRET}\n",
        "secret.md": f"### Private journal\n{SECRET} is what I wrote last night.\n",
        "notes/journal.md": f"### Journal\nDiary: {SECRET}\n",
        "claude/knowledge/stolen.md": f"### Stolen\n{SECRET}\n",
        "package.json": json.dumps({"name": f"pkg-{SECRET}"}),
    })
    (outside / "memdir").mkdir()
    fake_home = tmp_path / "fakehome"
    write_files(fake_home, {"notes/private.md": f"### Private\n{HOME_SECRET} lives in my notes.\n"})
    (fake_home / ".claude" / "commands").mkdir(parents=True)
    repo = tmp_path / "repo"
    repo.mkdir()
    assert git(tmp_path / "data", repo, "init", "-q").returncode == 0
    write_files(repo, {"src/index.ts": "export function greet(name: string): string { return name }\n"})
    return {"outside": outside, "home": fake_home, "repo": repo, "data": tmp_path / "data"}


def run(world: dict[str, Path], *args: str, **env: str):
    """The real CLI in the hostile repository, with the fake HOME."""
    return ccmemory(world["data"], world["repo"], *args, HOME=str(world["home"]), **env)


def snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every entry under ``folder``: a file's bytes, a link's target, a folder as such (links not followed)."""
    found: dict[str, bytes | str] = {}
    for path in sorted(folder.rglob("*")):
        key = str(path.relative_to(folder))
        if path.is_symlink():
            found[key] = "-> " + os.readlink(path)
        elif path.is_dir():
            found[key] = "dir"
        elif path.is_file():
            found[key] = path.read_bytes()
    return found


def assert_no_outside_bytes(data: Path, *also: str) -> None:
    """A byte search of every file of the data directory (database, WAL, logs) for the outside secrets (and ``also``)."""
    assert data.exists()
    for path in data.rglob("*"):
        if path.is_file() and not path.is_symlink():
            content = path.read_bytes()
            for secret in (SECRET, HOME_SECRET, *also):
                assert secret.encode() not in content, f"{secret} reached {path}"


def finished(done, *codes: int) -> str:
    """The command exited with one of ``codes`` (not killed, no traceback); its stderr."""
    assert done.returncode in codes, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr, done.stderr
    return done.stderr


def commit(world: dict[str, Path], *paths: str):
    repo = world["repo"]
    assert git(world["data"], repo, "add", "--", *paths).returncode == 0
    done = git(world["data"], repo, "commit", "-q", "-m", "hostile")
    assert done.returncode == 0, done.stderr
    return done


# --- knowledge_dir from the project's settings --------------------------------------------------------------------

@pytest.mark.parametrize("where", ["~/notes", "../outside/notes", "ABSOLUTE", "~/.claude/commands"])
def test_a_knowledge_dir_outside_the_project_is_refused_and_the_default_used(world, where):
    folder = str(world["outside"] / "notes") if where == "ABSOLUTE" else where
    write_files(world["repo"], {".claude/memory.config.json": json.dumps({"knowledge_dir": folder})})
    outside, home = snapshot(world["outside"]), snapshot(world["home"])

    init = run(world, "init", "--yes")
    assert "outside the project" in finished(init, 0)
    assert (world["repo"] / ".claude" / "knowledge" / "gotchas.md").is_file()  # the default folder was used
    write_files(world["repo"], {".claude/knowledge/architecture/auth.md": AUTH})
    index = run(world, "index")
    assert "outside the project" in finished(index, 0, 2)
    assert "Indexed" in index.stdout
    assert snapshot(world["outside"]) == outside and snapshot(world["home"]) == home
    assert_no_outside_bytes(world["data"])
    found = run(world, "search", "token validation", "--mode", "keyword")
    assert "architecture/auth.md" in found.stdout


# --- symlinked knowledge files and folders -------------------------------------------------------------------------

def test_knowledge_links_out_of_the_project_are_skipped_and_links_inside_it_are_read(world):
    repo = world["repo"]
    knowledge = repo / ".claude" / "knowledge"
    write_files(repo, {"docs/shared.md": "### Shared inside\nThe inside link target is indexed.\n",
                       ".claude/knowledge/gotchas.md": "### Real\nA real knowledge file.\n"})
    (knowledge / "journal.md").symlink_to(world["outside"] / "secret.md")
    (knowledge / "pgpass.md").symlink_to(world["outside"] / "pgpass")
    (knowledge / "linked").symlink_to(world["outside"] / "notes", target_is_directory=True)
    (knowledge / "home.md").symlink_to(world["home"] / "notes" / "private.md")
    (knowledge / "shared.md").symlink_to(repo / "docs" / "shared.md")  # inside to inside: fine
    outside = snapshot(world["outside"])

    index = run(world, "index")
    warnings = finished(index, 2)
    for name in ("journal.md", "pgpass.md", "linked", "home.md"):
        assert f"Link to outside the project skipped: {name}" in warnings
    assert_no_outside_bytes(world["data"])
    assert snapshot(world["outside"]) == outside
    found = run(world, "search", "inside link target", "--mode", "keyword")
    assert "shared.md" in found.stdout
    assert "gotchas.md" in run(world, "search", "real knowledge file", "--mode", "keyword").stdout


def test_a_knowledge_link_indexed_before_it_pointed_outside_loses_its_entries(world):
    repo = world["repo"]
    write_files(repo, {".claude/knowledge/notes.md": "### Harmless\nNothing to see.\n"})
    assert finished(run(world, "index"), 0) is not None
    (repo / ".claude" / "knowledge" / "notes.md").unlink()
    (repo / ".claude" / "knowledge" / "notes.md").symlink_to(world["outside"] / "secret.md")
    finished(run(world, "index"), 2)
    assert_no_outside_bytes(world["data"])
    assert "Harmless" not in run(world, "search", "harmless", "--mode", "keyword").stdout


# --- a .claude or .claude/memory directory link ---------------------------------------------------------------------

@pytest.mark.parametrize("linked", [".claude/memory", ".claude"])
def test_a_claude_folder_link_to_elsewhere_redirects_no_write_and_no_read(world, linked):
    repo = world["repo"]
    target = world["outside"] / ("memdir" if linked == ".claude/memory" else "claude")
    (repo / linked).parent.mkdir(parents=True, exist_ok=True)
    (repo / linked).symlink_to(target, target_is_directory=True)
    outside = snapshot(world["outside"])

    init = run(world, "init", "--yes")
    assert "outside the project" in finished(init, 0)
    if linked == ".claude/memory":
        write_files(repo, {".claude/knowledge/architecture/auth.md": AUTH})
    index = run(world, "index")
    assert "outside the project" in finished(index, 1, 2)
    analyze = run(world, "analyze", "--deep")
    finished(analyze, 0)
    discover = run(world, "discover")
    assert "outside the project" in finished(discover, 1, 2)
    paths = [path for path in ("src/index.ts", ".claude/knowledge") if (repo / path).exists()
             and not (repo / path).is_symlink() and (repo / path).resolve().is_relative_to(repo.resolve())]
    committed = commit(world, *paths)
    assert "Traceback" not in committed.stderr
    if linked == ".claude/memory":
        assert "outside the project" in committed.stderr
    assert snapshot(world["outside"]) == outside
    assert_no_outside_bytes(world["data"])


# --- hostile manifests ---------------------------------------------------------------------------------------------

def test_device_fifo_huge_and_linked_manifests_are_skipped_and_every_command_finishes(world):
    repo = world["repo"]
    (repo / "package.json").symlink_to("/dev/zero")
    os.mkfifo(repo / "pyproject.toml")
    with open(repo / "Cargo.toml", "wb") as handle:  # 50 MB (sparse): never read whole
        handle.write(b'[dependencies]\ntokio = "1"\n')
        handle.truncate(50 * 1024 * 1024)
    (repo / "go.mod").symlink_to(world["outside"] / "pgpass")
    (repo / "requirements.txt").symlink_to(world["outside"] / "package.json")
    outside = snapshot(world["outside"])

    init = finished(run(world, "init", "--yes"), 0)
    for name in ("package.json", "pyproject.toml"):
        assert f"{name} skipped" in init
    analyze = finished(run(world, "analyze", "--deep"), 0)
    for name in ("package.json", "pyproject.toml", "Cargo.toml", "go.mod", "requirements.txt"):
        assert f"{name} skipped" in analyze
    discover = finished(run(world, "discover"), 0)
    assert "Cargo.toml skipped" in discover and "go.mod skipped" in discover
    write_files(repo, {".claude/knowledge/architecture/auth.md": AUTH, "src/more.ts": "export const x = 1\n"})
    committed = commit(world, "src", ".claude/knowledge")
    assert "package.json skipped" in committed.stderr
    assert snapshot(world["outside"]) == outside
    assert_no_outside_bytes(world["data"])


def test_a_manifest_linked_outside_the_project_lends_nothing_to_the_discoveries(world):
    (world["repo"] / "package.json").symlink_to(world["outside"] / "package.json")
    finished(run(world, "discover"), 0)
    assert_no_outside_bytes(world["data"])


# --- documents ----------------------------------------------------------------------------------------------------

def test_docs_ingest_follows_no_link_out_of_the_project_nor_to_a_secret_named_file(world):
    """``docs/setup.md -> ~/secrets.txt`` was stored (a bare password) and found by ``docs search``, and a link to
    the project's own ``.vault-token`` got past the name check (red team, hole A). Through the real CLI and the real
    MCP server: a link out, a file outside given by its path, and a link to a secret-named file are refused, each
    saying why and what to do; nothing of them reaches the store; a link inside to a plain file is still read."""
    repo = world["repo"]
    (world["home"] / "secrets.txt").write_text(f"{HOME_SECRET}\n")  # a bare password: only the name says so
    write_files(repo, {".vault-token": f"{VAULT_TOKEN}\n", "docs/guide.md": "# Guide\n\nReleases go out on Fridays.\n"})
    (repo / "docs" / "setup.md").symlink_to(world["home"] / "secrets.txt")
    (repo / "docs" / "journal.md").symlink_to(world["outside"] / "secret.md")
    (repo / "docs" / "notes.md").symlink_to("../.vault-token")
    (repo / "docs" / "release.md").symlink_to("guide.md")
    outside = "outside the project"
    secret_name = "whole content is a secret"
    refused = {"docs/setup.md": outside, "docs/journal.md": outside, "docs/notes.md": secret_name,
               str(world["outside"] / "secret.md"): outside, str(world["home"] / "secrets.txt"): secret_name}

    for path, why in refused.items():
        stderr = finished(run(world, "docs", "ingest", path), 2)
        assert why in stderr, stderr
        assert ("copy the file itself" if why == outside else "put what the documents should say") in stderr
    linked = run(world, "docs", "ingest", "docs/release.md")
    finished(linked, 0)
    assert "Document ingested: Guide" in linked.stdout
    with running_server(world["data"], repo, HOME=str(world["home"])) as server:
        for path, why in refused.items():
            answer = server.call("docs_ingest", {"path": path})
            assert answer.is_error and why in answer.text, answer.text
        assert "unchanged" in server.call("docs_ingest", {"path": "docs/guide.md"}).text

    listed = json.loads(run(world, "docs", "list", "--json").stdout)
    assert [document["source_path"] for document in listed] == [str((repo / "docs" / "guide.md").resolve())]
    for word in (HOME_SECRET, VAULT_TOKEN, SECRET):
        assert "No results" in run(world, "docs", "search", word, "--mode", "keyword").stdout
    assert_no_outside_bytes(world["data"], VAULT_TOKEN)


# --- promotion -----------------------------------------------------------------------------------------------------

def _searched_three_times(world: dict[str, Path]) -> None:
    finished(run(world, "discover"), 0)
    for _ in range(3):
        found = run(world, "search", "entry points", "--mode", "keyword")
        assert "Entry points" in found.stdout, found.stdout + found.stderr


def test_automatic_promotion_is_off_unless_the_user_turns_it_on(world):
    repo = world["repo"]
    write_files(repo, {".claude/memory.config.json": json.dumps({"knowledge_dir": "~/.claude/commands"})})
    finished(run(world, "init", "--yes"), 0)
    _searched_three_times(world)
    assert snapshot(world["home"] / ".claude" / "commands") == {}
    assert not (repo / ".claude" / "knowledge" / "discoveries").exists()


def test_automatic_promotion_once_turned_on_writes_only_into_the_projects_knowledge(world):
    repo = world["repo"]
    write_files(repo, {".claude/memory.config.json": json.dumps({"knowledge_dir": "~/.claude/commands"})})
    write_files(world["data"], {"config.json": json.dumps({"promotion": {"auto_discoveries": True}})})
    finished(run(world, "init", "--yes"), 0)
    _searched_three_times(world)
    assert snapshot(world["home"] / ".claude" / "commands") == {}
    promoted = list((repo / ".claude" / "knowledge" / "discoveries").glob("*.md"))
    assert promoted, "the opted-in promotion wrote nothing"


def test_a_project_setting_cannot_turn_automatic_promotion_on(world):
    repo = world["repo"]
    write_files(repo, {".claude/memory.config.json": json.dumps({"promotion": {"auto_discoveries": True},
                                                                 "auto_promote": True})})
    finished(run(world, "init", "--yes"), 0)
    _searched_three_times(world)
    assert not (repo / ".claude" / "knowledge" / "discoveries").exists()


def test_promote_by_hand_still_works(world):
    finished(run(world, "init", "--yes"), 0)
    _searched_three_times(world)
    done = run(world, "promote", "--auto", "--json")
    finished(done, 0)
    assert [item["action"] for item in json.loads(done.stdout)] and all(
        item["path"].startswith(".claude/knowledge/discoveries/") for item in json.loads(done.stdout))


def test_promotion_never_writes_through_a_discoveries_link_even_into_the_project(world):
    repo = world["repo"]
    finished(run(world, "init", "--yes"), 0)
    (repo / ".claude" / "knowledge" / "discoveries").symlink_to(repo / "src", target_is_directory=True)
    source = snapshot(repo / "src")
    _searched_three_times(world)
    done = run(world, "promote", "--auto")
    assert "outside the knowledge folder" in finished(done, 2)
    assert snapshot(repo / "src") == source


# --- transcripts: one bounded reader for the Stop hook and the embedder --------------------------------------------

@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_hostile_transcript_path_stops_neither_the_hooks_nor_the_embedder(world, kind):
    repo, data = world["repo"], world["data"]
    transcript = world["outside"] / "transcript.jsonl"
    if kind == "fifo":
        os.mkfifo(transcript)
    else:
        transcript = Path("/dev/zero")
    session = "s-" + kind
    start = common(session, repo, "SessionStart", source="startup", model="claude-sonnet-4-6")
    call = tool_call(session, repo, "Edit", {"file_path": str(repo / "src" / "index.ts"), "old_string": "name",
                                             "new_string": "who"}, {"filePath": str(repo / "src" / "index.ts")}, "t1")
    stop = common(session, repo, "Stop", prompt_id="p1", stop_hook_active=False, last_assistant_message="Done.")
    end = common(session, repo, "SessionEnd", reason="other")
    for name, payload in (("session_start", start), ("post_tool_use", call), ("stop", stop), ("session_end", end)):
        payload["transcript_path"] = str(transcript)
        assert run_hook(name, payload, data, cwd=repo).returncode == 0, name
    finished(run(world, "embed"), 0)


# --- safe_files.open_fd: no window between the check and the open ---------------------------------------------------

def _swap_target(tmp_path: Path) -> tuple[Path, Path, Path]:
    root = tmp_path / "root"
    root.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET)
    path = root / "file.txt"
    path.write_text("inside")
    return root, secret, path


def _swap_to_link(path: Path, secret: Path) -> None:
    temporary = path.with_name(path.name + ".new")
    temporary.symlink_to(secret)
    os.replace(temporary, path)


def test_a_link_swapped_in_while_open_fd_checks_the_path_is_never_read(tmp_path, monkeypatch):
    """The swap happens at the first real-path lookup of the call: the moment a check-then-open has
    found the path safe, before it opens it again."""
    root, secret, path = _swap_target(tmp_path)
    real = os.path.realpath
    swapped: list[bool] = []

    def realpath_then_swap(name, *args, **kwargs):
        resolved = real(name, *args, **kwargs)
        if not swapped:
            swapped.append(True)
            _swap_to_link(path, secret)
        return resolved

    monkeypatch.setattr(os.path, "realpath", realpath_then_swap)
    try:
        data = safe_files.read_regular(str(path), 1024, root=str(root))
    except safe_files.UnsafeFileError as exc:
        assert "changed while it was being opened" in str(exc) or "outside the project" in str(exc)
    else:
        assert data == b"inside"
    assert swapped


@pytest.mark.parametrize("how", ["kernel path", "portable fallback"])
def test_open_fd_checks_the_file_it_opened_not_the_path_it_was_given(tmp_path, monkeypatch, how):
    """A descriptor on a file outside the root is refused although its path now names a file inside, and
    one whose file is no longer at its path is refused too."""
    if how == "portable fallback":  # what systems without /proc/self/fd or F_GETPATH check
        monkeypatch.setattr(safe_files, "_opened_path", lambda fd: None)
    root, secret, path = _swap_target(tmp_path)
    for opened, accepted in ((path, True), (secret, False)):
        fd = os.open(opened, os.O_RDONLY)
        try:
            if accepted:
                safe_files._check_opened(fd, os.fstat(fd), str(path), str(root))
            else:
                with pytest.raises(safe_files.UnsafeFileError, match="outside the project|changed while"):
                    safe_files._check_opened(fd, os.fstat(fd), str(path), str(root))
        finally:
            os.close(fd)
    fd = os.open(path, os.O_RDONLY)
    try:
        path.unlink()
        path.write_text("a new file at the same path")
        with pytest.raises(safe_files.UnsafeFileError, match="changed while it was being opened"):
            safe_files._check_opened(fd, os.fstat(fd), str(path), str(root))
    finally:
        os.close(fd)


def test_a_path_flipping_between_a_file_and_a_link_out_never_yields_the_outside_file(tmp_path):
    root, secret, path = _swap_target(tmp_path)
    stop = threading.Event()

    def flip() -> None:
        plain = path.with_name("plain.new")
        while not stop.is_set():
            _swap_to_link(path, secret)
            plain.write_text("inside")
            os.replace(plain, path)

    flipper = threading.Thread(target=flip, daemon=True)
    flipper.start()
    leaked = 0
    try:
        for _ in range(3000):
            try:
                leaked += SECRET.encode() in safe_files.read_regular(str(path), 1024, root=str(root))
            except safe_files.UnsafeFileError:
                pass
    finally:
        stop.set()
        flipper.join(timeout=30)
    assert leaked == 0


def test_writes_with_a_root_never_create_or_truncate_outside_it(tmp_path):
    root = tmp_path / "root"
    (root / ".claude").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "errors.log").write_text("keep me")
    (root / ".claude" / "memory").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(safe_files.UnsafeFileError, match="outside the project"):
        safe_files.open_fd(str(root / ".claude" / "memory" / "errors.log"), write=True, root=str(root),
                           flags=os.O_CREAT | os.O_TRUNC)
    with pytest.raises(safe_files.UnsafeFileError, match="outside the project"):
        safe_files.make_dirs(str(root / ".claude" / "memory" / "deeper"), str(root))
    with pytest.raises(safe_files.UnsafeFileError, match="outside the project"):
        safe_files.create_new(str(root / ".claude" / "memory" / "new.txt"), b"x", root=str(root))
    with pytest.raises(safe_files.UnsafeFileError, match="outside the project"):
        safe_files.replace_text(str(root / ".claude" / "memory" / "meta.json"), "{}", root=str(root))
    assert snapshot(elsewhere) == {"errors.log": b"keep me"}


# --- the shape of a knowledge tree ---------------------------------------------------------------------------------

def test_links_that_fan_out_are_read_once_each_and_the_index_finishes(world):
    """Two links in each of 40 folders to the next: no cycle, every target inside the project, 2^40 paths.
    Each real folder is read once; the index finishes and says which links it skipped."""
    knowledge = world["repo"] / ".claude" / "knowledge"
    depth = 40
    write_files(knowledge, {f"d{level}/note{level}.md": f"### Level {level}\nFanout level {level}.\n"
                            for level in range(depth)})
    for level in range(depth - 1):
        for name in ("a", "b"):
            (knowledge / f"d{level}" / name).symlink_to(f"../d{level + 1}", target_is_directory=True)
    warnings = finished(run(world, "index"), 2)
    assert "Folder read already as d2/ skipped: d1/a" in warnings
    assert "Indexed 40 file(s)" in run(world, "index", "--force").stdout
    found = run(world, "search", "Fanout level 39", "--mode", "keyword")
    assert found.stdout.count("note39.md") == 1, found.stdout


def test_a_tree_deeper_than_python_recursion_is_walked_to_its_limit_and_the_rest_indexed(world, tmp_path):
    """1,200 nested folders (deeper than Python's recursion limit): a warning, the files above indexed."""
    knowledge = world["repo"] / ".claude" / "knowledge"
    write_files(knowledge, {"top.md": "### Top\nThe top file stays indexed.\n"})
    deep = os.path.join(*["a"] * 1200)
    subprocess.run(["mkdir", "-p", deep], cwd=knowledge, check=True)  # os.makedirs recurses per level
    try:
        (knowledge / deep / "bottom.md").write_text("### Bottom\nToo deep.\n")
        warnings = finished(run(world, "index"), 2)
        assert f"Folder more than {safe_files.MAX_WALK_DEPTH} levels deep skipped" in warnings
        assert "top.md" in run(world, "search", "top file stays", "--mode", "keyword").stdout
    finally:
        subprocess.run(["rm", "-rf", "a"], cwd=knowledge, check=True)  # shutil.rmtree recurses too


def test_a_name_that_is_not_utf8_is_skipped_and_the_rest_indexed(world):
    """A repository may hold file names of any bytes; the store holds text: such a name is skipped, said so."""
    knowledge = world["repo"] / ".claude" / "knowledge"
    write_files(knowledge, {"good.md": "### Good\nThe well named file.\n"})
    with open(os.path.join(bytes(knowledge), b"bad\xff.md"), "w") as handle:
        handle.write("### Bad\nBadly named.\n")
    os.mkdir(os.path.join(bytes(knowledge), b"dir\xfe"))
    warnings = finished(run(world, "index"), 2)
    assert "Name that is not UTF-8 skipped: bad\\udcff.md" in warnings
    assert "Name that is not UTF-8 skipped: dir\\udcfe" in warnings
    assert "good.md" in run(world, "search", "well named file", "--mode", "keyword").stdout


def test_a_source_tree_deeper_than_python_recursion_is_analyzed_to_its_limit(world):
    """1,200 nested source folders and analyzer folders (Python 3.11's ``os.walk`` recursed and raised): ``analyze``,
    ``discover`` and ``init`` finish and say what they left out; the analyzers cannot be allowed."""
    repo = world["repo"]
    deep = os.path.join(*["a"] * 1200)
    for folder in (repo / "src", repo / ".claude" / "analyzers"):
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mkdir", "-p", deep], cwd=folder, check=True)  # os.makedirs recurses per level
        (folder / deep / "x.py").write_text("def hidden():\n    pass\n")
    write_files(repo, {".claude/analyzers/python.py": "def analyze(path, text):\n    return {}\n"})
    try:
        analyzed = run(world, "analyze")
        finished(analyzed, 0)
        assert f"Folders more than {safe_files.MAX_WALK_DEPTH} levels deep were not read" in analyzed.stdout
        finished(run(world, "discover"), 0)
        finished(run(world, "init", "--yes", "--no-hook"), 0)
        refused = run(world, "analyze", "--trust-analyzers")
        assert "nests folders more than" in refused.stdout + refused.stderr
    finally:
        for folder in (repo / "src", repo / ".claude" / "analyzers"):
            subprocess.run(["rm", "-rf", "a"], cwd=folder, check=True)  # shutil.rmtree recurses too
