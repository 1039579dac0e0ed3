"""Reads of purge records, and of a purge's id list (pyarrow, from its lake directory)."""

from console.lake.services import lake
from console.retention.models import PurgeRun
from workers.jobs.purge import ids_batches

SHOWN = 100


def purge_list(*, limit=SHOWN):
    """The newest purges and previews."""
    return list(PurgeRun.objects.order_by("-id")[:limit])


def purge_get(*, purge_id):
    return PurgeRun.objects.filter(id=purge_id).first()


def purge_ids_lines(*, purge):
    """The purged (or, for a preview, purgeable) ids, sorted, one per line: the text whose
    SHA-256 is the purge's ids_sha256."""
    for table in ids_batches(lake().path(purge.ids_path), columns=["message_id"]):
        yield "".join(f"{message_id}\n" for message_id in table.column(0).to_pylist())
