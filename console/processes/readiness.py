"""Is this web ready to serve: its database answers, every migration is applied, the Celery
broker answers and the lake is there. /readyz answers with these checks, `manage.py health`
with the first.

Each check says what it found in a sentence with no secret in it: a broker's or database's host
and port, never its URL (which may hold a password), and an error by its class only (a driver's
message may quote its connection string)."""

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from django.conf import settings
from django.db import DatabaseError
from django.db.migrations.executor import MigrationExecutor

from console.lake.models import LakeCommit

# A broker that has not answered within this many seconds is taken as down: a probe's own
# timeout is a few seconds (Kubernetes: 1 s by default, so set timeoutSeconds to 5).
BROKER_TIMEOUT_SECONDS = 2
MIGRATIONS_NAMED = 3


@dataclass(frozen=True)
class Check:
    ok: bool
    detail: str


def _where(host, port):
    return f"{host or 'localhost'}:{port}" if port else (host or "localhost")


def database_check(connection):
    where = (
        "SQLite database"
        if connection.vendor == "sqlite"
        else f"{connection.vendor} database at "
        f"{_where(connection.settings_dict.get('HOST'), connection.settings_dict.get('PORT'))}"
    )
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError as exc:
        return Check(False, f"the {where} does not answer ({type(exc).__name__})")
    return Check(True, f"the {where} answers")


def migrations_check(connection):
    try:
        executor = MigrationExecutor(connection)
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except DatabaseError as exc:
        return Check(False, f"the applied migrations cannot be read ({type(exc).__name__})")
    if not plan:
        return Check(True, "every migration is applied")
    names = [f"{m.app_label}.{m.name}" for m, backwards in plan if not backwards]
    shown = ", ".join(names[:MIGRATIONS_NAMED]) + (", ..." if len(names) > MIGRATIONS_NAMED else "")
    return Check(False, f"{len(plan)} migration(s) not applied: {shown} (run migrate)")


def _folders_check(options):
    folders = {options[name] for name in ("data_folder_in", "data_folder_out", "processed_folder")}
    for folder in sorted(folders):
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK | os.X_OK):
            return Check(False, f"the filesystem broker's folder {folder} is missing or read-only")
    return Check(True, "the filesystem broker's folders are writable")


def broker_check():
    url = settings.CELERY_BROKER_URL
    scheme = urlparse(url).scheme
    if scheme == "memory":
        return Check(True, "the in-memory broker (tests)")
    if scheme == "filesystem":
        return _folders_check(settings.CELERY_BROKER_TRANSPORT_OPTIONS)
    from kombu import Connection

    parsed = urlparse(url)
    where = f"the {scheme} broker at {_where(parsed.hostname, parsed.port)}"
    try:
        with Connection(url, connect_timeout=BROKER_TIMEOUT_SECONDS) as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, timeout=BROKER_TIMEOUT_SECONDS)
    except Exception as exc:
        # Whatever the transport raises (socket, redis or amqp errors): it did not answer.
        return Check(False, f"{where} does not answer ({type(exc).__name__})")
    return Check(True, f"{where} answers")


def _has_commits():
    try:
        return LakeCommit.objects.exists()
    except DatabaseError:
        return True  # unknown: the folder must be there


def lake_check(*, database_ok):
    root = Path(settings.LAKE_URI)
    if root.is_dir():
        if not os.access(root, os.R_OK | os.X_OK):
            return Check(False, f"the lake folder {root} is not readable")
        return Check(True, f"the lake folder {root} is readable")
    # A new install has no lake until its first write makes it; one that has commits must have
    # its folder (a volume not mounted, a path mistyped).
    committed = database_ok and _has_commits()
    if committed or root.exists():
        return Check(False, f"the lake folder {root} is missing or not a folder")
    return Check(True, f"the lake folder {root} is made at the first write (a new install)")


def readiness(connection):
    """{check name: Check} for the database (`connection`), its migrations, the broker and the
    lake."""
    database = database_check(connection)
    if database.ok:
        migrations = migrations_check(connection)
    else:
        migrations = Check(False, "not checked: the database does not answer")
    return {
        "database": database,
        "migrations": migrations,
        "broker": broker_check(),
        "lake": lake_check(database_ok=database.ok),
    }
