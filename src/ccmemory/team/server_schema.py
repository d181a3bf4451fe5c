"""The team server's schema (schema ``ccmemory`` in one PostgreSQL database) and its versioned migrations.

Like the local :mod:`ccmemory.migrations`: small ordered steps registered with
:func:`server_migration`; ``ccmemory.schema_version`` records each step applied. :func:`migrate`
runs the missing steps in ONE transaction under an advisory lock, so two admins running
``ccmemory server init`` at once, or a crash halfway, leave either the old schema or the new one.

Isolation is the database's job, not the client's: every member is a login role in the group
role :data:`MEMBER_ROLE`, which may read and write the tables only through row-level security:

* a member sees a team's rows only while ``ccmemory.members`` lists them in that team (and,
  when the membership names projects, only those projects);
* ``personal`` rows are seen by their owner alone, ``team`` rows by every member of the team;
* a member inserts rows as themself and changes only their own rows; nobody but the schema's
  owner deletes: deletion is a flag (its content is cleared by the server), and a row taken
  back from the team leaves a tombstone the team pulls.

Pulls read ``updated_seq`` > cursor for one team. Each change takes the sequence under a
transaction lock of its team, so within a team changes commit in ``updated_seq`` order and a
cursor never skips a row committed later with a smaller number.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ..migrations import registrar
from .connection import ServerError, Target, check_pgvector, connect, translated

if TYPE_CHECKING:
    import psycopg

#: The group role every member's login role is granted (cluster-wide, shared by databases of one cluster).
MEMBER_ROLE = "ccmemory_member"
SCHEMA = "ccmemory"
#: Dimension of the default embedding model (all-MiniLM-L6-v2); other dimensions get their index on demand.
DEFAULT_DIMENSIONS = 384
#: How far ahead of the server's clock a row's time may be (clock skew between machines); later is set to this.
MAX_FUTURE_SECONDS = 600
#: Advisory lock keys: (namespace, what). The namespace spells "ccm".
LOCK_NAMESPACE = 0x63636D
MIGRATION_LOCK = 0

Step = Callable[["psycopg.Connection[Any]"], None]
SERVER_MIGRATIONS: list[Step] = []


#: Register a step as the next server migration; ``_s001_...`` is the first (append only).
server_migration = registrar(SERVER_MIGRATIONS, "_s", "Server migration")


def _member_may(access: str, table: str) -> str:
    """The row-level test that the current role is a member allowed ``access`` (read/write) on ``table``'s row."""
    write = " AND m.can_write" if access == "write" else ""
    return (f"EXISTS (SELECT 1 FROM ccmemory.members m WHERE m.team_id = {table}.team_id "
            f"AND m.role_name = current_user{write} "
            f"AND (m.projects IS NULL OR {table}.project = ANY (m.projects)))")


