"""Issue 19, the network and size boundary: docs ingest fetches only public pages, within one deadline, without
holding the MCP server; cutting text is linear; the viewer's token never reaches a command line.

Every fetch goes through the real entry points (the MCP server over stdio, the ``ccmemory`` CLI) against
servers on 127.0.0.1; addresses that must be refused before any connection (10.x, 169.254.169.254, ...) are
never contacted, so the tests need no network. Pages on 127.0.0.1 are reached only through the user's own
opt-in (``docs.allow_private_hosts`` in the data directory's config.json).
"""

from __future__ import annotations

import http.server
import ipaddress
import json
import random
import re
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from testing.cli import MODULE, spawn as ccmemory
from testing.hooks import rows
from testing.mcp import running_server

from ccmemory import config, documents, fetch, html_text, markdown_blocks, tokens
from testing.env import isolated_env

# ------------------------------------------------------------------ local servers


class _Server:
    """A loopback HTTP server answering every GET with ``respond(handler)``; counts the requests it got."""

    def __init__(self, respond: Callable[[http.server.BaseHTTPRequestHandler], None]) -> None:
        outer = self
        self.requests: list[str] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                outer.requests.append(self.path)
                respond(self)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_port
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _page(body: bytes, content_type: str = "text/markdown; charset=utf-8") -> Callable[[Any], None]:
    def respond(handler: Any) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)
    return respond


def _redirect(location: Callable[[], str], status: int = 302) -> Callable[[Any], None]:
    def respond(handler: Any) -> None:
        handler.send_response(status)
        handler.send_header("Location", location())
        handler.send_header("Content-Length", "0")
        handler.end_headers()
    return respond


@pytest.fixture
def serve() -> Iterator[Callable[..., _Server]]:
    started: list[_Server] = []

    def start(respond: Callable[[Any], None]) -> _Server:
        started.append(_Server(respond))
        return started[-1]

    yield start
    for server in started:
        server.close()


class _RawServer:
    """A TCP server on 127.0.0.1 that runs ``talk(connection)`` for each client (for garbage and trickles)."""

    def __init__(self, talk: Callable[[socket.socket], None]) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.talk = talk
        self.stopped = threading.Event()
        self.connected = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                connection, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        self.connected.set()
        try:
            self.talk(connection)
        except OSError:
            pass
        finally:
            connection.close()

    def close(self) -> None:
        self.stopped.set()
        self.sock.close()


def _trickle(stopped: threading.Event, every: float, chunk: bytes = b"x") -> Callable[[socket.socket], None]:
    """A server that sends a valid header start, then ``chunk`` every ``every`` seconds, forever."""
    def talk(connection: socket.socket) -> None:
        connection.recv(65536)
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n")
        while not stopped.wait(every):
            connection.sendall(chunk)
    return talk


def _allow(*hosts: str) -> None:
    """The user's own opt-in (config.json in CCMEMORY_HOME): these hosts may be fetched although not public."""
    config.write_file_settings({"docs": {"allow_private_hosts": list(hosts)}})


def _closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


# ------------------------------------------------------------------ the address policy

NOT_PUBLIC = [
    "127.0.0.1", "127.255.255.254", "10.0.0.1", "172.16.5.4", "192.168.1.1", "100.64.0.1", "169.254.169.254",
    "0.0.0.0", "224.0.0.1", "239.255.255.250", "255.255.255.255", "240.0.0.1", "192.0.2.1", "198.18.0.1",
    "::1", "::", "fe80::1", "fc00::1", "fd12:3456::1", "fec0::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1",
    "::ffff:169.254.169.254", "2002:7f00:1::1", "2002:a00:1::1", "64:ff9b::a00:1", "64:ff9b::7f00:1",
    "2001:0:4136:e378:8000:63bf:f5ff:fffe", "2001:db8::1", "100::1",
]
PUBLIC = ["93.184.216.34", "1.1.1.1", "8.8.8.8", "2606:4700:4700::1111", "2a00:1450:4001:80b::200e",
          "::ffff:93.184.216.34", "64:ff9b::5db8:d822"]


@pytest.mark.parametrize("address", NOT_PUBLIC)
def test_the_policy_refuses_every_address_that_is_not_public(address: str) -> None:
    ip = ipaddress.ip_address(address)
    assert not fetch.is_public(ip)
    with pytest.raises(fetch.RefusedAddress, match="not public"):
        fetch.checked_addresses("docs.example.com", [ipaddress.ip_address("93.184.216.34"), ip], fetch.Allowed())


