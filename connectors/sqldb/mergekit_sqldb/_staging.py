"""Staging tables' names and owners, and the removal of those a dead driver left behind.

A statement's staging table (``_mk_stage_<uuid>...``) belongs to the driver process that created it in
``begin_*`` and drops it in ``finish_*`` or ``abort_*``. A driver that dies in between (killed, out of memory, a
lost host) leaves it behind, with the rows its tasks staged; nothing of it was applied. The next connector created
over the database (:func:`drop_abandoned_staging`, from the factory) drops every staging table whose owner is gone,
and never one whose owner may still be running its statement:

* PostgreSQL: the owner holds a session-level advisory lock on a key derived from the table's name, from before
  the table exists until after it is dropped. PostgreSQL releases the lock when the owner's session ends, however
  the process died, on whatever host it ran. A table whose lock another session can take has no owner.
* SQLite (one host: a database file): the name carries its owner, ``_<host>_<boot>_<pid>_<start>``: a hash of
  the host name, the boot id, the process id and the process's start time (Linux ``/proc``; 0 where unknown).
  The owner is gone when the host is this one and it rebooted since, or the process no longer exists, or another
  process has its id. Tables of another host, or named without an owner, are left alone.

Dropping an owner's live table would only make its statement fail (its apply reads the staging table in the one
transaction), never apply part of it; the checks above keep even that from happening.
"""

from __future__ import annotations

import hashlib
import os
import re
import socket
import uuid
from typing import Any

from mergekit.errors import MergekitError

from ._db import POSTGRESQL, STAGE_PREFIX, qualified, quote

_OWNED = re.compile(
    rf"^{STAGE_PREFIX}(?P<id>[0-9a-f]{{32}})(?:_(?P<host>[0-9a-f]{{8}})_(?P<boot>[0-9a-f]{{8}})_(?P<pid>\d+)_(?P<start>\d+))?$"
)


def new_stage_name(kind: str) -> str:
    """A fresh staging table name: ``_mk_stage_<uuid>`` (PostgreSQL: 42 characters, under its 63), with the
    owner appended on SQLite."""
    name = f"{STAGE_PREFIX}{uuid.uuid4().hex}"
    if kind == POSTGRESQL:
        return name
    pid = os.getpid()
    return f"{name}_{_host()}_{_boot()}_{pid}_{_start_time(pid)}"


def lock_key(stage: str) -> int:
    """The PostgreSQL advisory lock key of a staging table: 64 bits of its uuid, as a signed bigint."""
    m = _OWNED.match(stage)
    value = int((m.group("id") if m else hashlib.sha1(stage.encode()).hexdigest())[:16], 16)
    return value - (1 << 64) if value >= 1 << 63 else value


def take_lease(catalog: Any, stage: str) -> None:
    """Before the staging table exists: its owner's lock (PostgreSQL), on the driver's catalog connection."""
    if catalog.cfg.kind == POSTGRESQL:
        catalog.rows("SELECT pg_advisory_lock(%s)", (lock_key(stage),))


def end_lease(catalog: Any, stage: str) -> None:
    """After the staging table is gone: release the owner's lock (PostgreSQL)."""
    if catalog.cfg.kind == POSTGRESQL:
        catalog.rows("SELECT pg_advisory_unlock(%s)", (lock_key(stage),))


def drop_abandoned_staging(catalog: Any) -> list[str]:
    """Drop the staging tables whose owner is gone (see the module's doc); returns their qualified names. A table
    that cannot be dropped within a second (a task of the dead driver still writing, a busy SQLite file, no
    privilege) is left for the next time. Run on a connection that began no statement of its own (a session may
    take its own advisory lock again)."""
    pattern = STAGE_PREFIX.replace("_", "\\_") + "%"
    postgresql = catalog.cfg.kind == POSTGRESQL
    catalog.rows("SET lock_timeout = '1s'" if postgresql else "PRAGMA busy_timeout = 1000")
    try:
        return _drop_pg(catalog, pattern) if postgresql else _drop_sqlite(catalog, pattern)
    finally:
        catalog.rows(
            "RESET lock_timeout" if postgresql else f"PRAGMA busy_timeout = {int(catalog.cfg.busy_timeout * 1000)}"
        )


def _drop_pg(catalog: Any, pattern: str) -> list[str]:
    dropped = []
    tables = catalog.rows(
        "SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE c.relkind = 'r' AND c.relname LIKE %s",
        (pattern,),
    )
    for schema, name in tables:
        key = lock_key(name)
        if not catalog.rows("SELECT pg_try_advisory_lock(%s)", (key,))[0][0]:
            continue  # its owner holds it: the statement is running
        try:
            if _drop(catalog, schema, name):
                dropped.append(f"{schema}.{name}")
        finally:
            catalog.rows("SELECT pg_advisory_unlock(%s)", (key,))
    return dropped


def _drop_sqlite(catalog: Any, pattern: str) -> list[str]:
    dropped = []
    for schema in [r[1] for r in catalog.rows("PRAGMA database_list") if r[1] != "temp"]:
        names = catalog.rows(
            f"SELECT name FROM {quote(schema)}.sqlite_master WHERE type = 'table' AND name LIKE ? ESCAPE '\\'",
            (pattern,),
        )
        for (name,) in names:
            if _sqlite_owner_gone(name) and _drop(catalog, schema, name):
                dropped.append(f"{schema}.{name}")
    return dropped


def _drop(catalog: Any, schema: str, name: str) -> bool:
    try:
        catalog.rows(f"DROP TABLE IF EXISTS {qualified(schema, name)}")
        return True
    except MergekitError:  # locked past the timeout, or not ours to drop: not now
        return False


def _sqlite_owner_gone(name: str) -> bool:
    m = _OWNED.match(name)
    if m is None or m.group("host") is None or m.group("host") != _host():
        return False  # no owner named, or another host's: it cannot be checked from here
    if m.group("boot") != _boot():
        return True  # the host rebooted since: every process of then is gone
    pid, start = int(m.group("pid")), int(m.group("start"))
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # it exists (another user's)
    return start != 0 and _start_time(pid) not in (0, start)  # the id was reused by a later process


def _host() -> str:
    return hashlib.sha1(socket.gethostname().encode()).hexdigest()[:8]


def _boot() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip().replace("-", "")[:8]
    except OSError:
        return "0" * 8


def _start_time(pid: int) -> int:
    """The process's start time in clock ticks since boot (Linux); 0 where unknown."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[19])
    except (OSError, IndexError, ValueError):
        return 0