_S001 = f"""
CREATE TABLE ccmemory.teams (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (name ~ '^[a-z0-9][a-z0-9_.-]{{0,62}}$'),
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- A member: a login role in one team; projects NULL means every project of the team.
CREATE TABLE ccmemory.members (
    team_id     bigint NOT NULL REFERENCES ccmemory.teams(id) ON DELETE CASCADE,
    role_name   text NOT NULL,
    can_write   boolean NOT NULL DEFAULT true,
    projects    text[],
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team_id, role_name)
);
CREATE INDEX members_role ON ccmemory.members (role_name);

-- A project by its portable identity (e.g. git:<root commit>), opaque to the server.
CREATE TABLE ccmemory.projects (
    team_id     bigint NOT NULL REFERENCES ccmemory.teams(id) ON DELETE CASCADE,
    project     text NOT NULL CHECK (length(project) BETWEEN 1 AND 500),
    name        text NOT NULL DEFAULT '' CHECK (length(name) <= 200),
    created_by  text NOT NULL DEFAULT current_user,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team_id, project)
);

CREATE SEQUENCE ccmemory.change_seq;

CREATE TABLE ccmemory.memories (
    id              text PRIMARY KEY CHECK (length(id) BETWEEN 8 AND 64),
    team_id         bigint NOT NULL,
    project         text NOT NULL,
    scope           text NOT NULL CHECK (scope IN ('personal', 'team')),
    owner           text NOT NULL DEFAULT current_user,
    seq             bigint NOT NULL,
    updated_seq     bigint NOT NULL UNIQUE,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    received_at     timestamptz NOT NULL DEFAULT now(),
    deleted         boolean NOT NULL DEFAULT false,
    superseded_by   text,
    sector          text NOT NULL DEFAULT '',
    category        text NOT NULL DEFAULT '',
    source          text NOT NULL DEFAULT '',
    content         text NOT NULL CHECK (length(content) <= 200000),
    metadata        jsonb NOT NULL DEFAULT '{{}}' CHECK (jsonb_typeof(metadata) = 'object'),
    embedding       vector,
    embedding_model text,
    embedding_dims  integer,
    tsv             tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, content)) STORED,
    FOREIGN KEY (team_id, project) REFERENCES ccmemory.projects (team_id, project) ON DELETE CASCADE,
    CHECK ((embedding IS NULL) = (embedding_model IS NULL))
);
CREATE INDEX memories_pull ON ccmemory.memories (team_id, updated_seq);
CREATE INDEX memories_fts ON ccmemory.memories USING gin (tsv);
CREATE INDEX memories_hnsw_{DEFAULT_DIMENSIONS} ON ccmemory.memories
    USING hnsw ((embedding::vector({DEFAULT_DIMENSIONS})) vector_cosine_ops) WHERE embedding_dims = {DEFAULT_DIMENSIONS};

-- A team row taken back (made personal): the team pulls this instead of the row it no longer sees.
CREATE TABLE ccmemory.tombstones (
    memory_id   text NOT NULL,
    team_id     bigint NOT NULL,
    project     text NOT NULL,
    updated_seq bigint NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (memory_id, updated_seq)
);
CREATE INDEX tombstones_pull ON ccmemory.tombstones (team_id, updated_seq);

-- Every change: owner and identity fixed, a new updated_seq taken under the team's lock, deleted rows emptied.
CREATE FUNCTION ccmemory.memory_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF NEW.id <> OLD.id OR NEW.owner <> OLD.owner OR NEW.team_id <> OLD.team_id
           OR NEW.project <> OLD.project OR NEW.created_at <> OLD.created_at THEN
            RAISE EXCEPTION 'a memory keeps its id, owner, team, project and creation time'
                USING ERRCODE = 'check_violation';
        END IF;
    END IF;
    PERFORM pg_advisory_xact_lock({LOCK_NAMESPACE}, NEW.team_id::integer);
    NEW.updated_seq := nextval('ccmemory.change_seq');
    NEW.seq := CASE WHEN TG_OP = 'INSERT' THEN NEW.updated_seq ELSE OLD.seq END;
    NEW.received_at := now();
    IF NEW.deleted THEN
        NEW.content := '';
        NEW.metadata := '{{}}';
        NEW.embedding := NULL;
        NEW.embedding_model := NULL;
    END IF;
    NEW.embedding_dims := CASE WHEN NEW.embedding IS NULL THEN NULL ELSE vector_dims(NEW.embedding) END;
    RETURN NEW;
END $$ SET search_path FROM CURRENT;
CREATE TRIGGER memories_changed BEFORE INSERT OR UPDATE ON ccmemory.memories
    FOR EACH ROW EXECUTE FUNCTION ccmemory.memory_changed();

CREATE FUNCTION ccmemory.memory_unshared() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    INSERT INTO ccmemory.tombstones (memory_id, team_id, project, updated_seq)
    VALUES (NEW.id, NEW.team_id, NEW.project, NEW.updated_seq);
    RETURN NULL;
END $$ SET search_path = pg_catalog;
CREATE TRIGGER memories_unshared AFTER UPDATE ON ccmemory.memories FOR EACH ROW
    WHEN (OLD.scope = 'team' AND NEW.scope = 'personal') EXECUTE FUNCTION ccmemory.memory_unshared();

ALTER TABLE ccmemory.teams ENABLE ROW LEVEL SECURITY;
ALTER TABLE ccmemory.members ENABLE ROW LEVEL SECURITY;
ALTER TABLE ccmemory.projects ENABLE ROW LEVEL SECURITY;
ALTER TABLE ccmemory.memories ENABLE ROW LEVEL SECURITY;
ALTER TABLE ccmemory.tombstones ENABLE ROW LEVEL SECURITY;

CREATE POLICY own_membership ON ccmemory.members FOR SELECT USING (role_name = current_user);
CREATE POLICY my_teams ON ccmemory.teams FOR SELECT
    USING (EXISTS (SELECT 1 FROM ccmemory.members m WHERE m.team_id = teams.id AND m.role_name = current_user));
CREATE POLICY read ON ccmemory.projects FOR SELECT USING ({_member_may("read", "projects")});
CREATE POLICY add ON ccmemory.projects FOR INSERT
    WITH CHECK (created_by = current_user AND {_member_may("write", "projects")});
CREATE POLICY read ON ccmemory.memories FOR SELECT
    USING ((scope = 'team' OR owner = current_user) AND {_member_may("read", "memories")});
CREATE POLICY add ON ccmemory.memories FOR INSERT
    WITH CHECK (owner = current_user AND {_member_may("write", "memories")});
CREATE POLICY change ON ccmemory.memories FOR UPDATE
    USING (owner = current_user AND {_member_may("write", "memories")})
    WITH CHECK (owner = current_user AND {_member_may("write", "memories")});
CREATE POLICY read ON ccmemory.tombstones FOR SELECT USING ({_member_may("read", "tombstones")});

GRANT USAGE ON SCHEMA ccmemory TO {MEMBER_ROLE};
GRANT SELECT ON ccmemory.teams, ccmemory.members, ccmemory.tombstones TO {MEMBER_ROLE};
GRANT SELECT, INSERT ON ccmemory.projects TO {MEMBER_ROLE};
GRANT SELECT, INSERT, UPDATE ON ccmemory.memories TO {MEMBER_ROLE};
GRANT USAGE ON SEQUENCE ccmemory.change_seq TO {MEMBER_ROLE};
"""

