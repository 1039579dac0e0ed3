"""Locks held until the caller's transaction ends, for writers that must go one at a time (the
audit chain's head, lake commits, the poison list), each under its own fixed key."""

from django.db import transaction


def xact_lock(key, what):
    """Hold the lock `key` until the caller's transaction ends. On PostgreSQL an advisory lock
    serializes the writers; SQLite serializes writers already (the console's transactions begin
    IMMEDIATE). `what` names the lock in the error a caller outside a transaction gets: out of
    one, the lock would end with the statement."""
    conn = transaction.get_connection()
    if not conn.in_atomic_block:
        raise RuntimeError(f"{what} is held inside the caller's transaction")
    if conn.vendor == "postgresql":
        with conn.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [key])
