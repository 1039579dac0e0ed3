"""SQL the bulk writers share (decision chunks, the refresh's load, the poison list): statements
that name many rows and must find each of them by its index, on PostgreSQL and on SQLite."""

import contextlib
import json

from django.db import connection, transaction


def in_values(column, values):
    """(SQL, params): `column` is one of `values`, however many, as one parameter: an array on
    PostgreSQL, a JSON list on SQLite (whose statements take a limited number of parameters).
    Either way the column's index finds each value."""
    if connection.vendor == "postgresql":
        return f"{column} = ANY(%s)", [list(values)]
    return f"{column} IN (SELECT value FROM json_each(%s))", [json.dumps(list(values))]  # noqa: S608


@contextlib.contextmanager
def joins_by_key(cursor):
    """On PostgreSQL, for the duration: joins as nested loops, so that a chunk's staged rows
    each find their rows by an index. The settings are a transaction's: this opens one (a
    savepoint inside the caller's). Not on SQLite, where it does nothing: a transaction there
    begins IMMEDIATE (settings), and a read in one would wait for every writer.

    Left to itself the planner hashes the whole table for some thousands of staged rows: a read
    of every row, growing with the table (measured: the index at 300k rows, 90 ms against 25 ms
    a statement; the ingest keys at 1.1M rows, 150 ms a chunk)."""
    if connection.vendor != "postgresql":
        yield
        return
    with transaction.atomic():
        cursor.execute(
            "SELECT current_setting('enable_hashjoin'), current_setting('enable_mergejoin')"
        )
        saved = cursor.fetchone()
        cursor.execute("SET LOCAL enable_hashjoin = off")
        cursor.execute("SET LOCAL enable_mergejoin = off")
        try:
            yield
        finally:
            cursor.execute(
                "SELECT set_config('enable_hashjoin', %s, true), "
                "set_config('enable_mergejoin', %s, true)",
                saved,
            )
