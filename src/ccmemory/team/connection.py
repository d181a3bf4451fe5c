"""Which server to talk to, opening a connection to it, and keeping its credentials out of every message.

Credentials follow libpq's conventions and never pass through ccmemory's own files but one:

1. a URL given on the command line (``ccmemory server init URL``);
2. ``CCMEMORY_SYNC_URL``;
3. the ``sync.url`` setting in ``<data dir>/config.json``, refused when it holds a password and
   the file is readable by anyone but its owner;
4. otherwise libpq's own defaults: ``PG*`` variables, ``PGSERVICE`` and ``~/.pg_service.conf``,
   ``~/.pgpass`` (the recommended home of a password).

Every error that leaves this module is a :class:`ServerError` whose message went through
:func:`scrub`: no password, no connection URL, whatever psycopg put in its own message.
"""

from __future__ import annotations

import os
import re
import stat
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator

from ..errors import CCMemoryError

if TYPE_CHECKING:
    import psycopg

#: Oldest PostgreSQL (``server_version_num``) the server schema supports; tested on 16.
MIN_SERVER_VERSION = 130000
#: Oldest pgvector: HNSW indexes arrived in 0.5.0.
MIN_PGVECTOR = (0, 5, 0)
ENV_URL = "CCMEMORY_SYNC_URL"
INSTALL_HINT = "install the team extra: pip install 'ccmemory[team]' (psycopg 3 and pgvector)"

_URL_PASSWORD = re.compile(r"(?i)(postgres(?:ql)?://[^:/@\s]*:)[^@\s]*(@)")
_URL = re.compile(r"(?i)postgres(?:ql)?://\S+")
_KEYWORD_PASSWORD = re.compile(r"(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)")


class ServerError(CCMemoryError):
    """The team server could not be reached, refused us, or is not fit for ccmemory; the message says what to do."""


@dataclass
class Target:
    """A server to connect to: a conninfo string (empty: libpq's defaults) and where it came from."""

    conninfo: str
    source: str
    secrets: list[str] = field(default_factory=list)

    def scrub(self, text: str) -> str:
        return scrub(text, self.secrets)


def scrub(text: str, secrets: list[str] | tuple[str, ...] = ()) -> str:
    """``text`` without any password: URL passwords, ``password=`` keywords and each of ``secrets`` masked."""
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, "***")
    text = _URL_PASSWORD.sub(r"\1***\2", text)
    return _KEYWORD_PASSWORD.sub(r"\1***", text)


def masked(url: str | None) -> str:
    """A URL as it may be shown: its password, if any, replaced by ``***``."""
    return scrub(url or "")


def _password_of(conninfo: str) -> list[str]:
    """The password a URL or keyword string holds (to mask it wherever it might be echoed), else nothing."""
    if not conninfo:
        return []
    try:
        from psycopg.conninfo import conninfo_to_dict

        password = conninfo_to_dict(conninfo).get("password")
    except Exception:  # noqa: BLE001 - an unparsable string is reported when connecting, scrubbed
        return []
    return [str(password)] if password else []


def _has_password(conninfo: str) -> bool:
    return bool(_URL_PASSWORD.search(conninfo) or _KEYWORD_PASSWORD.search(conninfo))


def check_config_file(path: str) -> None:
    """Refuse a config file holding a password that others than its owner may read, saying how to fix it."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ServerError(f"{path} holds a password in sync.url but other users may read it "
                          f"(mode {stat.S_IMODE(mode):o}); run `chmod 600 {path}`, or better keep the password "
                          "in ~/.pgpass and leave it out of the URL")


def resolve(url: str | None = None, *, settings: Any = None, environ: dict[str, str] | None = None) -> Target:
    """The server to use: ``url``, else ``CCMEMORY_SYNC_URL``, else ``sync.url``, else libpq's defaults."""
    env = os.environ if environ is None else environ
    if url:
        return Target(url, "the URL given", _password_of(url))
    if env.get(ENV_URL):
        return Target(env[ENV_URL], ENV_URL, _password_of(env[ENV_URL]))
    if settings is None:
        from .. import config

        settings = config.load()
    configured = settings.get("sync", "url")
    if configured:
        if _has_password(configured):
            check_config_file(settings.path)
        return Target(configured, f"sync.url in {settings.path}", _password_of(configured))
    return Target("", "libpq defaults (PG* variables, PGSERVICE, ~/.pgpass)")


def _psycopg() -> Any:
    import importlib

    try:
        import psycopg
    except ImportError:
        # The plugin's launcher may have installed it into this runtime since this process started.
        importlib.invalidate_caches()
        try:
            import psycopg
        except ImportError:
            raise ServerError(f"team memory needs psycopg, which is not installed: {INSTALL_HINT}") from None
    return psycopg


@contextmanager
def translated(target: Target, doing: str) -> Iterator[None]:
    """Turn a psycopg error raised inside into a :class:`ServerError` whose message holds no credential."""
    psycopg = _psycopg()
    try:
        yield
    except psycopg.Error as error:
        detail = " ".join(str(error).split()) or type(error).__name__
        raise ServerError(target.scrub(f"{doing} failed on the server ({target.source}): {detail}")) from None


def check_server_version(version_num: int) -> None:
    """Refuse a PostgreSQL older than :data:`MIN_SERVER_VERSION` (``server_version_num``, e.g. 160002)."""
    if version_num < MIN_SERVER_VERSION:
        major = version_num // 10000 if version_num >= 100000 else version_num / 10000
        raise ServerError(f"the server runs PostgreSQL {major}, older than the oldest ccmemory supports "
                          f"({MIN_SERVER_VERSION // 10000}); upgrade the server or point sync.url at a newer one")


def check_pgvector(version: str | None) -> None:
    """Refuse a missing pgvector or one older than :data:`MIN_PGVECTOR` (HNSW indexes)."""
    wanted = ".".join(map(str, MIN_PGVECTOR))
    if version is None:
        raise ServerError("the pgvector extension is not installed in this database and could not be created; "
                          "ask the server's administrator to run CREATE EXTENSION vector (pgvector "
                          f"{wanted} or newer), then run `ccmemory server init` again")
    parts = tuple(int(part) for part in re.findall(r"\d+", version)[:3])
    if parts < MIN_PGVECTOR:
        raise ServerError(f"pgvector {version} is older than {wanted} (HNSW indexes); "
                          "run ALTER EXTENSION vector UPDATE as the extension's owner")


def connect(target: Target, *, autocommit: bool = False, connect_timeout: int = 10) -> psycopg.Connection[Any]:
    """An open connection to ``target``, its PostgreSQL version checked; errors scrubbed.

    ``connect_timeout`` is libpq's, in whole seconds (2 at least).
    """
    psycopg = _psycopg()
    with translated(target, "connecting"):
        conn = psycopg.connect(target.conninfo, autocommit=autocommit, connect_timeout=connect_timeout,
                               application_name="ccmemory")
    try:
        check_server_version(conn.info.server_version)
    except ServerError:
        conn.close()
        raise
    return conn
