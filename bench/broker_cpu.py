"""CPU seconds of the processes a broker benchmark involves, and timed phases that report them.

A broker benchmark's cost is not only this process's: the broker's server works for every
message too (RabbitMQ's beam.smp, nats-server, redis-server), and so does PostgreSQL when it is
the database. A phase reads, from /proc (bench.first_run.process_tree_cpu), the CPU seconds of
this process and its descendants (Spark's JVM and its Python workers, the delivery run's forked
children once reaped) and of each named server with its own descendants (PostgreSQL's backends,
counted by the postmaster once they exit), before and after. The servers are shared: whatever
else runs on them meanwhile is counted too, so figures are upper bounds on a busy machine."""

import os
import time

import psutil

from bench.first_run import process_tree_cpu

RABBITMQ = ("beam.smp",)
NATS = ("nats-server",)
REDIS = ("redis-server",)
POSTGRES = ("postgres",)


def server_roots(names):
    """The pids of the processes named one of `names` whose parent is not also so named: each
    server once, its workers counted under it."""
    named = {}
    for proc in psutil.process_iter(["name", "ppid"]):
        if proc.info["name"] in names:
            named[proc.pid] = proc.info["ppid"]
    return sorted(pid for pid, ppid in named.items() if ppid not in named)


def cpu_seconds(roots):
    """CPU seconds so far of this process's tree, and of the roots' trees together."""
    return process_tree_cpu(os.getpid()), sum(process_tree_cpu(pid) for pid in roots)


class Timed:
    """`with Timed(names) as t:` ... then t.seconds (wall), t.cpu (CPU seconds of this process's
    tree and the servers named) and t.servers_cpu (the servers' part), over the block."""

    def __init__(self, names=()):
        self.roots = server_roots(names)
        self.seconds = self.cpu = self.servers_cpu = None

    def __enter__(self):
        self._cpu = cpu_seconds(self.roots)
        self._started = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self._started
        (own, servers), (own_before, servers_before) = cpu_seconds(self.roots), self._cpu
        self.servers_cpu = servers - servers_before
        self.cpu = own - own_before + self.servers_cpu

    def started_at(self):
        """perf_counter() at the block's start: what a wait inside it measures against."""
        return self._started

    def figures(self, n):
        """seconds, messages a second and CPU µs a message of n messages (and the servers'
        part of it)."""
        return {
            "seconds": round(self.seconds, 2),
            "msgs_per_s": round(n / self.seconds),
            "cpu_us_per_msg": round(self.cpu / n * 1e6, 1),
            "servers_cpu_us_per_msg": round(self.servers_cpu / n * 1e6, 1),
        }


def settled(names, *, share=0.05, window=0.5, patience=30.0):
    """Wait until the servers named are quiet (below `share` of a core over `window` seconds),
    `patience` seconds at most: RabbitMQ goes on writing a burst of persistent messages after
    confirming them, and the next phase timed must not be charged for it."""
    roots = server_roots(names)
    deadline = time.monotonic() + patience
    before = sum(process_tree_cpu(pid) for pid in roots)
    while time.monotonic() < deadline:
        time.sleep(window)
        now = sum(process_tree_cpu(pid) for pid in roots)
        if now - before < share * window:
            return
        before = now
