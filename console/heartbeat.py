"""A lease renewed by heartbeat, for long work that keeps its state in the console DB (delivery
runs, refreshes): a sweeper treats a row whose heartbeat stopped as dead (ARCHITECTURE: tasks may
be lost, work may not)."""

import threading

from django.db import connection
from django.utils import timezone


class Heartbeat(threading.Thread):
    """Sets `heartbeat_at` on one running row of `model` every `interval` seconds until stopped.
    Runs on its own DB connection, closed when it ends."""

    def __init__(self, model, row_id, interval, *, owner=None):
        super().__init__(daemon=True, name=f"heartbeat-{model._meta.label}-{row_id}")
        self.model = model
        self.row_id = row_id
        self.interval = interval
        # Where the row records who holds it (`worker`): beat only while we do, so a worker that
        # lost the row to another never keeps it looking alive.
        self.owner = {"worker": owner} if owner is not None else {}
        self.stopped = threading.Event()

    def run(self):
        try:
            while not self.stopped.wait(self.interval):
                self.model.objects.filter(
                    id=self.row_id, status=self.model.RUNNING, **self.owner
                ).update(heartbeat_at=timezone.now())
        finally:
            connection.close()

    def stop(self):
        self.stopped.set()
        self.join(timeout=self.interval + 5)
