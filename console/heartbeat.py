"""A lease renewed by heartbeat, for long work that keeps its state in the console DB (delivery
runs, refreshes): a sweeper treats a row whose heartbeat stopped as dead (ARCHITECTURE: tasks may
be lost, work may not). Each process's own heartbeat (console.processes) beats in the same loop."""

import logging
import os
import socket
import threading

from django.db import DatabaseError, connection
from django.utils import timezone

log = logging.getLogger(__name__)


def worker_name():
    """This process, as the rows of the work it holds name it (host:pid)."""
    return f"{socket.gethostname()}:{os.getpid()}"[:200]


class Beating(threading.Thread):
    """Calls `beat()` every `interval` seconds until stopped, in a daemon thread.

    Each beat takes a connection from the process's pool and gives it back at once: a heartbeat
    never holds one between beats, so it cannot be starved by, nor starve, the work it beats for
    (which may hold its own connection in a transaction for minutes). A beat that fails (the
    database away, no connection free in DB_POOL_TIMEOUT) is tried again at the next one."""

    def __init__(self, interval, *, name):
        super().__init__(daemon=True, name=name)
        self.interval = interval
        self.stopped = threading.Event()

    def run(self):
        while not self.stopped.wait(self.interval):
            try:
                self.beat()
            except DatabaseError:
                log.warning("%s: heartbeat not written; trying again", self.name, exc_info=True)
            finally:
                connection.close()

    def beat(self):
        raise NotImplementedError

    def stop(self):
        self.stopped.set()
        self.join(timeout=self.interval + 5)


class Heartbeat(Beating):
    """Sets `heartbeat_at` on one running row of `model` every `interval` seconds until stopped.
    The lease (LEASE_SECONDS) outlasts several missed beats."""

    def __init__(self, model, row_id, interval, *, owner=None):
        super().__init__(interval, name=f"heartbeat-{model._meta.label}-{row_id}")
        self.model = model
        self.row_id = row_id
        # Where the row records who holds it (`worker`): beat only while we do, so a worker that
        # lost the row to another never keeps it looking alive.
        self.owner = {"worker": owner} if owner is not None else {}

    def beat(self):
        self.model.objects.filter(id=self.row_id, status=self.model.RUNNING, **self.owner).update(
            heartbeat_at=timezone.now()
        )
