"""This process's own heartbeat: a thread that writes its row (ProcessBeat) every
HEARTBEAT_SECONDS, with what it works on, until the process stops.

Started by each kind of process where it is surely that process: a Celery worker when it is
ready and beat when it starts (console.processes.receivers), the sources' consumer in its command,
and the web when its WSGI application loads (console/wsgi.py: runserver's serving child and every
gunicorn worker load it; runserver's reloader parent and manage.py's other commands do not).
At most one per process; a process forked from one that beats (gunicorn --preload) starts its
own at its first request, since a thread does not survive a fork."""

import atexit
import logging
import os
import socket
import threading
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone

from console.leases import Beating
from console.processes.models import CURRENT_MAX, WEB
from console.processes.services import (
    process_beat,
    process_beat_start,
    process_beat_stop,
    process_beats_prune,
)

log = logging.getLogger(__name__)

# Each process forgets the rows of processes a day gone this often (and when it starts): a few
# deletes an hour over the deployment, whichever processes run.
PRUNE_EVERY = timedelta(hours=1)

_lock = threading.Lock()
_beating = None  # this process's ProcessHeartbeat, once started


class ProcessHeartbeat(Beating):
    def __init__(self, kind, interval):
        super().__init__(interval, name=f"process-heartbeat-{kind}")
        self.kind = kind
        self.host = socket.gethostname()[:255]
        self.pid = os.getpid()
        self.started_at = timezone.now()
        self.pruned_at = None
        # What it works on now, by a key of the caller's (a task's id), in the order started.
        self.work = {}
        self.work_lock = threading.Lock()

    @property
    def who(self):
        return {"kind": self.kind, "host": self.host, "pid": self.pid}

    def current(self):
        with self.work_lock:
            return "; ".join(self.work.values())[:CURRENT_MAX]

    def first_beat(self):
        process_beat_start(**self.who, now=self.started_at)
        self._prune(self.started_at)

    def beat(self):
        now = timezone.now()
        process_beat(**self.who, started_at=self.started_at, current=self.current(), now=now)
        self._prune(now)

    def _prune(self, now):
        if self.pruned_at is None or now - self.pruned_at >= PRUNE_EVERY:
            process_beats_prune(now=now)
            self.pruned_at = now


def beating_start(kind):
    """Start this process's heartbeat as a process of `kind`, unless it beats already. Its row is
    written at once (or at the next beat, if the database does not answer now)."""
    global _beating
    with _lock:
        if _beating is not None and _beating.pid == os.getpid():
            return _beating
        heartbeat = ProcessHeartbeat(kind, settings.HEARTBEAT_SECONDS)
        try:
            heartbeat.first_beat()
        except DatabaseError:
            log.warning("%s: first heartbeat not written; trying again", kind, exc_info=True)
        finally:
            connection.close()
        heartbeat.start()
        if _beating is None:
            # Once per process: the same function stops whichever heartbeat runs then.
            atexit.register(beating_stop)
        _beating = heartbeat
        return heartbeat


def beating_stop():
    """Stop this process's heartbeat, and say it stopped cleanly. Nothing if it does not beat."""
    global _beating
    with _lock:
        heartbeat, _beating = _beating, None
    if heartbeat is None or heartbeat.pid != os.getpid():
        return
    heartbeat.stop()
    try:
        process_beat_stop(**heartbeat.who)
    except DatabaseError:
        log.warning("%s: its stop was not written; it shows stale instead", heartbeat.kind)
    finally:
        connection.close()


def _ours():
    heartbeat = _beating
    return heartbeat if heartbeat is not None and heartbeat.pid == os.getpid() else None


def work_started(key, text):
    """This process works on `text` (until work_ended(key)): shown at its next beat. Nothing in
    a process that does not beat (a test's eager task, a web that runs one)."""
    heartbeat = _ours()
    if heartbeat is not None:
        with heartbeat.work_lock:
            heartbeat.work[key] = text


def work_ended(key):
    heartbeat = _ours()
    if heartbeat is not None:
        with heartbeat.work_lock:
            heartbeat.work.pop(key, None)


def beating_wsgi(application):
    """The web's WSGI `application`, beating from now on, and in a process forked from this one
    from its first request."""
    beating_start(WEB)

    def beating_application(environ, start_response):
        if _ours() is None:
            beating_start(WEB)
        return application(environ, start_response)

    return beating_application
