"""Schema and migrations (`PRAGMA user_version`).

Each migration is a function appended to MIGRATIONS; its schema version is its position + 1.
A released migration is never edited: a change is a new function. Before upgrading a file
that already holds data, the file is copied to `<db>.bak-v<old>` with SQLite's backup API.

Tables (version 1):
- `files`: one row per transcript file read, with the checkpoint that makes ingest
  incremental (identity, size, offsets) and the parser state needed to resume.
- `sessions`: one row per Claude Code session (project identity, time span, title).
- `chunks`: redacted rendered text of whole blocks of one turn, with its position
  (`file_id`, `offset` of its first record, `part`) and metadata. `id` is a content hash.
- `chunks_fts`: FTS5 external-content index over `chunks.text`, kept by triggers.
- `edges`: causal links, unique per (src, dst, kind): `next` (sequential), `brief`
  (parent -> sub-agent), `debrief` (sub-agent -> parent), `continues` (previous session ->
  resumed/continued session).
- `forgotten`: tombstones (`chunk` or `session` scope) that ingest honours.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import apsw

from causantic.errors import CausanticError

MIGRATIONS: list[Callable[[apsw.Connection], None]] = []


def migration(fn: Callable[[apsw.Connection], None]) -> Callable[[apsw.Connection], None]:
    MIGRATIONS.append(fn)
    return fn


@migration
def create_core_tables(conn: apsw.Connection) -> None:
    conn.execute(
        """
        CREATE TABLE files (
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL,                    -- 'session' | 'subagent'
            session_id TEXT,                       -- from the file name (records may say more)
            agent_id TEXT NOT NULL DEFAULT '',
            dev INTEGER NOT NULL DEFAULT 0,
            ino INTEGER NOT NULL DEFAULT 0,
            size INTEGER NOT NULL DEFAULT 0,
            mtime_ns INTEGER NOT NULL DEFAULT 0,
            head_hash TEXT NOT NULL DEFAULT '',    -- hash of the first bytes: a rewrite changes it
            complete_offset INTEGER NOT NULL DEFAULT 0,  -- end of the last complete line read
            resume_offset INTEGER NOT NULL DEFAULT 0,    -- start of the last (maybe open) turn
            resume_state TEXT NOT NULL DEFAULT '{}',     -- parser state at resume_offset
            bad_lines INTEGER NOT NULL DEFAULT 0,
            ingested_at TEXT
        );

        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            project TEXT NOT NULL,
            project_path TEXT,
            cwd TEXT,
            git_branch TEXT,
            title TEXT,
            start_time TEXT,
            end_time TEXT,
            continued INTEGER NOT NULL DEFAULT 0,  -- opens as a continuation of an earlier one
            forked_from TEXT                       -- the session it was forked from, if known
        );
        CREATE INDEX sessions_by_project ON sessions(project, start_time);

        CREATE TABLE chunks (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            session_id TEXT NOT NULL,
            project TEXT NOT NULL,
            agent_id TEXT NOT NULL DEFAULT '',     -- '' = the main conversation
            file_id INTEGER REFERENCES files(id) ON DELETE SET NULL,
            offset INTEGER NOT NULL,               -- byte offset of its first record in the file
            part INTEGER NOT NULL,                 -- position among the chunks of its turn
            turn INTEGER NOT NULL,                 -- turn ordinal within its stream
            kind TEXT NOT NULL,                    -- 'turn' | 'summary'
            start_time TEXT NOT NULL,
            end_time TEXT NOT NULL,
            text TEXT NOT NULL,
            tokens INTEGER NOT NULL,
            redactions INTEGER NOT NULL DEFAULT 0,
            meta TEXT NOT NULL DEFAULT '{}'        -- JSON: files, tools, commands, errors, agents
        );
        CREATE INDEX chunks_by_stream ON chunks(session_id, agent_id, offset, part);
        CREATE INDEX chunks_by_project_time ON chunks(project, start_time);
        CREATE INDEX chunks_by_time ON chunks(start_time);
        CREATE INDEX chunks_by_file ON chunks(file_id, offset);

        CREATE VIRTUAL TABLE chunks_fts USING fts5(
            text, content='chunks', content_rowid='rowid', tokenize='porter unicode61'
        );
        CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN
            INSERT INTO chunks_fts(rowid, text) VALUES (new.rowid, new.text);
        END;
        CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
            INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
        END;
        CREATE TRIGGER chunks_fts_update AFTER UPDATE OF text ON chunks BEGIN
            INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
            INSERT INTO chunks_fts(rowid, text) VALUES (new.rowid, new.text);
        END;
        CREATE VIRTUAL TABLE chunks_fts_vocab USING fts5vocab(chunks_fts, 'row');

        CREATE TABLE edges (
            src TEXT NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
            dst TEXT NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
            kind TEXT NOT NULL,
            weight REAL NOT NULL DEFAULT 1.0,
            PRIMARY KEY (src, dst, kind)
        ) WITHOUT ROWID;
        CREATE INDEX edges_by_dst ON edges(dst);

        CREATE TABLE forgotten (
            scope TEXT NOT NULL,                   -- 'chunk' | 'session'
            key TEXT NOT NULL,
            reason TEXT,
            created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
            PRIMARY KEY (scope, key)
        ) WITHOUT ROWID;
        """
    )


def schema_version(conn: apsw.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").get)


def quick_check(conn: apsw.Connection) -> list[str]:
    """`PRAGMA quick_check`'s lines: ["ok"] for a sound file, else the problems found."""
    return [r[0] for r in conn.execute("PRAGMA quick_check")]