#: Whom the search functions serve: the login role (inside SECURITY DEFINER, current_user is the schema's owner).
_CALLER_MAY_READ = """(m.scope = 'team' OR m.owner = session_user) AND EXISTS (
        SELECT 1 FROM ccmemory.members g JOIN ccmemory.teams t ON t.id = g.team_id
        WHERE g.team_id = m.team_id AND g.role_name = session_user AND t.name = $1
          AND (g.projects IS NULL OR m.project = ANY (g.projects)))"""

#: Body of ccmemory.search_text(team, project, query, limit): full-text matches ranked, the GIN index used.
#: A function owned by the schema's owner, because row-level security keeps a non-leakproof operator such as
#: @@ from using an index: it applies the same visibility rules itself, for the login role.
SEARCH_TEXT_SQL = f"""
SELECT m.id, ts_rank_cd(m.tsv, q) AS score
FROM ccmemory.memories m, websearch_to_tsquery('english'::regconfig, $3) q
WHERE m.tsv @@ q AND m.project = $2 AND NOT m.deleted AND {_CALLER_MAY_READ}
ORDER BY score DESC, m.updated_seq DESC
LIMIT least($4, 200)"""

#: Body of ccmemory.search_vector(team, project, query vector, model, limit): nearest by cosine, HNSW-indexed
#: for the default dimension (``embedding_dims`` selects the partial index). The caller's team is found first,
#: apart (a one-row subquery on the membership): visibility tested per row through a join to the members
#: makes the planner scan and sort every row of the team instead of walking the HNSW index.
SEARCH_VECTOR_SQL = f"""
SELECT m.id, 1 - (m.embedding::vector({DEFAULT_DIMENSIONS}) <=> $3::vector({DEFAULT_DIMENSIONS})) AS score
FROM ccmemory.memories m
WHERE m.embedding_dims = {DEFAULT_DIMENSIONS} AND m.embedding_model = $4 AND m.project = $2 AND NOT m.deleted
  AND (m.scope = 'team' OR m.owner = session_user)
  AND m.team_id = (SELECT g.team_id FROM ccmemory.members g JOIN ccmemory.teams t ON t.id = g.team_id
                   WHERE t.name = $1 AND g.role_name = session_user AND (g.projects IS NULL OR $2 = ANY (g.projects)))
ORDER BY m.embedding::vector({DEFAULT_DIMENSIONS}) <=> $3::vector({DEFAULT_DIMENSIONS})
LIMIT least($5, 200)"""

