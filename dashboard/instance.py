"""One server per database, unless the servers are built to share it.

The embedded default is one process: SQLite and the in-memory channel layer. A second process
started on the same SQLite file could not reach the first one's simulations (their command
channels live in the first process's memory), and at start it forgets every registry row of
another process (the rows a killed predecessor left behind). So the server that hosts
simulations takes an exclusive lock on its database for as long as it lives, and a second
one refuses to start with one line that says why.

* SQLite: `flock` on `<database>.lock` beside the file the path resolves to (symlinks followed:
  a link to the same file is the same database). The kernel releases it when the process ends in
  any way (`kill -9` included), so a restart after a crash is never refused.
* PostgreSQL with the in-memory channel layer (one process, a shared registry): a
  session-level advisory lock held on a connection of its own.
* With a Redis channel layer, several processes sharing one database is the design
  (docs/dashboard.md#several-processes): no lock.

And a server refuses a damaged SQLite file (`check_database`: truncated, overwritten, not a
database) with one line naming it and what to do, instead of answering 500 to every request.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

from django.conf import settings

_held: list[Any] = []  # what keeps the lock: an open file or a database connection


class DatabaseInUse(RuntimeError):
    """Another live process serves this database."""


class DatabaseDamaged(RuntimeError):
    """The SQLite file cannot be read whole: the message names it and what to do."""


def shared_by_design() -> bool:
    return settings.CHANNEL_LAYERS["default"]["BACKEND"] != "channels.layers.InMemoryChannelLayer"


def claim_database() -> None:
    """Take this process's exclusive hold on its database (once; again is a no-op).
    Raises DatabaseInUse naming the database and, where it can, the other process."""
    if _held or shared_by_design():
        return
    db = settings.DATABASES["default"]
    if db["ENGINE"] == "django.db.backends.sqlite3":
        _claim_sqlite(Path(str(db["NAME"])))
    elif db["ENGINE"] == "django.db.backends.postgresql":
        _claim_postgres(db)


def _claim_sqlite(path: Path) -> None:
    # The file itself, not the name it was given: a symlink (or a path through a symlinked
    # directory) to a database another server holds must meet that server's lock.
    real = Path(os.path.realpath(path))
    lock_path = real.with_name(real.name + ".lock")
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        try:
            other = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        finally:
            os.close(fd)
        who = f"process {other}" if other.isdigit() else "another process"
        named = f"{path} (the file {real})" if real != path else f"{path}"
        raise DatabaseInUse(
            f"another ctrlscope server ({who}) serves the database {named}: stop it, "
            "or give this one its own with CTRLSCOPE_DB_PATH"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _held.append(fd)


def _claim_postgres(db: dict[str, Any]) -> None:
    import psycopg

    conninfo = {
        "dbname": db["NAME"],
        "user": db.get("USER") or None,
        "password": db.get("PASSWORD") or None,
        "host": db.get("HOST") or None,
        "port": db.get("PORT") or None,
    }
    conn = psycopg.connect(**{k: v for k, v in conninfo.items() if v}, autocommit=True)
    key = int.from_bytes(hashlib.sha256(b"ctrlscope one server").digest()[:8], "big", signed=True)
    row = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
    if not row or not row[0]:
        conn.close()
        raise DatabaseInUse(
            f"another ctrlscope server serves the database {db['NAME']} without a shared channel layer: "
            "stop it, or run both with CTRLSCOPE_REDIS_URL (docs/dashboard.md#several-processes)"
        )
    _held.append(conn)


def check_database() -> None:
    """Raise DatabaseDamaged unless the SQLite database reads whole (`PRAGMA quick_check`: every
    page and index, in time linear in the file: 0.6 s for 115 MB with both cores busy). A file that does not exist
    yet, or is empty, is a fresh database (migrate creates it). Other engines check themselves."""
    db = settings.DATABASES["default"]
    if db["ENGINE"] != "django.db.backends.sqlite3":
        return
    path = Path(str(db["NAME"]))
    try:
        if not path.exists() or path.stat().st_size == 0:
            return
        conn = sqlite3.connect(path)
        try:
            rows = conn.execute("PRAGMA quick_check").fetchall()
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        problem = str(exc)
    except OSError as exc:  # unreadable: a directory, no permission
        problem = exc.strerror or str(exc)
    else:
        if rows == [("ok",)]:
            return
        problem = "; ".join(str(row[0]) for row in rows[:3])
    problem = " ".join(problem.split())[:200]  # one line, whatever SQLite said
    raise DatabaseDamaged(
        f"the database {path} is damaged ({problem}): move it aside (or delete it) to start afresh "
        "without its recordings, or give this server another file with CTRLSCOPE_DB_PATH"
    )


def exit_if_damaged() -> None:
    """`check_database` for a command that is about to use the database: one line on stderr
    and exit code 2 when it is damaged."""
    try:
        check_database()
    except DatabaseDamaged as exc:
        sys.stderr.write(f"ctrlscope: {exc}\n")
        sys.stderr.flush()
        raise SystemExit(2) from None


def release_for_tests() -> None:
    """Let go of the hold (tests that claim and release in one process)."""
    while _held:
        held = _held.pop()
        if isinstance(held, int):
            os.close(held)
        else:
            held.close()
