"""A throwaway PostgreSQL server for tests: ``initdb`` into a temporary directory, ``pg_ctl start`` on a free
loopback port, stopped and removed afterwards. Uses the server binaries of /usr/lib/postgresql/<n>/bin
(``.ci/run`` installs them when missing); a missing server fails the test rather than skipping it.

The test run starts ONE server (the session-scoped ``pg_server`` fixture of tests/conftest.py, which gives its
base URI); a test that needs isolation takes a new database on it with :func:`fresh_database`. The databases
:func:`fresh_database` created are dropped when their test module ends (:func:`drop_databases`).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

__all__ = ["pg_bin", "running_pg_server", "fresh_database", "drop_databases"]


def pg_bin() -> str:
    """The directory with initdb and pg_ctl, newest installed major version first."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True)
    found = shutil.which("initdb")
    if found:
        candidates.append(found)
    if not candidates:
        pytest.fail("PostgreSQL server binaries (initdb, pg_ctl) are not installed")
    return os.path.dirname(candidates[0])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _has_user(name: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


@contextmanager
def running_pg_server(prefix: str = "mk-pg-") -> Iterator[str]:
    """Start a server; yields its base URI ``postgresql://postgres@127.0.0.1:PORT`` (append ``/dbname``)."""
    bindir = pg_bin()
    root = tempfile.mkdtemp(prefix=prefix)
    data = os.path.join(root, "data")
    as_user: list[str] = []
    if os.geteuid() == 0:  # initdb refuses to run as root
        import pwd

        user = "postgres" if _has_user("postgres") else "nobody"
        pw = pwd.getpwnam(user)
        os.chown(root, pw.pw_uid, pw.pw_gid)
        as_user = ["runuser", "-u", user, "--"]
    port = _free_port()
    subprocess.run(
        [*as_user, f"{bindir}/initdb", "-D", data, "-A", "trust", "-U", "postgres", "--no-sync"],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [
            *as_user,
            f"{bindir}/pg_ctl",
            "-D",
            data,
            "-l",
            os.path.join(root, "log"),
            "-w",
            "-o",
            f"-p {port} -c listen_addresses=127.0.0.1 -k {root} -c fsync=off",
            "start",
        ],
        check=True,
        capture_output=True,
    )
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}"
    finally:
        subprocess.run([*as_user, f"{bindir}/pg_ctl", "-D", data, "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def fresh_database(server_uri: str, prefix: str = "mk") -> str:
    """Create an empty database on the server; returns its URI."""
    import psycopg

    db = f"{prefix}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(f"{server_uri}/postgres", autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {db}")
    _created.append((server_uri, db))
    return f"{server_uri}/{db}"


#: (server URI, database) of every database :func:`fresh_database` created and :func:`drop_databases` has not dropped
_created: list[tuple[str, str]] = []


def drop_databases() -> None:
    """Drop the databases :func:`fresh_database` created (closing what still connects to them), so one server
    serves the whole run without collecting a database per test."""
    import psycopg

    while _created:
        server_uri, db = _created.pop()
        with psycopg.connect(f"{server_uri}/postgres", autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