_S001_SEARCH = f"""
CREATE FUNCTION ccmemory.search_text(team text, project text, query text, lim integer)
    RETURNS TABLE (id text, score real) LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path FROM CURRENT AS $${SEARCH_TEXT_SQL}$$;
CREATE FUNCTION ccmemory.search_vector(team text, project text, query vector, model text, lim integer)
    RETURNS TABLE (id text, score double precision) LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path FROM CURRENT AS $${SEARCH_VECTOR_SQL}$$;
REVOKE ALL ON FUNCTION ccmemory.search_text(text, text, text, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION ccmemory.search_vector(text, text, vector, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ccmemory.search_text(text, text, text, integer) TO {MEMBER_ROLE};
GRANT EXECUTE ON FUNCTION ccmemory.search_vector(text, text, vector, text, integer) TO {MEMBER_ROLE};
"""


@server_migration
def _s001_teams_projects_memories(conn: psycopg.Connection[Any]) -> None:
    conn.execute(_S001)
    conn.execute(_S001_SEARCH)


@server_migration
def _s002_search_vector_walks_the_hnsw_index(conn: psycopg.Connection[Any]) -> None:
    """The first ``search_vector`` joined the members per row, so the planner sorted the whole team: replace it."""
    conn.execute(f"CREATE OR REPLACE FUNCTION ccmemory.search_vector(team text, project text, query vector, "
                 f"model text, lim integer) RETURNS TABLE (id text, score double precision) LANGUAGE sql STABLE "
                 f"SECURITY DEFINER SET search_path FROM CURRENT AS $${SEARCH_VECTOR_SQL}$$")


def _bounded_sql() -> str:
    """The trigger function keeping a row's times and metadata within what every client stores (see
    :mod:`ccmemory.team.pulled`, which checks the same again on each client: no client trusts the server)."""
    from .pulled import MAX_ROW_DEPTH, MAX_ROW_METADATA_BYTES

    return f"""
CREATE FUNCTION ccmemory.memory_bounded() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT isfinite(NEW.updated_at) OR NEW.updated_at < timestamptz '1970-01-01 00:00:00+00'
       OR (TG_OP = 'INSERT' AND (NOT isfinite(NEW.created_at)
                                 OR NEW.created_at < timestamptz '1970-01-01 00:00:00+00')) THEN
        RAISE EXCEPTION 'a memory''s times must be finite and after 1970' USING ERRCODE = 'check_violation';
    END IF;
    -- Later than now (plus a small clock skew): now. No row sorts itself after every later change.
    NEW.updated_at := least(NEW.updated_at, now() + interval '{MAX_FUTURE_SECONDS} seconds');
    IF TG_OP = 'INSERT' THEN
        NEW.created_at := least(NEW.created_at, NEW.updated_at);
    END IF;
    IF octet_length(NEW.metadata::text) > {MAX_ROW_METADATA_BYTES}
       OR jsonb_path_exists(NEW.metadata, 'strict $.**{{{MAX_ROW_DEPTH + 1}}}') THEN
        RAISE EXCEPTION 'a memory''s metadata must be at most {MAX_ROW_METADATA_BYTES} bytes and {MAX_ROW_DEPTH} '
            'levels deep' USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$ SET search_path FROM CURRENT;
-- Named to fire before memories_changed (BEFORE triggers fire in name order).
CREATE TRIGGER memories_bounded BEFORE INSERT OR UPDATE ON ccmemory.memories
    FOR EACH ROW EXECUTE FUNCTION ccmemory.memory_bounded();
"""


