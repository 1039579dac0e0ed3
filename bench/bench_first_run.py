"""A newcomer's first `make run` (issue 31), timed from the command to: the end of each step it
prints (migrate and seed_demo, honcho's start), the web answering (HTTP 200 on the login page),
the spark worker's JVM up, the first delivery run and the first refresh committed, the first
quarantined message on the dashboard (/api/v1/stats as the demo viewer), the demo's fill over;
then Ctrl-C, and how long until every process stopped, with any traceback they printed.

Goals, on a quiet 2-core machine with a warm virtualenv: the web within 15 s, the first
quarantined message within 45 s, no traceback at Ctrl-C. CPU seconds of all the processes `make
run` starts (bench.support.CpuMeter, from /proc, gone ones included; not the demo's own NATS and
Redis servers) say what the run costs whatever else the machine does: a busy machine's seconds
are longer. The demo's fill also says its CPU µs a message, start-up included: what a newcomer's
first messages cost. `make run` as it is (bench/first_run.py), on var/bench-first-run
and a free port; the RabbitMQ demo on a virtual host of its own when RabbitMQ and rabbitmqctl
are here. BENCH_FIRST_RUN_ROOT runs another checkout's `make run` instead (the tree before a
change, to compare; its Makefile must take PORT)."""

import os
import time

from bench.first_run import FirstRun, own_brokers, rabbitmq_vhost, rabbitmq_vhost_delete
from bench.support import ROOT, CpuMeter, cpu_per_message

# Bounds on waits, so that a run that goes wrong ends with what it measured; not goals.
WEB_PATIENCE = 300
QUARANTINE_PATIENCE = 600
FILL_PATIENCE = 900
GOALS = {"web": 15, "quarantined": 45}


class FirstRunFailed(RuntimeError):
    """A step never came: the rows measured so far still go in the table and the JSON."""

    def __init__(self, message, rows):
        super().__init__(message)
        self.rows = rows


def _wait(predicate, patience, what, rows):
    deadline = time.monotonic() + patience
    while True:
        found = predicate()
        if found:
            return found
        if time.monotonic() > deadline:
            raise FirstRunFailed(f"no {what} after {patience} s", rows)
        time.sleep(0.25)


def _row(step, seconds, *, cpu=None, goal=None, messages=None):
    row = {"step": step, "seconds": None if seconds is None else round(seconds, 1)}
    row["cpu s (all processes)"] = "" if cpu is None else round(cpu, 1)
    if cpu is not None and messages:
        row |= cpu_per_message(cpu, messages)
    row["goal (quiet 2 cores)"] = "" if goal is None else f"<= {goal} s"
    return row


def run():
    with own_brokers(ROOT / "var" / "bench-first-run-brokers") as brokers:
        return _run(brokers)


def _run(brokers):
    vhost = rabbitmq_vhost()
    first = FirstRun(
        ROOT / "var" / "bench-first-run",
        amqp_url=vhost[0] if vhost else None,
        nats_url=brokers["nats"],
        redis_url=brokers["redis"],
        root=os.environ.get("BENCH_FIRST_RUN_ROOT") or ROOT,
    )
    rows = [
        {"step": f"cores {os.cpu_count()}, load average {os.getloadavg()[0]:.1f} at the start"},
        {"step": f"RabbitMQ demo {'on (a vhost of its own)' if vhost else 'off'}"},
        *(
            {"step": f"{title} demo {'on (a server of its own)' if brokers[key] else 'off'}"}
            for key, title in (("nats", "NATS"), ("redis", "Redis"))
        ),
    ]
    marks = {}
    meter = None
    try:
        first.start()
        meter = CpuMeter(roots=(first.proc.pid,), servers=()).start()
        _wait(first.web_answers, WEB_PATIENCE, "web", rows)
        marks["web"] = first.elapsed()
        marks["web cpu"] = meter.reading()
        session = _wait(lambda: first.session("viewer"), WEB_PATIENCE, "login", rows)

        def quarantined():
            stats = first.stats(session)
            demo = (stats or {}).get("demo")
            if demo and demo["sent"] and "progress" not in marks:
                marks["progress"] = first.elapsed()
            return bool(stats and stats["quarantined"])

        _wait(quarantined, QUARANTINE_PATIENCE, "quarantined message", rows)
        marks["quarantined"] = first.elapsed()
        marks["quarantined cpu"] = meter.reading()
        marks["quarantined cpu by process"] = first.cpu_seconds_by_process()

        def filled():
            stats = first.stats(session)
            demo = (stats or {}).get("demo") or {}
            marks["messages"] = demo.get("total")
            return bool(stats) and not demo.get("filling")

        _wait(filled, FILL_PATIENCE, "end of the demo's fill", rows)
        marks["filled"] = first.elapsed()
        marks["filled cpu"] = meter.reading()
        marks["delivery"] = first.first_finished("delivery_deliveryrun", "AND claimed > 0")
        marks["refresh"] = first.first_finished("readmodels_refreshrun")
        marks["stop"] = first.interrupt()
    finally:
        if meter is not None:
            meter.stop()
        if first.running():
            first.kill()
        if vhost:
            rabbitmq_vhost_delete(vhost[1])
        rows += _rows(first, marks)
    if marks.get("stop") is None:
        raise FirstRunFailed("Ctrl-C did not stop every process", rows)
    return rows


def _rows(first, marks):
    if first.started is None:
        return []
    tracebacks = first.tracebacks()
    return [
        _row("migrate (to seed_demo's first line)", first.line_at(r"^\w+\s+created\s+\d+ perm")),
        _row("seed_demo (Demo ready.)", first.line_at(r"Demo ready\.")),
        _row("honcho started the processes", first.line_at(r"system\s+\| web\.1 started")),
        _row("web answers (200 on /login/)", marks.get("web"), cpu=marks.get("web cpu"), goal=15),
        _row("the dashboard shows the demo filling", marks.get("progress")),
        _row("spark worker's JVM up", first.line_at(r"spark\.1 .*log4j2-defaults")),
        _row("first delivery run committed", marks.get("delivery")),
        _row("first refresh committed", marks.get("refresh")),
        _row(
            "first quarantined on the dashboard",
            marks.get("quarantined"),
            cpu=marks.get("quarantined cpu"),
            goal=45,
        ),
        _row(
            "the demo filled",
            marks.get("filled"),
            cpu=marks.get("filled cpu"),
            messages=marks.get("messages"),
        ),
        _row("Ctrl-C until every process stopped", marks.get("stop")),
        {"step": f"tracebacks printed: {len(tracebacks)}", "seconds": None},
    ] + [
        _row(f"  of which {name} (CPU s to the first quarantined)", None, cpu=cpu)
        for name, cpu in sorted(marks.get("quarantined cpu by process", {}).items())
    ]
