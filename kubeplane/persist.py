"""Durable storage for the embedded control plane: every committed object in one SQLite
file (the standard library's `sqlite3`, WAL mode), the single-machine choice k3s's kine
makes for etcd.

Each write the `Database` commits is written here in its own transaction before the write
returns, so a write acknowledged to a client is in the WAL file when the response leaves:
it survives the process being killed (SIGKILL) — `synchronous=NORMAL` gives up only the
last transactions on a power loss, never consistency. On start the objects, their UIDs and
resourceVersions come back; the revision continues one above the last one stored (so
resourceVersions keep increasing across restarts) and the watch history starts empty at
that revision, so a watch from before the restart gets 410 Expired and re-lists, as after
an etcd compaction.

The file is opened in exclusive locking mode: a second process on the same data directory
is refused with `DataDirInUse` (the lock goes with its process, however it ends)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

DB_FILE = "kubeplane.db"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    grp TEXT NOT NULL, resource TEXT NOT NULL, namespaced INTEGER NOT NULL,
    namespace TEXT NOT NULL, name TEXT NOT NULL, raw BLOB NOT NULL, rev INTEGER NOT NULL,
    PRIMARY KEY (grp, resource, namespace, name)
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


class DataDirInUse(Exception):
    """Another process has this data directory's database open."""


@dataclass(frozen=True)
class StoredObject:
    group: str
    resource: str
    namespaced: bool
    namespace: str
    name: str
    raw: bytes


class SQLiteStore:
    """One control plane's objects in `<data_dir>/kubeplane.db`."""

    def __init__(self, data_dir: Path) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self.path = data_dir / DB_FILE
        # autocommit off (isolation_level=None: we issue BEGIN/COMMIT ourselves, one per write)
        self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            self._conn.execute("PRAGMA locking_mode=EXCLUSIVE")
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("BEGIN IMMEDIATE")  # takes the exclusive lock now, not at the first write
        except sqlite3.OperationalError as exc:
            self._conn.close()
            if "locked" in str(exc):
                raise DataDirInUse(f"{data_dir} is in use by another process ({self.path} is locked)") from None
            raise
        for statement in filter(str.strip, _SCHEMA.split(";")):
            self._conn.execute(statement)
        self._conn.execute("COMMIT")

    # ---------------------------------------------------------------- start
    def revision(self) -> int:
        """The last revision written: an object's (each row keeps its own, so a create or
        update is one statement), or a deletion's or a restart's (kept in `meta`)."""
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'rev'").fetchone()
        latest = self._conn.execute("SELECT MAX(rev) FROM objects").fetchone()
        return max(int(row[0]) if row else 0, int(latest[0] or 0) if latest else 0)

    def objects(self) -> Iterator[StoredObject]:
        for grp, resource, namespaced, namespace, name, raw in self._conn.execute(
            "SELECT grp, resource, namespaced, namespace, name, raw FROM objects ORDER BY grp, resource"
        ):
            yield StoredObject(grp, resource, bool(namespaced), namespace, name, bytes(raw))

    # ---------------------------------------------------------------- writes
    def set_revision(self, rev: int) -> None:
        self._conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('rev', ?)", (rev,))

    def put(self, key: tuple[str, str], namespaced: bool, namespace: str, name: str, raw: bytes, rev: int) -> None:
        # one statement: its own transaction in autocommit mode
        self._conn.execute(
            "INSERT OR REPLACE INTO objects (grp, resource, namespaced, namespace, name, raw, rev) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (key[0], key[1], int(namespaced), namespace, name, raw, rev),
        )

    def delete(self, key: tuple[str, str], namespace: str, name: str, rev: int) -> None:
        with self._transaction():
            self._conn.execute(
                "DELETE FROM objects WHERE grp = ? AND resource = ? AND namespace = ? AND name = ?",
                (key[0], key[1], namespace, name),
            )
            self.set_revision(rev)

    def drop(self, key: tuple[str, str]) -> None:
        """Every object of one resource (a CRD that stopped being served)."""
        with self._transaction():
            self._conn.execute("DELETE FROM objects WHERE grp = ? AND resource = ?", key)

    def close(self) -> None:
        self._conn.close()

    def _transaction(self) -> _Transaction:
        return _Transaction(self._conn)


class _Transaction:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> None:
        self.conn.execute("BEGIN")

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        self.conn.execute("ROLLBACK" if exc_type is not None else "COMMIT")
