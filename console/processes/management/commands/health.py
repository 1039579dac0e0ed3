"""manage.py health [--process KIND [--pid PID]] [--host HOST] [--max-age SECONDS] [--wait SECONDS]:
exit 0 when all is well, 1 with one sentence on stderr when not, for systemd and Kubernetes
probes.

With --process: the database answers and a process of KIND on this host (--host another, or
`any`) has beaten within --max-age seconds (HEARTBEAT_STALE_SECONDS by default) and not stopped.
With --pid too: that very process (systemd's $MAINPID, so a unit's start waits for its own
process rather than the one it replaces). Without --process: the database answers and every kind
the deployment runs has such a process on any host; a table of them is printed. --wait asks
again every second for up to SECONDS until the answer is yes (a unit's ExecStartPost: the start
succeeds once the process beats)."""

import socket
import time

from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.utils import timezone

from console.moments import span_text
from console.processes import selectors
from console.processes.models import KIND_TITLES, KINDS
from console.processes.readiness import database_check

ANY_HOST = "any"


class Command(BaseCommand):
    help = (
        "Exit 1, with a sentence on stderr, when the database does not answer or a process is "
        "down or stale; 0 when all is well (for systemd and Kubernetes probes)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--process", choices=KINDS, help="check only this kind of process")
        parser.add_argument(
            "--host",
            help="the host it runs on: this one by default with --process, 'any' for any host",
        )
        parser.add_argument(
            "--pid", type=int, help="with --process: that process only (systemd's $MAINPID)"
        )
        parser.add_argument(
            "--wait",
            type=int,
            default=0,
            metavar="SECONDS",
            help="ask again every second for up to this long until all is well",
        )
        parser.add_argument(
            "--max-age",
            type=int,
            metavar="SECONDS",
            help="its last heartbeat at most this old (HEARTBEAT_STALE_SECONDS by default)",
        )

    def handle(self, *args, process=None, pid=None, wait=0, **options):
        if pid is not None and process is None:
            raise CommandError("--pid needs --process.")
        if wait < 0:
            raise CommandError("--wait must be 0 or more seconds.")
        deadline = time.monotonic() + wait
        while True:
            try:
                return self._check(process, pid, options["host"], options["max_age"])
            except CommandError:
                if time.monotonic() + 1 > deadline:
                    raise
            # A connection kept across the pause could be one that went away (never inside a
            # transaction, which closing would end).
            if not connection.in_atomic_block:
                connection.close()
            time.sleep(1)

    def _check(self, process, pid, host, max_age):
        database = database_check(connection)
        if not database.ok:
            raise CommandError(f"{database.detail}.")
        max_age = max_age if max_age is not None else selectors.stale_seconds()
        if max_age < 1:
            raise CommandError("--max-age must be at least 1 second.")
        if process is not None:
            if host is None:
                host = socket.gethostname()
            self._one(process, None if host == ANY_HOST else host, max_age, pid)
        else:
            self._every(None if host in (None, ANY_HOST) else host, max_age)

    def _one(self, kind, host, max_age, pid=None):
        where = f" on {host}" if host else ""
        if pid is not None:
            where += f" with pid {pid}"
        found = selectors.process_find(kind=kind, host=host, pid=pid, max_age=max_age)
        if found is None:
            last = selectors.process_last(kind=kind, host=host, pid=pid)
            raise CommandError(
                f"No {KIND_TITLES[kind]}{where} has beaten in the last {max_age} s "
                f"({_last_said(last)})."
            )
        self.stdout.write(
            f"{KIND_TITLES[kind]}{where}: alive (pid {found.pid}, last heartbeat "
            f"{found.age_text} ago)"
        )

    def _every(self, host, max_age):
        kinds = selectors.kinds_expected()
        down = []
        lines = [f"{'process':<26} {'state':<8} {'host':<24} {'pid':>8}  last heartbeat"]
        now = timezone.now()
        for kind in kinds:
            found = selectors.process_find(kind=kind, host=host, max_age=max_age, now=now)
            shown = found or selectors.process_last(kind=kind, host=host, now=now)
            if found is None:
                down.append(KIND_TITLES[kind])
            state = "alive" if found else (shown.state if shown else "never")
            lines.append(
                f"{KIND_TITLES[kind]:<26} {state:<8} {shown.host if shown else '-':<24} "
                f"{shown.pid if shown else '-':>8}  "
                f"{shown.age_text + ' ago' if shown else '-'}"
            )
        self.stdout.write("\n".join(lines))
        if down:
            raise CommandError(
                f"Not running (no heartbeat in the last {max_age} s): {', '.join(down)}."
            )


def _last_said(last):
    if last is None:
        return "none ever reported"
    which = f"the last one, pid {last.pid} on {last.host}"
    if last.stopped_at is not None:
        return f"{which}, stopped {span_text(timezone.now() - last.stopped_at)} ago"
    return f"{which}, beat {last.age_text} ago"
