"""A real, throwaway PostgreSQL 16 with pgvector for the team-memory tests, from the ``pgserver`` wheel.

``pgserver`` bundles the server binaries (and pgvector); its own starter trusts every local
connection, which would make passwords meaningless, so this module runs the bundled ``initdb``
and ``pg_ctl`` itself: password authentication (SCRAM) for every connection, listening on
127.0.0.1 on a free port and on a Unix socket in the cluster's folder. PostgreSQL refuses to run
as root; as root the cluster runs as the ``pgserver`` system user pgserver creates for that.
:func:`start` raises :class:`Unavailable` (with the reason) when the wheel is missing or the
server cannot start; the fixtures turn that into a skip.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

SUPERUSER = "ccm_admin"


class Unavailable(RuntimeError):
    """No PostgreSQL could be started here (the reason is the message)."""


@dataclass
class Cluster:
    """A running throwaway cluster; ``password`` is the superuser's."""

    root: Path
    bin: Path
    host: str
    port: int
    password: str
    run_as: str | None

    def url(self, user: str = SUPERUSER, password: str | None = None, dbname: str = "postgres") -> str:
        secret = self.password if password is None and user == SUPERUSER else password
        auth = quote(user, safe="") + (":" + quote(secret, safe="") if secret else "")
        return f"postgresql://{auth}@{self.host}:{self.port}/{dbname}"

    def libpq_env(self, user: str, password: str, dbname: str) -> dict[str, str]:
        """``PG*`` variables naming this server for ``user`` (what a member's shell would set)."""
        return {"PGHOST": self.host, "PGPORT": str(self.port), "PGUSER": user, "PGPASSWORD": password,
                "PGDATABASE": dbname}

    def connect(self, dbname: str = "postgres", user: str = SUPERUSER, password: str | None = None, **kw: Any) -> Any:
        import psycopg

        return psycopg.connect(self.url(user, password, dbname), **kw)

    def create_database(self, name: str) -> str:
        with self.connect(autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return name

    def psql(self, sql: str, *, user: str, password: str, dbname: str) -> subprocess.CompletedProcess[str]:
        """Run ``sql`` with the bundled ``psql`` as ``user`` (credentials in ``PG*`` variables, as a teammate would)."""
        env = {**os.environ, **self.libpq_env(user, password, dbname)}
        return subprocess.run([str(self.bin / "psql"), "-X", "-v", "ON_ERROR_STOP=1", "-At", "-c", sql],
                              env=env, capture_output=True, text=True, timeout=60)

    def stop(self) -> None:
        self.halt()
        shutil.rmtree(self.root, ignore_errors=True)

    def halt(self) -> None:
        """Stop the server at once, as a crash would (``pg_ctl stop -m immediate``): open transactions are lost."""
        _run_pg(self, ["pg_ctl", "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop"], check=False)

    def resume(self) -> None:
        """Start the halted server again on the same port (it recovers from its write-ahead log)."""
        _run_pg(self, ["pg_ctl", "-D", str(self.root / "data"), "-o", _options(self), "-l", str(self.root / "log"),
                       "-w", "-t", "60", "start"])


def _bin_dir() -> Path:
    import warnings

    try:
        with warnings.catch_warnings():  # platformdirs warns at import when XDG_RUNTIME_DIR is unset
            warnings.simplefilter("ignore")
            from pgserver import _commands
    except Exception as error:  # noqa: BLE001 - any failure to load the wheel means "no server here"
        raise Unavailable(f"the pgserver wheel is not importable ({type(error).__name__}: {error}); "
                          "install the test extra: pip install -e '.[test]'") from None
    return Path(_commands.POSTGRES_BIN_PATH)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _run_pg(cluster: Cluster, argv: list[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    argv = [str(cluster.bin / argv[0]), *argv[1:]]
    kwargs: dict[str, Any] = {"capture_output": True, "text": True, "timeout": 120, "cwd": str(cluster.root)}
    if cluster.run_as:
        kwargs["user"] = cluster.run_as
    result = subprocess.run(argv, **kwargs)
    if check and result.returncode != 0:
        raise Unavailable(f"{Path(argv[0]).name} failed ({result.returncode}): {result.stderr.strip()[-2000:]}")
    return result


def _options(cluster: Cluster) -> str:
    return f"-h 127.0.0.1 -p {cluster.port} -k {cluster.root} -c fsync=off -c max_connections=60"


def start() -> Cluster:
    """Initialise and start a cluster in a fresh temporary folder; the caller stops it."""
    binaries = _bin_dir()
    run_as = None
    root = Path(tempfile.mkdtemp(prefix="ccm-pg-"))
    if os.geteuid() == 0:
        from pgserver import utils

        run_as = "pgserver"
        utils.ensure_user_exists(run_as)
        utils.ensure_prefix_permissions(root)
        utils.ensure_prefix_permissions(binaries)
        shutil.chown(root, run_as, run_as)
    cluster = Cluster(root=root, bin=binaries, host="127.0.0.1", port=_free_port(),
                      password=secrets.token_urlsafe(18), run_as=run_as)
    pwfile = root / "pw"
    pwfile.write_text(cluster.password)
    if run_as:
        shutil.chown(pwfile, run_as, run_as)
    data = root / "data"
    try:
        _run_pg(cluster, ["initdb", "-D", str(data), "-U", SUPERUSER, f"--pwfile={pwfile}", "--auth=scram-sha-256",
                          "--encoding=UTF8", "--locale=C"])
        pwfile.unlink()
        _run_pg(cluster, ["pg_ctl", "-D", str(data), "-o", _options(cluster), "-l", str(root / "log"), "-w", "-t", "60", "start"])
    except Unavailable as error:
        log = root / "log"
        detail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        raise Unavailable(f"{error} {detail}".strip()) from None
    return cluster