@pytest.mark.parametrize("address", PUBLIC)
def test_the_policy_lets_public_addresses_through(address: str) -> None:
    assert fetch.is_public(ipaddress.ip_address(address))


def test_the_users_opt_in_names_hosts_and_networks_and_nothing_else() -> None:
    allowed = fetch.Allowed.parse(["wiki.corp.", "10.20.0.0/16", "[::1]", " 127.0.0.1 ", ""])
    ten = ipaddress.ip_address("10.20.3.4")
    assert allowed.permits("anything", ten) and not allowed.permits("anything", ipaddress.ip_address("10.21.0.1"))
    assert allowed.permits("wiki.corp", ipaddress.ip_address("192.168.9.9"))
    assert allowed.permits("x", ipaddress.ip_address("::1")) and allowed.permits("x", ipaddress.ip_address("127.0.0.1"))
    assert not allowed.permits("x", ipaddress.ip_address("169.254.169.254"))


# ------------------------------------------------------------------ SSRF through the real entry points

def _literal_urls(port: int) -> list[str]:
    return [
        f"http://127.0.0.1:{port}/", f"http://localhost:{port}/", f"http://LOCALHOST.:{port}/",
        f"http://[::1]:{port}/", f"http://2130706433:{port}/", f"http://0x7f.1:{port}/", f"http://0177.0.0.1:{port}/",
        f"http://0.0.0.0:{port}/", f"http://[::ffff:127.0.0.1]:{port}/", f"https://127.0.0.1:{port}/",
        "http://10.0.0.1/", "http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/",
        "http://100.100.100.200/latest/meta-data/", "http://192.168.0.1/", "http://user:pw@127.0.0.1:1/",
    ]


def test_docs_ingest_refuses_internal_addresses_without_contacting_them(home: Path, project_dir: Path,
                                                                        serve: Callable[..., _Server]) -> None:
    target = serve(_page(b"# Internal\n\nsecret admin page"))
    with running_server(home, project_dir) as server:
        for url in _literal_urls(target.port):
            answer = server.call("docs_ingest", {"url": url})
            assert answer.is_error and "not public" in answer.text, (url, answer.text)
        assert "No documents found" in server.call("docs_search", {"query": "secret admin page"}).text
    assert target.requests == []  # not one connection reached the server


def test_the_cli_refuses_internal_addresses_too(home: Path, project_dir: Path, serve: Callable[..., _Server]) -> None:
    target = serve(_page(b"# Internal\n\nsecret admin page"))
    for url in (target.url("/"), "http://169.254.169.254/latest/meta-data/"):
        result = ccmemory(home, project_dir, "docs", "ingest", "--url", url)
        assert result.returncode != 0 and "not public" in result.stdout + result.stderr
    assert target.requests == []


def test_a_project_cannot_opt_in_for_the_user(home: Path, project_dir: Path, serve: Callable[..., _Server]) -> None:
    """The opt-in is read from the user's data directory only, not from anything in the repository."""
    target = serve(_page(b"# Internal\n\nsecret admin page"))
    for name in ("memory.config.json", ".claude/settings.json", ".claude/memory.config.json", "config.json"):
        path = project_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"docs": {"allow_private_hosts": ["127.0.0.1"]},
                                    "env": {"CLAUDE_PLUGIN_OPTION_ALLOW_PRIVATE_HOSTS": "127.0.0.1"}}))
    result = ccmemory(home, project_dir, "docs", "ingest", "--url", target.url("/"))
    assert result.returncode != 0 and "not public" in result.stdout + result.stderr
    assert target.requests == []