@server_migration
def _s003_rows_bounded(conn: psycopg.Connection[Any]) -> None:
    """Times finite and not far ahead, metadata bounded: one member's row cannot stop another's pull.

    Rows written before stay as they are; clients leave out any they cannot store (:mod:`.pulled`).
    """
    conn.execute(_bounded_sql())


def _ensure_member_role(conn: psycopg.Connection[Any]) -> None:
    exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (MEMBER_ROLE,)).fetchone()
    if not exists:
        conn.execute(f"CREATE ROLE {MEMBER_ROLE} NOLOGIN")


def _ensure_pgvector(conn: psycopg.Connection[Any]) -> str:
    """pgvector installed (created in schema ccmemory when absent) and recent enough; the schema holding it."""
    row = conn.execute("SELECT extversion, extnamespace::regnamespace::text FROM pg_extension "
                       "WHERE extname = 'vector'").fetchone()
    if row is None:
        import psycopg

        try:
            with conn.transaction():
                conn.execute("CREATE EXTENSION vector WITH SCHEMA ccmemory")
        except psycopg.Error:
            check_pgvector(None)
        row = conn.execute("SELECT extversion, extnamespace::regnamespace::text FROM pg_extension "
                           "WHERE extname = 'vector'").fetchone()
    assert row is not None
    check_pgvector(row[0])
    return str(row[1])


def current_version(conn: psycopg.Connection[Any]) -> int:
    """Server migrations applied (0 for a database never initialised)."""
    exists = conn.execute("SELECT to_regclass('ccmemory.schema_version') IS NOT NULL").fetchone()
    if not exists or not exists[0]:
        return 0
    row = conn.execute("SELECT coalesce(max(version), 0) FROM ccmemory.schema_version").fetchone()
    return int(row[0]) if row else 0


def target_version() -> int:
    return len(SERVER_MIGRATIONS)


def migrate(conn: psycopg.Connection[Any]) -> tuple[int, int]:
    """Bring the schema to :func:`target_version` in one transaction; (version before, version after).

    Refuses a database whose schema is newer than this ccmemory (an older client must not touch it).
    """
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_NAMESPACE, MIGRATION_LOCK))
        conn.execute("CREATE SCHEMA IF NOT EXISTS ccmemory")
        vector_schema = _ensure_pgvector(conn)
        conn.execute(f"SET LOCAL search_path = ccmemory, {vector_schema}, pg_catalog")
        conn.execute("CREATE TABLE IF NOT EXISTS ccmemory.schema_version ("
                     "version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
        before = current_version(conn)
        if before > target_version():
            raise ServerError(f"the server's schema is at version {before}, newer than this ccmemory knows "
                              f"({target_version()}); upgrade ccmemory on this machine")
        _ensure_member_role(conn)
        for number in range(before + 1, target_version() + 1):
            SERVER_MIGRATIONS[number - 1](conn)
            conn.execute("INSERT INTO ccmemory.schema_version (version) VALUES (%s)", (number,))
    return before, target_version()


def init(target: Target) -> tuple[int, int]:
    """``ccmemory server init``: connect, check versions, create or migrate the schema."""
    with connect(target) as conn, translated(target, "creating the schema"):
        return migrate(conn)
