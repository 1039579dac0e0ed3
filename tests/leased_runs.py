"""Runs under a lease (console.leases) as the sweepers' tests set them up: handed to the broker,
and beating, a given number of seconds ago."""

from datetime import timedelta


def leased_run(model, *, now, status, enqueued, heartbeat, attempts, **fields):
    """A `model` run last handed to the broker `enqueued` seconds before `now`, its heartbeat
    `heartbeat` seconds before (None: it never beat), held by a worker while it runs."""
    return model.objects.create(
        status=status,
        enqueued_at=now - timedelta(seconds=enqueued),
        heartbeat_at=None if heartbeat is None else now - timedelta(seconds=heartbeat),
        worker="w:1:x" if status == model.RUNNING else "",
        attempts=attempts,
        **fields,
    )