def test_redirects_are_checked_at_every_hop(home: Path, project_dir: Path, serve: Callable[..., _Server]) -> None:
    _allow("127.0.0.1")
    final = serve(_page(b"# Allowed page\n\nreached after one redirect"))
    hops = {
        "to the metadata address": serve(_redirect(lambda: "http://169.254.169.254/latest/meta-data/")),
        "to a private network": serve(_redirect(lambda: "http://10.0.0.1/admin", 301)),
        "to localhost over IPv6": serve(_redirect(lambda: f"http://[::1]:{final.port}/", 307)),
        "to ftp": serve(_redirect(lambda: f"ftp://127.0.0.1:{final.port}/x", 308)),
        "to a file": serve(_redirect(lambda: "file:///etc/passwd")),
    }
    loop = serve(_redirect(lambda: loop.url(f"/again{len(loop.requests)}")))
    good = serve(_redirect(lambda: final.url("/page.md")))
    with running_server(home, project_dir) as server:
        for why, hop in hops.items():
            answer = server.call("docs_ingest", {"url": hop.url("/start")})
            assert answer.is_error, why
            assert ("not public" in answer.text) or ("non-http(s)" in answer.text), (why, answer.text)
        answer = server.call("docs_ingest", {"url": loop.url("/")})
        assert answer.is_error and "more than 5 redirects" in answer.text
        assert len(loop.requests) == fetch.MAX_REDIRECTS + 1
        answer = server.call("docs_ingest", {"url": good.url("/")})
        assert not answer.is_error and "Allowed page" in answer.text
    assert final.requests == ["/page.md"]  # the refused hops never reached it (not over ::1 nor ftp)


def _error_of(server: Any, url: str) -> str:
    answer = server.call("docs_ingest", {"url": url})
    assert answer.is_error
    return answer.text.replace(url, "<url>")


def test_an_open_port_and_a_closed_one_fail_alike(home: Path, project_dir: Path) -> None:
    """Whatever answers (garbage, a reset, an empty reply) or nothing at all: one message, no detail."""
    _allow("127.0.0.1")
    servers = [
        _RawServer(lambda c: (c.recv(65536), c.sendall(b"SSH-2.0-OpenSSH_9.6\r\n"))),
        _RawServer(lambda c: (c.recv(65536), c.sendall(b"\x00\xff garbage \r\n\r\n" * 10))),
        _RawServer(lambda c: c.recv(65536)),  # closes without a word
        _RawServer(lambda c: (c.recv(65536), c.sendall(b"220 smtp.example ESMTP\r\n"))),
    ]
    try:
        with running_server(home, project_dir) as server:
            closed = _error_of(server, f"http://127.0.0.1:{_closed_port()}/")
            assert "Could not fetch <url>" in closed
            for raw in servers:
                assert _error_of(server, f"http://127.0.0.1:{raw.port}/") == closed
            assert _error_of(server, "http://nonexistent.invalid/") == closed
    finally:
        for raw in servers:
            raw.close()


def test_the_fetch_has_one_deadline_whatever_the_server_sends(home: Path) -> None:
    """A server sending fast enough for the rate floor, but forever, is cut at the deadline."""
    stopped = threading.Event()
    raw = _RawServer(_trickle(stopped, 0.05, b"y" * 200))
    try:
        with pytest.raises(fetch.FetchError, match="no complete answer within 2 s"):
            fetch.get(f"http://127.0.0.1:{raw.port}/", 10_000_000, allowed=fetch.Allowed.parse(["127.0.0.1"]),
                      deadline_seconds=2)
    finally:
        stopped.set()
        raw.close()