def needs_migration(conn: apsw.Connection) -> bool:
    return schema_version(conn) < len(MIGRATIONS)


def check_version(conn: apsw.Connection, path: Path) -> None:
    """For read-only opens: refuse files from a newer causantic, accept older ones."""
    if schema_version(conn) > len(MIGRATIONS):
        raise CausanticError(f"{path} was written by a newer causantic; upgrade to open it")


def migrate(conn: apsw.Connection, path: Path) -> None:
    """Bring the file to the latest schema, backing it up first if it holds data."""
    current = schema_version(conn)
    if current > len(MIGRATIONS):
        raise CausanticError(f"{path} was written by a newer causantic; upgrade to open it")
    if current == len(MIGRATIONS):
        return
    with conn:  # re-read under the write lock: another process may have migrated meanwhile
        current = schema_version(conn)
        if current == len(MIGRATIONS):
            return
        if current > 0:
            backup(conn, path, current)
        for version, step in enumerate(MIGRATIONS[current:], start=current + 1):
            with conn:  # a savepoint: the step and its version bump commit together
                step(conn)
                conn.execute(f"PRAGMA user_version = {version}")


def backup(conn: apsw.Connection, path: Path, version: int) -> Path:
    """Copy the database to `<path>.bak-v<version>` (0600) before changing its schema."""
    target = path.with_name(f"{path.name}.bak-v{version}")
    fd = os.open(target, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
    os.close(fd)
    # The caller holds the write lock on `conn`, and SQLite refuses to back up from a
    # connection inside a write transaction: read through a second connection (WAL lets it
    # read the last commit, which nothing has changed yet).
    source = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    dest = apsw.Connection(str(target))
    try:
        with dest.backup("main", source, "main") as b:
            while not b.done:
                b.step(1000)
    finally:
        dest.close()
        source.close()
    return target


@migration
def create_vector_meta(conn: apsw.Connection) -> None:
    """Per-chunk embedding bookkeeping (issue 3); the vec0 table itself is created lazily.

    `chunk_vectors_meta` has one row per embedded chunk: the model that made its vectors, how
    many windows it has, when, and the unit mean of its windows (for MMR, near-duplicate
    checks and chain scoring, read without sqlite-vec). The window vectors live in the vec0
    table `chunk_vectors` (rowid = chunk rowid * 16 + window), created on first embed so that
    this schema opens where sqlite-vec cannot load. Deleting or rewriting a chunk deletes its
    meta row here (so it is pending again and never matched); `store.vectors` deletes the vec0
    rows in the same transaction and sweeps any left by a connection without sqlite-vec.
    """
    conn.execute(
        """
        CREATE TABLE chunk_vectors_meta (
            chunk_rowid INTEGER PRIMARY KEY,       -- chunks.rowid
            chunk_id TEXT NOT NULL,
            model_id TEXT NOT NULL,
            windows INTEGER NOT NULL,
            embedded_at TEXT NOT NULL,
            vector BLOB NOT NULL                   -- float32[dim]: unit mean of the windows
        );
        CREATE INDEX chunk_vectors_by_model ON chunk_vectors_meta(model_id);
        CREATE TRIGGER chunks_vectors_delete AFTER DELETE ON chunks BEGIN
            DELETE FROM chunk_vectors_meta WHERE chunk_rowid = old.rowid;
        END;
        CREATE TRIGGER chunks_vectors_update AFTER UPDATE OF text, project ON chunks BEGIN
            DELETE FROM chunk_vectors_meta WHERE chunk_rowid = old.rowid;
        END;
        """
    )


@migration
def create_session_state(conn: apsw.Connection) -> None:
    """Per-session state derived from chunks (issue 4; see `causantic.derive_state`).

    One JSON document per session with the chunk count and end time it was computed from, so
    a reader can tell a stale row and recompute. Deleting any chunk of a session drops its
    state (forgotten data must not survive here); ingest writes it again in the same
    transaction when it re-adds chunks. Existing databases get states lazily at read time.
    """
    conn.execute(
        """
        CREATE TABLE session_state (
            session_id TEXT PRIMARY KEY,
            project TEXT NOT NULL,
            start_time TEXT NOT NULL,
            end_time TEXT NOT NULL,
            chunks INTEGER NOT NULL,               -- chunks it was computed from
            state TEXT NOT NULL,                   -- JSON (causantic.derive_state)
            computed_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
        ) WITHOUT ROWID;
        CREATE INDEX session_state_by_project ON session_state(project, end_time);
        CREATE TRIGGER chunks_session_state_delete AFTER DELETE ON chunks BEGIN
            DELETE FROM session_state WHERE session_id = old.session_id;
        END;
        """
    )


@migration
def create_topics(conn: apsw.Connection) -> None:
    """Topics (issue 5; see `causantic.topics` and `causantic.store.topics`).

    `topics` holds one row per topic of the last `causantic topics rebuild`: its name and
    distinctive terms, and the unit centroid of its members' vectors (float32). Sizes, time
    spans and projects are counted from the memberships when read, so forgetting chunks never
    leaves stale counts or project names behind. `topic_members` maps a chunk to at most one
    topic, with its HDBSCAN membership strength (NULL when it joined later, by nearest
    centroid) and its angular distance (arccos(cos) / pi) to the centroid. Deleting a chunk
    deletes its membership (foreign-key cascade); rewriting a chunk's text or project drops it
    (its vector is dropped too, and the next embed assigns it again). `topic_build` is the one
    row that says when and from what the topics were built.
    """
    conn.execute(
        """
        CREATE TABLE topics (
            id INTEGER PRIMARY KEY,                -- 1 = largest when built
            name TEXT NOT NULL,
            terms TEXT NOT NULL DEFAULT '[]',      -- JSON: distinctive terms, best first
            centroid BLOB NOT NULL                 -- float32[dim]: unit mean of its members
        );
        CREATE TABLE topic_members (
            chunk_rowid INTEGER PRIMARY KEY REFERENCES chunks(rowid) ON DELETE CASCADE,
            topic_id INTEGER NOT NULL REFERENCES topics(id) ON DELETE CASCADE,
            probability REAL,                      -- NULL: joined by nearest centroid
            distance REAL NOT NULL                 -- angular distance to the centroid
        );
        CREATE INDEX topic_members_by_topic ON topic_members(topic_id, distance);
        CREATE TRIGGER chunks_topic_update AFTER UPDATE OF text, project ON chunks BEGIN
            DELETE FROM topic_members WHERE chunk_rowid = old.rowid;
        END;
        CREATE TABLE topic_build (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            built_at TEXT NOT NULL,
            model_id TEXT NOT NULL,
            chunks INTEGER NOT NULL,               -- vectors clustered
            params TEXT NOT NULL DEFAULT '{}',     -- JSON: min_cluster_size, min_samples, ...
            seconds REAL NOT NULL DEFAULT 0
        );
        """
    )


@migration
def index_project_in_fts(conn: apsw.Connection) -> None:
    """Index each chunk's project as a second FTS5 column so a project filter is a posting-list
    intersection inside FTS5 instead of a join that reads every matching chunk row (the join
    made keyword search take 100-300 ms at 100,000 chunks). BM25 ranks by the text column
    only (`rank` is configured as bm25(1.0, 0.0)); user text is matched against `text` only.
    """
    conn.execute(
        """
        DROP TRIGGER chunks_fts_insert;
        DROP TRIGGER chunks_fts_delete;
        DROP TRIGGER chunks_fts_update;
        DROP TABLE chunks_fts_vocab;
        DROP TABLE chunks_fts;
        CREATE VIRTUAL TABLE chunks_fts USING fts5(
            text, project, content='chunks', content_rowid='rowid', tokenize='porter unicode61'
        );
        INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('rank', 'bm25(1.0, 0.0)');
        CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN
            INSERT INTO chunks_fts(rowid, text, project) VALUES (new.rowid, new.text, new.project);
        END;
        CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
            INSERT INTO chunks_fts(chunks_fts, rowid, text, project)
            VALUES ('delete', old.rowid, old.text, old.project);
        END;
        CREATE TRIGGER chunks_fts_update AFTER UPDATE OF text, project ON chunks BEGIN
            INSERT INTO chunks_fts(chunks_fts, rowid, text, project)
            VALUES ('delete', old.rowid, old.text, old.project);
            INSERT INTO chunks_fts(rowid, text, project) VALUES (new.rowid, new.text, new.project);
        END;
        CREATE VIRTUAL TABLE chunks_fts_vocab USING fts5vocab(chunks_fts, 'row');
        INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild');
        """
    )


@migration
def add_vector_index(conn: apsw.Connection) -> None:
    """The compact vector index of `causantic.store.vector_index`: packed sign bits of each
    chunk's mean vector in blocks, and int8 window vectors for rescoring. Chunks embedded
    before it are indexed by the next `embed` (from vec0); until then search uses vec0 alone.
    """
    conn.execute(
        """
        ALTER TABLE chunk_vectors_meta ADD COLUMN windows_q BLOB;  -- float32 scales + int8
        CREATE INDEX chunk_vectors_unindexed ON chunk_vectors_meta(model_id)
            WHERE windows_q IS NULL;
        CREATE TABLE chunk_vector_blocks (
            id INTEGER PRIMARY KEY,
            model_id TEXT NOT NULL,
            project TEXT NOT NULL,
            size INTEGER NOT NULL,                 -- entries in this block
            rowids BLOB NOT NULL,                  -- int64[size]: chunk rowids
            bits BLOB NOT NULL                     -- uint8[size, dim / 8]: mean-vector signs
        );
        CREATE INDEX chunk_vector_blocks_by_project ON chunk_vector_blocks(model_id, project, id);
        """
    )


@migration
def create_memories(conn: apsw.Connection) -> None:
    """Explicit memory (issue 15; see `causantic.memory` and `causantic.store.memories`).

    `memories` holds observations: what a user or agent said to remember (`origin`
    'explicit'), what ingest noticed without an LLM ('auto') and what an agent synthesised on
    reflection ('reflection'). `id` is a content hash of project and normalised text, so an
    exact repeat is one row with a `count`; a near duplicate points at its original through
    `duplicate_of` and is collapsed at read time (nothing is deleted). Feedback counts live
    on the row (`helpful`, `harmful`) and never touch `last_seen_at`, the recency clock.
    `memory_citations` links memories to chunk ids (no foreign key: a forgotten chunk leaves
    the memory, which `forget` handles explicitly). Tombstones use `forgotten` with scope
    'memory'. `memory_vectors` holds one float32 unit vector per memory (they are short),
    computed by `embed` when the model was not loaded at observe time.
    """
    conn.execute(
        """
        CREATE TABLE memories (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,               -- 'mem_' + content hash
            project TEXT NOT NULL DEFAULT '',      -- '' = every project
            type TEXT NOT NULL,
            text TEXT NOT NULL,                    -- redacted
            importance REAL NOT NULL,              -- base importance, 1-10
            origin TEXT NOT NULL,                  -- 'explicit' | 'auto' | 'reflection'
            count INTEGER NOT NULL DEFAULT 1,      -- exact repeats observed
            helpful INTEGER NOT NULL DEFAULT 0,
            harmful INTEGER NOT NULL DEFAULT 0,
            duplicate_of TEXT,                     -- near duplicate of this memory id
            session_id TEXT,                       -- the session it was observed in, if known
            created_at TEXT NOT NULL,
            last_seen_at TEXT NOT NULL,            -- last exact repeat (never feedback)
            redactions INTEGER NOT NULL DEFAULT 0,
            meta TEXT NOT NULL DEFAULT '{}'        -- JSON: evidence, feedback reasons
        );
        CREATE INDEX memories_by_project ON memories(project, type, last_seen_at);
        CREATE INDEX memories_by_time ON memories(created_at);
        CREATE TABLE memory_citations (
            memory_id TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            chunk_id TEXT NOT NULL,
            PRIMARY KEY (memory_id, chunk_id)
        ) WITHOUT ROWID;
        CREATE INDEX memory_citations_by_chunk ON memory_citations(chunk_id);
        CREATE TABLE memory_feedback (
            id INTEGER PRIMARY KEY,
            memory_id TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
            helpful INTEGER NOT NULL,
            reason TEXT,
            created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now'))
        );
        CREATE TABLE memory_vectors (
            memory_rowid INTEGER PRIMARY KEY REFERENCES memories(rowid) ON DELETE CASCADE,
            model_id TEXT NOT NULL,
            vector BLOB NOT NULL                   -- float32[dim], unit length
        );
        CREATE TRIGGER memories_vectors_update AFTER UPDATE OF text ON memories BEGIN
            DELETE FROM memory_vectors WHERE memory_rowid = old.rowid;
        END;
        CREATE TABLE memory_marks (
            name TEXT NOT NULL,                    -- 'scan' (chunk rowid) | 'reflected:<project>'
            value TEXT NOT NULL,
            PRIMARY KEY (name)
        ) WITHOUT ROWID;
        CREATE VIRTUAL TABLE memories_fts USING fts5(
            text, project, content='memories', content_rowid='rowid', tokenize='porter unicode61'
        );
        INSERT INTO memories_fts(memories_fts, rank) VALUES ('rank', 'bm25(1.0, 0.0)');
        CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts(rowid, text, project) VALUES (new.rowid, new.text, new.project);
        END;
        CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, text, project)
            VALUES ('delete', old.rowid, old.text, old.project);
        END;
        CREATE TRIGGER memories_fts_update AFTER UPDATE OF text, project ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, text, project)
            VALUES ('delete', old.rowid, old.text, old.project);
            INSERT INTO memories_fts(rowid, text, project) VALUES (new.rowid, new.text, new.project);
        END;
        """
    )


@migration
def add_session_checkout(conn: apsw.Connection) -> None:
    """Each session's working-tree folder (a linked worktree's own folder, where the project
    folds worktrees into their repository), so `--project <worktree folder name>` resolves
    after the worktree is gone. Sessions stored before it have none until re-ingested;
    resolution then derives it from their `cwd`.
    """
    conn.execute("ALTER TABLE sessions ADD COLUMN checkout TEXT")


@migration
def add_lessons_and_ledger(conn: apsw.Connection) -> None:
    """Lessons (issue 16; see `causantic.lessons`) and the injection ledger.

    `lessons`: one row per distinct error signature per session, derived from its chunks at
    ingest (rebuilt whenever the session is); deleting any chunk of a session drops them, as
    for `session_state`. `lessons_fts` indexes their text for search. `injections`: one row
    per piece of memory handed to Claude Code (hook output, MCP answer) with what it held.
    Databases from before this version get lessons from `causantic lessons --rebuild` or the
    next ingest of each session.
    """
    conn.execute(
        """
        CREATE TABLE lessons (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,               -- hash of session and signature
            session_id TEXT NOT NULL,
            project TEXT NOT NULL,
            time TEXT NOT NULL,                    -- first occurrence
            tool TEXT NOT NULL,
            program TEXT NOT NULL,                 -- `go test`, `mise run`, or the tool name
            error_class TEXT NOT NULL DEFAULT '',
            signature TEXT NOT NULL,               -- normalised message
            sig_hash TEXT NOT NULL,                -- program + signature
            msg_hash TEXT NOT NULL,                -- signature alone
            informative INTEGER NOT NULL,          -- 0: too generic to match on
            error TEXT NOT NULL,                   -- the message as seen (redacted)
            subject TEXT NOT NULL,                 -- the failing command or file
            occurrences INTEGER NOT NULL,
            attempts TEXT NOT NULL DEFAULT '[]',   -- JSON: failed attempts, oldest first
            resolved INTEGER NOT NULL,
            fix TEXT NOT NULL DEFAULT '',          -- what made it pass, in words
            fix_command TEXT NOT NULL DEFAULT '',
            fix_files TEXT NOT NULL DEFAULT '[]',  -- JSON: files edited on the way to the fix
            fix_time TEXT NOT NULL DEFAULT '',
            fix_commit TEXT NOT NULL DEFAULT '',   -- first commit after the fix, if any
            error_chunk TEXT NOT NULL,
            fix_chunk TEXT NOT NULL DEFAULT '',
            change_chunks TEXT NOT NULL DEFAULT '[]'
        );
        CREATE INDEX lessons_by_msg ON lessons(msg_hash, resolved);
        CREATE INDEX lessons_by_session ON lessons(session_id);
        CREATE INDEX lessons_by_project ON lessons(project, time);
        CREATE TRIGGER chunks_lessons_delete AFTER DELETE ON chunks BEGIN
            DELETE FROM lessons WHERE session_id = old.session_id;
        END;
        CREATE VIRTUAL TABLE lessons_fts USING fts5(
            text, content='', contentless_delete=1, tokenize='porter unicode61'
        );
        CREATE TRIGGER lessons_fts_insert AFTER INSERT ON lessons BEGIN
            INSERT INTO lessons_fts(rowid, text) VALUES (
                new.rowid, new.program || ' ' || new.error || ' ' || new.subject || ' ' || new.fix);
        END;
        CREATE TRIGGER lessons_fts_delete AFTER DELETE ON lessons BEGIN
            DELETE FROM lessons_fts WHERE rowid = old.rowid;
        END;

        CREATE TABLE injections (
            rowid INTEGER PRIMARY KEY,
            time TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
            event TEXT NOT NULL,                   -- session-start, post-tool-use, mcp:search, ...
            session_id TEXT NOT NULL DEFAULT '',
            project TEXT NOT NULL DEFAULT '',
            chars INTEGER NOT NULL,
            tokens INTEGER NOT NULL,
            chunk_ids TEXT NOT NULL DEFAULT '[]',  -- JSON
            lesson_ids TEXT NOT NULL DEFAULT '[]'  -- JSON
        );
        CREATE INDEX injections_by_session ON injections(session_id, time);
        """
    )


@migration
def create_redaction_meta(conn: apsw.Connection) -> None:
    """Which redaction rules the stored text went through (issue 17; `causantic.store.redaction`).

    One row per key; `rules` is `causantic.redact.RULES_VERSION` when the text was last
    redacted as a whole: a new store starts at the current rules, a store that already holds
    chunks gets no row (it was written under rules older than any recorded), so `doctor`
    asks for `causantic redact --rescan`, which sets it.
    """
    # deferred: hook fast path: loaded only when this runs
    from causantic.redact import RULES_VERSION

    conn.execute(
        """
        CREATE TABLE redaction_meta (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL
        ) WITHOUT ROWID;
        INSERT INTO redaction_meta(key, value)
            SELECT 'rules', ? WHERE NOT EXISTS (SELECT 1 FROM chunks);
        """,
        (str(RULES_VERSION),),
    )


@migration
def add_token_bits(conn: apsw.Connection) -> None:
    """Each embedded chunk's token vectors as packed sign bits, for search's token rerank
    (`causantic.retrieval.rerank`). Chunks embedded before it get them at the next `embed`;
    until every candidate has them, search ranks as before.

    A table of their own, not a column of `chunk_vectors_meta`: at ~11 KB a chunk they would
    push that table's small columns (read for hundreds of candidates per search) onto
    overflow pages. A row goes with its meta row (the trigger), and `write_vectors` rewrites
    both together.
    """
    conn.execute(
        """
        CREATE TABLE chunk_token_bits (
            chunk_rowid INTEGER PRIMARY KEY,      -- chunks.rowid (as chunk_vectors_meta)
            model_id TEXT NOT NULL,
            bits BLOB NOT NULL                    -- uint8[tokens, dim / 8]: sign bits
        );
        CREATE TRIGGER chunk_vectors_meta_token_bits AFTER DELETE ON chunk_vectors_meta BEGIN
            DELETE FROM chunk_token_bits WHERE chunk_rowid = old.chunk_rowid;
        END;
        """
    )
