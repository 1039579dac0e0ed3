"""Reads for ingest: which ids the product already holds, which inbox files it already took."""

from django.db import connection

from console.ingest.models import InboxFile, MessageKey
from console.queues.models import Queue

# SQLite refuses more than 999 parameters in one statement on older builds; stay under it.
IN_CHUNK = 900


def message_keys_body_hashes(*, ids):
    """{message_id: body_sha256} for the given ids that were already accepted.

    Plain SQL: building an ORM `__in` filter costs more than running it (4 ms per 900 ids), and
    ingest asks this for every message it takes."""
    ids = list(ids)
    meta = MessageKey._meta
    quote = connection.ops.quote_name
    table = quote(meta.db_table)
    id_column = quote(meta.get_field("message_id").column)
    sha_column = quote(meta.get_field("body_sha256").column)
    found = {}
    with connection.cursor() as cursor:
        for start in range(0, len(ids), IN_CHUNK):
            chunk = ids[start : start + IN_CHUNK]
            marks = ", ".join(["%s"] * len(chunk))
            cursor.execute(
                f"SELECT {id_column}, {sha_column} FROM {table} "  # noqa: S608 - names from the model
                f"WHERE {id_column} IN ({marks})",
                chunk,
            )
            found.update(cursor.fetchall())
    return found


def queue_names():
    return set(Queue.objects.values_list("name", flat=True))


def inbox_file_get(*, sha256):
    return InboxFile.objects.filter(sha256=sha256).first()