def test_a_page_over_the_size_limit_is_refused(home: Path, project_dir: Path, serve: Callable[..., _Server]) -> None:
    _allow("127.0.0.1")

    def endless(handler: Any) -> None:  # no Content-Length, more than the limit
        handler.send_response(200)
        handler.send_header("Content-Type", "text/plain")
        handler.end_headers()
        block = b"z" * 65536
        for _ in range(documents.MAX_DOCUMENT_BYTES // len(block) + 2):
            handler.wfile.write(block)

    def claims(handler: Any) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/plain")
        handler.send_header("Content-Length", str(documents.MAX_DOCUMENT_BYTES * 100))
        handler.end_headers()

    with running_server(home, project_dir) as server:
        for respond in (endless, claims):
            answer = server.call("docs_ingest", {"url": serve(respond).url("/big.txt")})
            assert answer.is_error and "larger than 5,242,880 bytes" in answer.text


def test_a_compressed_or_binary_page_is_refused_not_stored_as_noise(home: Path, project_dir: Path,
                                                                    serve: Callable[..., _Server]) -> None:
    import gzip

    _allow("127.0.0.1")

    def compressed(handler: Any) -> None:  # compressed although the request asked for no encoding
        body = gzip.compress(b"# Notes\n\nplain words " * 200)
        handler.send_response(200)
        handler.send_header("Content-Type", "text/plain")
        handler.send_header("Content-Encoding", "gzip")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    with running_server(home, project_dir) as server:
        answer = server.call("docs_ingest", {"url": serve(compressed).url("/notes.txt")})
        assert answer.is_error and "came compressed (gzip)" in answer.text
        answer = server.call("docs_ingest", {"url": serve(_page(b"\x00\x01binary\x00" * 50, "text/plain")).url("/b.txt")})
        assert answer.is_error and "binary data" in answer.text
    assert rows(home, "SELECT COUNT(*) AS n FROM documents")[0]["n"] == 0


def test_a_slow_server_ends_at_the_deadline_and_other_tools_answer_meanwhile(home: Path, project_dir: Path) -> None:
    """One byte every 2 s: docs_ingest gives up with the generic failure; memory tools are not held up."""
    _allow("127.0.0.1")
    stopped = threading.Event()
    raw = _RawServer(_trickle(stopped, 2.0))
    url = f"http://127.0.0.1:{raw.port}/slow"
    try:
        with running_server(home, project_dir) as server:
            assert not server.call("memory_add", {"content": "The staging database listens on port 5433."}).is_error
            ingest: dict[str, Any] = {}

            def run_ingest() -> None:
                ingest["answer"] = server.call("docs_ingest", {"url": url})
                ingest["at"] = time.monotonic()

            worker = threading.Thread(target=run_ingest)
            worker.start()
            assert raw.connected.wait(30)
            search = server.call("memory_search", {"query": "staging database port"})
            answered_at = time.monotonic()
            added = server.call("memory_add", {"content": "Deploys go out on Tuesdays."})
            assert not search.is_error and "5433" in search.text
            assert not added.is_error
            assert worker.is_alive()  # the ingest was still waiting on the slow server
            worker.join(fetch.DEADLINE_SECONDS + 30)
            assert not worker.is_alive()
            assert answered_at < ingest["at"]
            answer = ingest["answer"]
            assert answer.is_error and "Could not fetch" in answer.text and "within 20 s" in answer.text
    finally:
        stopped.set()
        raw.close()


# ------------------------------------------------------------------ linear-time cutting


def _naive_split(text: str, limit: int) -> tuple[list[str], str]:
    """What chunking did before: head() of the rest, count the rest, again (quadratic, kept as the reference)."""
    pieces, size = [], tokens.count(text)
    while size > limit:
        cut = tokens.head(text, limit)
        if not cut:
            break
        pieces.append(cut)
        text = text[len(cut):]
        size = tokens.count(text)
    return pieces, text


def _random_text(seed: int, size: int) -> str:
    rnd = random.Random(seed)
    vocabulary = ["word", "naïve", "東京都", "データ", "😀", "x" * 130, "unbelievably", "http://a.example/b?c=d",
                  "İstanbul", "e\u0301", "\u0000", "don't", "3.14", "\u200b", "\u2028", "ß", "ﬁ", "Ⅻ", "a" * 99,
                  "supercalifragilistic", "ǅ", "\ufeff", "\t"]
    glue = [" ", " ", "", "\n", ". ", "-", "/"]
    parts: list[str] = []
    while sum(map(len, parts)) < size:
        parts.append(rnd.choice(vocabulary))
        parts.append(rnd.choice(glue))
    return "".join(parts)


@pytest.mark.parametrize("seed", range(30))
def test_the_linear_split_cuts_exactly_where_the_old_one_did(seed: int) -> None:
    text = _random_text(seed, random.Random(seed).choice([200, 800, 2500]))
    for limit in (5, 31, 254):
        assert tokens.split(text, limit) == _naive_split(text, limit), (seed, limit)


class _CountingTokenizer:
    """The real tokenizer, counting the characters it is asked to encode."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.characters = 0

    def encode(self, text: str, **options: Any) -> Any:
        self.characters += len(text)
        return self.real.encode(text, **options)

    def encode_batch(self, texts: list[str], **options: Any) -> Any:
        self.characters += sum(map(len, texts))
        return self.real.encode_batch(texts, **options)


HOSTILE_SHAPES = {
    "one long sentence": lambda n: ("alpha beta gamma delta " * (n // 23 + 1))[:n],
    "long words cut in the middle": lambda n: ("abcdefghij" * 9 + " ") * (n // 91),
    "CJK without spaces": lambda n: "東京都データベース" * (n // 9),
    "one line of code": lambda n: "```\n" + "x=y+z;" * (n // 6) + "\n```",
    "numbers": lambda n: " ".join(str(i) for i in range(n // 7)),
}


@pytest.mark.parametrize("shape", HOSTILE_SHAPES)
def test_cutting_a_document_tokenizes_its_text_a_bounded_number_of_times(shape: str,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The cost is a measure of work, not of time: characters sent to the tokenizer per character of text."""
    counting = _CountingTokenizer(tokens.tokenizer())
    monkeypatch.setattr(tokens, "tokenizer", lambda: counting)
    text = HOSTILE_SHAPES[shape](1_000_000)
    title, chunks = documents.chunk_text(text)
    assert chunks and counting.characters <= 6 * len(text), counting.characters / len(text)


def test_a_5_mb_document_is_ingested(home: Path, project_dir: Path) -> None:
    """The largest document ccmemory takes, in its worst shape (one sentence), through the real CLI."""
    page = project_dir / "big.md"
    page.write_text("# Big\n\n" + HOSTILE_SHAPES["one long sentence"](documents.MAX_DOCUMENT_BYTES - 100))
    result = ccmemory(home, project_dir, "docs", "ingest", str(page), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["chunk_count"] > 1000


@pytest.mark.parametrize("text", [
    "[" * 300_000, "*a" * 150_000, "[a](" * 75_000, "`" * 300_000, "_a" * 150_000, "<" * 300_000,
])
def test_markdown_inline_markup_is_parsed_only_in_headings(text: str) -> None:
    """Inline markup costs the most to parse and only headings use it; bodies are kept as written."""
    parsed = markdown_blocks.parse(text)
    assert "".join(block.text for section in parsed.sections for block in section.blocks) == text


def test_a_huge_character_reference_does_not_break_the_html_reader() -> None:
    text, _ = html_text.to_markdown("<p>a &#" + "9" * 100_000 + "; b &#x41;&#0000000000000000065;</p>")
    assert text == "a \ufffd b AA"


#: Pages whose constructs never close in time: the standard parser rescans each to the end of the page.
UNCLOSED_HTML = {"tag openings": "<a ", "attributes": '<a href="', "comments": "<!--", "end tags": "</b",
                 "instructions": "<?x"}


@pytest.mark.parametrize("shape", sorted(UNCLOSED_HTML))
def test_a_page_of_unclosed_constructs_is_ingested_as_its_text(home: Path, project_dir: Path, shape: str) -> None:
    """400 KB of one unclosed construct (80 KB of ``<a `` took a minute before) through the real CLI: ingested,
    its text kept as a browser shows a stray ``<``."""
    unit = UNCLOSED_HTML[shape]
    page = project_dir / "page.html"
    page.write_text("<html><head><title>Trap</title></head><body><p>Kept words.</p>" + unit * (400_000 // len(unit)))
    result = ccmemory(home, project_dir, "docs", "ingest", str(page), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["title"] == "Trap"
    assert "Kept words" in ccmemory(home, project_dir, "docs", "search", "Kept words").stdout


def test_the_html_reader_keeps_closed_constructs_and_shows_stray_brackets() -> None:
    page = ('<p>a <b>bold</b> 1 < 2 <!-- gone <i> --> x<y <a href="u">link</a></p><script>if (a<b) {}</script>'
            '<pre>x < y</pre><p>tail <br')
    text, _ = html_text.to_markdown(page)
    assert text == "a bold 1 < 2  x<y link\n\n```\nx < y\n```\n\ntail <br"  # the comment leaves its spaces


# ------------------------------------------------------------------ the viewer's token


def test_the_browser_is_started_without_the_token_on_its_command_line(home: Path, project_dir: Path,
                                                                       tmp_path: Path) -> None:
    """`ccmemory ui` opens a private launch file, so `ps` shows a path and never the token."""
    record = tmp_path / "browser-argv.json"
    browser = tmp_path / "browser.py"
    browser.write_text("import json, sys\n"
                       f"json.dump(sys.argv, open({str(record)!r}, 'w'))\n")
    browser.chmod(0o755)
    env = isolated_env(home, PYTHONUNBUFFERED="1", BROWSER=f"{sys.executable} {browser} %s")
    process = subprocess.Popen([*MODULE, "ui", "--keyword-only", "--project",
                                str(project_dir)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                               cwd=str(project_dir), text=True)
    try:
        token = _printed_token(process)
        deadline = time.monotonic() + 30
        while not record.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        argv = json.loads(record.read_text())
        assert token not in " ".join(argv)
        with open(f"/proc/{process.pid}/cmdline", "rb") as handle:
            assert token.encode() not in handle.read()
        opened = argv[-1]
        assert opened.startswith("file://")
        launch_file = Path(opened[len("file://"):])
        assert stat.S_IMODE(launch_file.stat().st_mode) == 0o600
        assert stat.S_IMODE(launch_file.parent.stat().st_mode) == 0o700
        target = re.search(r'url=([^"]+)"', launch_file.read_text()).group(1).replace("&amp;", "&")
        assert f"#token={token}" in target and target.startswith("http://127.0.0.1:")
    finally:
        process.send_signal(2)
        process.wait(timeout=15)
    assert not launch_file.exists()  # removed when the viewer stops


def _printed_token(process: subprocess.Popen) -> str:
    assert process.stdout is not None
    seen = []
    for line in process.stdout:
        seen.append(line)
        found = re.search(r"#token=([\w-]+)", line)
        if found:
            return found.group(1)
    raise AssertionError("".join(seen))


# ------------------------------------------------------------------ the knowledge index (`ccmemory index`, the git hook)

KNOWLEDGE_SHAPES = {
    "unclosed comments": lambda n: "<!--\n" * (n // 5),
    "unclosed directives on one line": lambda n: "<!-- keywords:" * (n // 14),
    "one long sentence": lambda n: "word " * (n // 5),
    "tiny paragraphs": lambda n: "a b c\n\n" * (n // 7),
    "no spaces": lambda n: "x" * n,
}


def test_find_directives_matches_what_the_pattern_matched() -> None:
    from ccmemory.knowledge import sections

    pattern = re.compile(r"<!--\s*(vector-index|keywords)\s*:(.*?)-->", re.IGNORECASE | re.DOTALL)
    rnd = random.Random(5)
    bits = ["<!--", "-->", " keywords:", "KEYWORDS :", "vector-index:", " a, b ", "\n", "x", "<!-- ", "-", ">", ":"]
    for _ in range(3000):
        text = "".join(rnd.choice(bits) for _ in range(rnd.randint(0, 25)))
        expected = [(m.start(), m.end(), m.group(1).lower(), m.group(2).strip()) for m in pattern.finditer(text)]
        assert list(sections._find_directives(text)) == expected, text


@pytest.mark.parametrize("shape", KNOWLEDGE_SHAPES)
def test_the_knowledge_parser_does_bounded_work_per_character(shape: str) -> None:
    """Characters handed to the size test per character of the file: a small constant (it was the entry size)."""
    from ccmemory.knowledge import sections

    checked = [0]

    def fits(text: str) -> bool:
        checked[0] += len(text)
        return len(text) < 2000 and tokens.count(text) <= tokens.CONTENT_TOKENS

    text = KNOWLEDGE_SHAPES[shape](300_000)
    parsed = sections.parse(text, "notes.md", fits=fits)
    assert parsed.entries and checked[0] <= 40 * len(text), checked[0] / len(text)


def test_ccmemory_index_reads_hostile_knowledge_files_and_skips_oversized_ones(home: Path, tmp_path: Path) -> None:
    from testing.knowledge import make_repo

    repo = tmp_path / "repo"
    files: dict[str, str | bytes] = {f"shape-{number}.md": make(300_000)
                                     for number, make in enumerate(KNOWLEDGE_SHAPES.values())}
    files["huge.md"] = "### Huge\n" + "z " * (3 * 1024 * 1024)  # 6 MB: over the per-file cap
    make_repo(repo, files)
    result = ccmemory(home, repo, "index", "--dry-run", "--json")  # every file parsed; nothing embedded
    report = json.loads(result.stdout)
    outcomes = {item["path"]: item["action"] for item in report["files"]}
    assert outcomes.pop("huge.md") == "skipped" and any("File too large: huge.md" in w for w in report["warnings"])
    assert set(outcomes.values()) == {"indexed"}, outcomes


def test_a_heading_longer_than_an_entry_no_longer_hangs_the_index(home: Path, tmp_path: Path) -> None:
    """Before, nothing fitted after such a heading and the text was halved forever (`ccmemory index` and the hook hung)."""
    from testing.knowledge import make_repo

    repo = tmp_path / "repo"
    make_repo(repo, {"notes.md": "### " + "Long heading " * 400 + "\n\nThe body of the section.\n"})
    result = ccmemory(home, repo, "index", "--dry-run", "--json")
    assert result.returncode in (0, 2), result.stderr
    assert json.loads(result.stdout)["entries_created"] == 1
