"""The soak (issue 29): the running product under a steady load, approvals and SIGKILLs, then the
invariants checked from the outside.

`python -m bench soak` (or `python -m bench.soak`, which takes options) starts the web, the spark
worker, the default worker and beat as the Procfile does, on a PostgreSQL database and a Redis
database of their own (made afresh) and a VAR_DIR and lake in a temporary folder. Then, for the
soak's duration:

- a sender posts messages through the API in batches at a steady rate, with a service
  account's API token, to
  three queues whose handler (bench/soak_handlers.py) succeeds, fails transiently, fails
  permanently or ends its process as each message's body says, and writes each successful call
  down outside the product;
- an operator asks, every minute, to reprocess a quarantined failure group and a selection of
  quarantined messages, through the API (signed in: a person has no token), and an approver
  (another person) approves;
- a killer SIGKILLs each process in turn, with everything it started (the JVM, Spark's Python
  workers, the handlers' children), and starts it again.

Then it waits until the product settles (nothing to be delivered or in flight, every request
finished, the read models up to date) and checks, from the lake's ledger, the success records and
the console's database: nothing lost, no delivery without a successful call, no success lost,
crashers isolated, each failure where its queue's policy sends it, second successes only after a
kill, counts equal to a recount (manage.py counts_verify, and the dashboard's per-queue counts
against the ledger), no stuck work, every request done, the audit chain intact. Figures: messages,
kills, duplicates, how stale the console got, time to settle after the load and the last kill,
peak memory of each process (its children included), CPU seconds by process (each sampled just
before it is killed) and the CPU µs a message of every process involved, PostgreSQL's and Redis's
included, from the load's start until it settled (bench.support.CpuMeter; the sender's HTTP
client, in this process, too).

tests/processes/test_soak_short.py is its short version, with the same parts.

Size (options of `python -m bench.soak`, or the environment for `python -m bench soak`):
SOAK_MESSAGES (10000), SOAK_MINUTES (8), SOAK_KILLS (16), SOAK_APPROVE_EVERY (60 s),
SOAK_SETTLE_TIMEOUT (1800 s); where: SOAK_DATABASE_URL (postgres://postgres@127.0.0.1:5432/
antidote_soak_bench, dropped and made again), SOAK_BROKER_URL (redis://127.0.0.1:6379/11, flushed).
The temporary folder (logs, lake, success records) is kept when a check fails, or with
SOAK_KEEP=1."""

import argparse
import contextlib
import itertools
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import psutil

from bench.soak_checks import (
    EXAMPLES,
    Check,
    Facts,
    check_audit,
    check_counts,
    check_crashers_isolated,
    check_delivered_after_success,
    check_duplicates,
    check_no_stuck_work,
    check_no_success_lost,
    check_nothing_lost,
    check_policies,
    check_requests_done,
    current_states,
    plan,
    queues_define,
)
from bench.support import (
    POSTGRES_SERVER,
    REDIS_SERVER,
    CpuMeter,
    login_page_answers,
    port_answers,
)

ROOT = Path(__file__).resolve().parent.parent

BATCH = 20
# The Procfile's processes, killed in this order, in turn.
KINDS = ("web", "spark", "worker", "beat")
# Settings of the product's processes for a soak: a new approver may approve at once; beat
# recounts the counts, checkpoints the audit chain and runs a purge (of nothing: retention is 30
# days) every few minutes, so that those run under kills too; a count check that finds drift
# reports it and leaves it (a repair would hide it from the final check).
SOAK_SETTINGS = {
    "APPROVER_COOLDOWN_HOURS": "0",
    "COUNTS_VERIFY_SECONDS": "120",
    "COUNTS_VERIFY_REPAIR": "false",
    "AUDIT_CHECKPOINT_SECONDS": "60",
    "AUDIT_VERIFY_SECONDS": "300",
    "PURGE_INTERVAL_SECONDS": "300",
}
DATABASE = "postgres://postgres@127.0.0.1:5432/antidote_soak_bench"
BROKER = "redis://127.0.0.1:6379/11"
# Bounds on waits, so that a soak that goes wrong ends with a clear message instead of hanging;
# never measures of speed.
WEB_PATIENCE = 180
REQUEST_TIMEOUT = 120


# --- The processes --------------------------------------------------------------------------------


def procfile_commands(env, *, port):
    """The Procfile's commands for KINDS, as honcho would run them with `env`: ${NAME:-default}
    expanded, `python` and `celery` this interpreter, the web on `port`."""
    commands = {}
    for line in (ROOT / "Procfile").read_text().splitlines():
        kind, _, command = line.partition(":")
        if kind.strip() not in KINDS:
            continue
        command = re.sub(r"\$\{(\w+):-([^}]*)\}", lambda m: env.get(m[1]) or m[2], command)
        argv = shlex.split(command)
        if argv[0] == "exec":
            argv = argv[1:]
        if argv[0] == "python":
            argv[0] = sys.executable
        elif argv[0] == "celery":
            argv[0:1] = [sys.executable, "-m", "celery"]
        if kind == "web":
            argv[-1] = f"127.0.0.1:{port}"
        commands[kind.strip()] = argv
    missing = set(KINDS) - set(commands)
    if missing:
        raise RuntimeError(f"the Procfile has no {', '.join(sorted(missing))}")
    return commands


def free_port():
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Incarnation:
    """One start of one process: its Popen, and the peaks sampled of it and its children."""

    kind: str
    proc: subprocess.Popen
    started: float  # monotonic
    cpu: float = 0.0  # seconds, the last sample: user + system of the tree, reaped children too
    rss: int = 0  # bytes, the peak of the tree's resident memory


class Fleet:
    """The product's processes, each in a process group of its own (a kill takes the JVM, Spark's
    Python workers and the handlers' children with it), sampled every half second for memory and
    CPU. A process that exits without being killed is noted and started again."""

    def __init__(self, env, folder, *, kinds=KINDS, web_port=None):
        self.env = env
        self.folder = Path(folder)
        self.kinds = kinds
        self.port = web_port or free_port()
        self.commands = procfile_commands(env, port=self.port)
        self.current = {}
        self.gone = []  # incarnations killed or exited
        self.kills = Counter()
        self.unexpected = []  # (kind, exit code, seconds after its start)
        self.lock = threading.RLock()
        self.halt = threading.Event()
        self.sampler = threading.Thread(target=self._sample_loop, name="sampler", daemon=True)

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def start_all(self):
        for kind in self.kinds:
            self.start(kind)
        self.sampler.start()

    def start(self, kind):
        log = open(self.folder / f"{kind}.log", "ab")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(
            self.commands[kind],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()  # the child holds its own copy
        with self.lock:
            self.current[kind] = Incarnation(kind, proc, time.monotonic())
        return proc

    def kill(self, kind, *, counted=True):
        """SIGKILL the process and everything it started, as a machine failure would."""
        with self.lock:
            inc = self.current.pop(kind)
            self._sample(inc)
            try:
                tree = psutil.Process(inc.proc.pid).children(recursive=True)
            except psutil.Error:
                tree = []
            with contextlib.suppress(ProcessLookupError):
                os.killpg(inc.proc.pid, signal.SIGKILL)
            # Whatever left the group (a daemon that made a session of its own) goes too.
            for child in tree:
                with contextlib.suppress(psutil.Error):
                    child.kill()
            inc.proc.wait(timeout=60)
            self.gone.append(inc)
            if counted:
                self.kills[kind] += 1

    def restart(self, kind):
        self.kill(kind)
        self.start(kind)

    def stop_all(self):
        self.halt.set()
        if self.sampler.is_alive():
            self.sampler.join()
        for kind in list(self.current):
            self.kill(kind, counted=False)

    def web_answers(self):
        return login_page_answers(self.url)

    def wait_web(self):
        wait_for(self.web_answers, timeout=WEB_PATIENCE, what="the web to answer")

    def _sample_loop(self):
        while not self.halt.wait(0.5):
            with self.lock:
                for kind, inc in list(self.current.items()):
                    if inc.proc.poll() is not None:
                        # Died by itself: a finding. Noted, and started again.
                        self.unexpected.append(
                            (kind, inc.proc.returncode, round(time.monotonic() - inc.started))
                        )
                        self.gone.append(self.current.pop(kind))
                        self.start(kind)
                        continue
                    self._sample(inc)

    @staticmethod
    def _sample(inc):
        try:
            root = psutil.Process(inc.proc.pid)
            tree = [root, *root.children(recursive=True)]
        except psutil.Error:
            return
        rss = cpu = 0
        for proc in tree:
            with contextlib.suppress(psutil.Error):
                rss += proc.memory_info().rss
                t = proc.cpu_times()
                # A child's times move into its parent's children_* when it is reaped: counting
                # both keeps the tree's total as its processes come and go.
                cpu += t.user + t.system + t.children_user + t.children_system
        inc.rss = max(inc.rss, rss)
        inc.cpu = max(inc.cpu, cpu)

    def figures(self):
        """Peak memory (MiB) and CPU seconds of each kind, over all its incarnations."""
        with self.lock:
            incarnations = [*self.gone, *self.current.values()]
        peak, cpu = Counter(), Counter()
        for inc in incarnations:
            peak[inc.kind] = max(peak[inc.kind], inc.rss)
            cpu[inc.kind] += inc.cpu
        return {k: round(v / 2**20) for k, v in peak.items()}, dict(cpu)


def wait_for(predicate, *, timeout, what, every=0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise TimeoutError(f"timed out after {timeout} s waiting for {what}")


# --- The API, as a client sees it -----------------------------------------------------------------


class Unanswered(Exception):
    """No answer: the web is down or died with the request (its outcome is unknown)."""


class Api:
    """One user's calls. An answer of the server's errors (5xx) or a throttle's (429) is taken
    as no answer, to be tried again, and counted: the soak reports them."""

    def __init__(self, base, headers):
        import requests

        self.base = base
        self.http = requests.Session()
        self.http.trust_env = False
        self.http.headers.update(headers)
        self.errors = Counter()  # status -> answers
        self.examples = []  # (method, path, status, the answer's start)

    def call(self, method, path, **kwargs):
        import requests

        try:
            r = self.http.request(method, self.base + path, timeout=REQUEST_TIMEOUT, **kwargs)
        except requests.RequestException as exc:
            raise Unanswered(str(exc)) from exc
        if r.status_code >= 500 or r.status_code == 429:
            self.errors[r.status_code] += 1
            if len(self.examples) < EXAMPLES:
                self.examples.append((method, path, r.status_code, r.text[:300]))
            raise Unanswered(f"{r.status_code} {r.text[:200]}")
        return r


def _signed_in(user):
    """The headers of `user`'s calls signed in: their session's cookie, and a CSRF token for
    the unsafe methods (any 32 letters and digits, the same in the cookie and the header)."""
    import secrets

    from django.conf import settings
    from django.test import Client

    browser = Client()
    browser.force_login(user)
    session = browser.cookies[settings.SESSION_COOKIE_NAME].value
    csrf = secrets.token_hex(16)
    return {
        "Cookie": f"{settings.SESSION_COOKIE_NAME}={session}; {settings.CSRF_COOKIE_NAME}={csrf}",
        "X-CSRFToken": csrf,
    }


def api_users(base):
    """A sender (a producer's service account, with its API token), an operator and an approver
    (two people, signed in: four eyes; a token acts only for a service account); returns
    {name: Api}."""
    from django.contrib.auth.models import Group, User

    from console.access.actor import cli_actor
    from console.accounts.roles import APPLICATION, APPROVER, OPERATOR, roles_seed
    from console.accounts.tokens.services import token_create

    roles_seed()
    apis = {}
    for name, role in (("sender", APPLICATION), ("operator", OPERATOR), ("approver", APPROVER)):
        user = User.objects.create_user(f"soak-{name}")
        user.groups.add(Group.objects.get(name=role))
        if role == APPLICATION:
            _, clear = token_create(actor=cli_actor(), user=user, name="soak")
            apis[name] = Api(base, {"Authorization": f"Token {clear}"})
        else:
            apis[name] = Api(base, _signed_in(user))
    return apis


def api_sender(api):
    """send(records) through POST /api/v1/messages, sent again until answered: a batch whose
    request died with the web may or may not have been taken in, and sending it again is safe
    (a duplicate of a message taken in before is answered as such). Returns the ids taken in
    and the refusals."""

    def send(records):
        while True:
            try:
                r = api.call("POST", "/api/v1/messages", json={"messages": records})
            except Unanswered:
                time.sleep(1)
                continue
            answer = r.json()
            refused = {e["index"]: e["error"] for e in answer.get("errors", [])}
            if r.status_code not in (200, 201) and not refused:
                refused = dict.fromkeys(range(len(records)), f"{r.status_code}: {answer}")
            taken = [rec["id"] for i, rec in enumerate(records) if i not in refused]
            return taken, [(records[i]["id"], why) for i, why in refused.items()]

    return send


def service_sender(source="soak"):
    """send(records) through the ingest service in this process (no web)."""
    from console.ingest.services import messages_ingest

    def send(records):
        result = messages_ingest(records=records, source=source, errors_kept=None)
        refused = {e.index: e.message for e in result.errors}
        taken = [rec["id"] for i, rec in enumerate(records) if i not in refused]
        return taken, [(records[i]["id"], why) for i, why in refused.items()]

    return send


# --- The load, the approvals, the kills -----------------------------------------------------------


class Load(threading.Thread):
    """Sends the planned messages in batches, evenly over `seconds`. A batch that falls behind
    (the web was down) goes as soon as it can."""

    def __init__(self, planned, send, *, seconds, batch=BATCH):
        super().__init__(name="load", daemon=True)
        self.planned, self.send, self.seconds, self.batch = planned, send, seconds, batch
        self.accepted = set()
        self.refused = []
        self.started = self.finished = None
        self.error = None

    def run(self):
        try:
            self._run()
        except Exception as exc:  # reported by the soak, not lost in a thread
            self.error = repr(exc)
            raise
        finally:
            _close_db()
            self.finished = time.monotonic()

    def _run(self):
        self.started = time.monotonic()
        batches = [
            self.planned[i : i + self.batch] for i in range(0, len(self.planned), self.batch)
        ]
        every = self.seconds / max(1, len(batches))
        for k, batch in enumerate(batches):
            pause = self.started + k * every - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            offset = k * self.batch
            taken, refused = self.send([p.record(offset + j) for j, p in enumerate(batch)])
            self.accepted.update(taken)
            self.refused.extend(refused)


class Approver(threading.Thread):
    """Every `every` seconds, the operator asks to reprocess one quarantined failure group (in
    turn) and a selection of quarantined messages; the approver approves every request waiting
    for them. Through the API; a call the web did not answer is tried at the next round."""

    SELECTION = 20

    def __init__(self, operator, approver, *, every):
        super().__init__(name="approver", daemon=True)
        self.operator, self.approver, self.every = operator, approver, every
        self.halt = threading.Event()
        self.made = []  # request ids
        self.approved = set()
        self.refused = []  # (what, answer): requests the product refused to make or approve
        self.unanswered = 0
        self.rounds = 0
        self.errors = []  # what went wrong in a round other than a missing answer

    def run(self):
        try:
            while not self.halt.wait(self.every):
                self.round()
        finally:
            _close_db()

    def round(self):
        self.rounds += 1
        for step in (self._group, self._selection, self.approve_waiting):
            try:
                step()
            except Unanswered:
                self.unanswered += 1
            except Exception as exc:  # an answer it could not read: reported
                self.errors.append(repr(exc))

    def _ask(self, scope, comment):
        r = self.operator.call(
            "POST",
            "/api/v1/requests",
            json={"action": "reprocess", "scope": scope, "comment": comment},
        )
        if r.status_code == 201:
            self.made.append(r.json()["id"])
        else:
            self.refused.append((scope["kind"], f"{r.status_code} {r.text[:200]}"))

    def _group(self):
        groups = self.operator.call("GET", "/api/v1/groups").json()["results"]
        quarantined = [g for g in groups if g["ndlv"]]
        if quarantined:
            group = quarantined[self.rounds % len(quarantined)]
            self._ask({"kind": "group", "group": group["fingerprint"]}, "soak: reprocess a group")

    def _selection(self):
        page = self.operator.call(
            "GET", "/api/v1/messages", params={"state": "NDLV", "page_size": self.SELECTION}
        ).json()
        ids = [row["id"] for row in page["results"]]
        if ids:
            self._ask({"kind": "selection", "ids": ids}, "soak: reprocess a selection")

    def approve_waiting(self):
        """Approve every request waiting for the approver; returns how many were waiting."""
        page = self.approver.call(
            "GET", "/api/v1/requests", params={"status": "pending", "show": "waiting"}
        ).json()
        for request in page["results"]:
            r = self.approver.call(
                "POST",
                f"/api/v1/requests/{request['id']}/approve",
                json={"comment": "soak: approved"},
            )
            if r.status_code == 200:
                self.approved.add(request["id"])
            else:
                self.refused.append(("approve", f"{r.status_code} {r.text[:200]}"))
        return len(page["results"])

    def finish(self):
        """Stop the rounds; approve until nothing waits (a request whose answer died with the
        web was made all the same, and waits too). If no round found anything to reprocess (the
        read models can lag the whole load behind when kills keep stopping the refreshes), one
        last round once they show what the lake holds: the soak reprocesses something."""
        self.halt.set()
        self.join()
        if not self.made:
            with contextlib.suppress(TimeoutError):
                wait_for(lambda: not events_not_folded(), timeout=WEB_PATIENCE, what="a refresh")
            self.round()

        def nothing_waits():
            try:
                return self.approve_waiting() == 0
            except Unanswered:
                return False

        wait_for(nothing_waits, timeout=WEB_PATIENCE, what="the approvals", every=2)


def spark_busy(pid):
    """True while a delivery run of the spark worker `pid` holds messages: a kill of it then is
    one under load. (A run of a worker killed before stays "running" until its lease expires.)"""
    from console.delivery.models import DeliveryRun

    try:
        return DeliveryRun.objects.filter(
            status=DeliveryRun.RUNNING, claimed__gt=0, worker__endswith=f":{pid}"
        ).exists()
    finally:
        _close_db()


class Killer(threading.Thread):
    """SIGKILLs the processes of `order`, in turn, at `times` (seconds from its start), each
    started again at once. The spark worker is killed while a delivery run holds messages
    (waiting up to `busy_wait` seconds for one)."""

    def __init__(self, fleet, times, *, order=KINDS, busy_wait=30):
        super().__init__(name="killer", daemon=True)
        self.fleet, self.times, self.order, self.busy_wait = fleet, times, order, busy_wait
        self.log = []  # (seconds from start, kind, under load)
        self.last = None  # monotonic time the last killed process was started again
        self.error = None

    def run(self):
        try:
            started = time.monotonic()
            for k, at in enumerate(self.times):
                pause = started + at - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
                kind = self.order[k % len(self.order)]
                busy = None
                if kind == "spark":
                    pid = self.fleet.current[kind].proc.pid
                    with contextlib.suppress(TimeoutError):
                        busy = wait_for(
                            lambda pid=pid: spark_busy(pid), timeout=self.busy_wait, what="a run"
                        )
                self.fleet.restart(kind)
                self.last = time.monotonic()
                self.log.append((round(self.last - started, 1), kind, bool(busy)))
                if kind == "web":
                    self.fleet.wait_web()
        except Exception as exc:
            self.error = repr(exc)
            raise


def kill_times(seconds, kills):
    """`kills` moments spread evenly over `seconds`, none at its very start or end."""
    return [(k + 0.5) * seconds / kills for k in range(kills)]


def _close_db():
    from django.db import connection

    connection.close()


# --- Settling -------------------------------------------------------------------------------------


def left_to_settle():
    """What keeps the product from being settled: messages to be delivered, waiting for a retry
    or in flight, requests not finished, events the read models have not folded. {} once
    settled."""
    from console.decisions.models import ActionRequest
    from workers.engine import states as S

    try:
        left = Counter(s for s in current_states().values() if s in (S.TBDL, S.WAIT, S.DLNG))
        requests = ActionRequest.objects.exclude(status__in=ActionRequest.FINAL).count()
        if requests:
            left["requests"] = requests
        behind = events_not_folded()
        if behind:
            left["events commits not folded"] = behind
        return dict(left)
    finally:
        _close_db()


def events_not_folded():
    """How many events commits landed after the newest refresh's last one: how far behind the
    lake the console's read models are."""
    from django.db.models import Max

    from console.lake.models import LakeCommit
    from console.readmodels.models import RefreshRun

    try:
        newest = LakeCommit.objects.filter(dataset="events").aggregate(n=Max("id"))["n"] or 0
        committed = RefreshRun.objects.filter(status=RefreshRun.COMMITTED)
        folded = committed.aggregate(n=Max("upto_commit"))["n"] or 0
        return max(0, newest - folded)
    finally:
        _close_db()


def longest_without_refresh(since, until):
    """(refreshes committed between the two moments, the longest time in seconds between two
    of them, or from `since` or until `until`): how stale the console was at worst."""
    from console.readmodels.models import RefreshRun

    times = list(
        RefreshRun.objects.filter(
            status=RefreshRun.COMMITTED, finished_at__gte=since, finished_at__lte=until
        )
        .order_by("finished_at")
        .values_list("finished_at", flat=True)
    )
    points = [since, *times, until]
    longest = max((b - a).total_seconds() for a, b in itertools.pairwise(points))
    return len(times), round(longest)


def settle(*, timeout, every=5.0, report=None):
    """Wait until nothing is left to settle; returns (seconds it took, what was left at the end:
    {} when settled)."""
    started = time.monotonic()
    left = None
    while time.monotonic() - started < timeout:
        left = left_to_settle()
        if not left:
            return time.monotonic() - started, {}
        if report:
            report(f"settling: {left}")
        time.sleep(every)
    return time.monotonic() - started, left


# --- The soak -------------------------------------------------------------------------------------


@dataclass
class Size:
    messages: int = 10_000
    minutes: float = 8.0
    kills: int = 16
    approve_every: float = 60.0
    settle_timeout: float = 1800.0

    @classmethod
    def from_env(cls, **overrides):
        size = cls(
            messages=int(os.environ.get("SOAK_MESSAGES", cls.messages)),
            minutes=float(os.environ.get("SOAK_MINUTES", cls.minutes)),
            kills=int(os.environ.get("SOAK_KILLS", cls.kills)),
            approve_every=float(os.environ.get("SOAK_APPROVE_EVERY", cls.approve_every)),
            settle_timeout=float(os.environ.get("SOAK_SETTLE_TIMEOUT", cls.settle_timeout)),
        )
        for name, value in overrides.items():
            if value is not None:
                setattr(size, name, value)
        return size


def say(text):
    print(f"[soak {time.strftime('%H:%M:%S')}] {text}", flush=True)


def soak(size, folder, env):
    """The soak itself, on the database and broker of `env` (Django set up on them already, the
    migrations run). Returns (checks, figures, {what else the log should say})."""
    from django.conf import settings
    from django.utils import timezone

    calls_dir = folder / "calls"
    calls_dir.mkdir()
    queues_define(calls_dir)
    planned = plan(size.messages)
    seconds = size.minutes * 60

    fleet = Fleet(env, folder)
    apis = api_users(fleet.url)
    _close_db()
    say(f"starting {', '.join(KINDS)} (logs in {folder})")
    fleet.start_all()
    try:
        fleet.wait_web()
        load = Load(planned, api_sender(apis["sender"]), seconds=seconds)
        approver = Approver(apis["operator"], apis["approver"], every=size.approve_every)
        killer = Killer(fleet, kill_times(seconds, size.kills))
        say(
            f"{size.messages:,} messages over {size.minutes:g} min, {size.kills} kills, "
            f"approvals every {size.approve_every:g} s"
        )
        started = time.monotonic()
        load_began = timezone.now()
        meter = CpuMeter(servers=(*POSTGRES_SERVER, *REDIS_SERVER)).start()
        for thread in (load, approver, killer):
            thread.start()
        while load.is_alive() or killer.is_alive():
            time.sleep(30)
            say(
                f"{time.monotonic() - started:.0f} s: {len(load.accepted):,} accepted, "
                f"kills {dict(fleet.kills)}, requests {len(approver.made)}, "
                f"left {left_to_settle()}"
            )
        if load.error or killer.error:
            raise RuntimeError(f"the soak's threads failed: {load.error or killer.error}")
        load_ended = timezone.now()
        approver.finish()
        last_fault = max(killer.last or 0, load.finished)
        say("load done; settling")
        _, left = settle(timeout=size.settle_timeout, report=say)
        meter.stop()
        settled_in = None if left else time.monotonic() - last_fault
        say("checking")
        facts = Facts.gather(planned, load.accepted, calls_dir)
        checks = [
            Check(
                "settled",
                not left,
                f"{settled_in:.0f} s after the load and the last kill"
                if not left
                else f"not after {size.settle_timeout:.0f} s: {left}",
            ),
            *(
                _guarded(check, *args)
                for check, *args in (
                    (check_nothing_lost, facts),
                    (check_delivered_after_success, facts),
                    (check_no_success_lost, facts),
                    (check_crashers_isolated, facts),
                    (check_policies, facts),
                    (check_duplicates, facts),
                    (check_counts, facts, env),
                    (check_no_stuck_work, settings.LEASE_SECONDS),
                    (check_requests_done, approver.made),
                    (check_audit,),
                )
            ),
        ]
        if approver.errors:
            checks.append(
                Check("the approvals read every answer", False, "; ".join(approver.errors[:3]))
            )
        if fleet.unexpected:
            checks.append(
                Check(
                    "no process died unkilled",
                    False,
                    f"{len(fleet.unexpected)}: {fleet.unexpected[:5]} (kind, exit code, s)",
                )
            )
    finally:
        fleet.stop_all()
        _close_db()

    peak, cpu = fleet.figures()
    refreshes, stale = longest_without_refresh(load_began, load_ended)
    _close_db()
    duplicates = [m for m, c in facts.calls.items() if len(c) > 1]
    api_errors = Counter()
    for api in apis.values():
        api_errors.update(api.errors)
    figures = {
        "messages accepted": len(load.accepted),
        "messages refused": len(load.refused),
        "seconds of load": round(load.finished - load.started),
        "kills": sum(fleet.kills.values()),
        "kills by process": dict(fleet.kills),
        "spark kills while a run held messages": sum(
            1 for _, kind, busy in killer.log if kind == "spark" and busy
        ),
        "requests made / approved": f"{len(approver.made)} / {len(approver.approved)}",
        "requests refused": len(approver.refused),
        "duplicates (2+ successful calls)": len(duplicates),
        "refreshes committed during the load": refreshes,
        "longest time without a refresh during the load, s": stale,
        "API answers 5xx or 429 (tried again)": dict(api_errors),
        "time to settle after the load and the last kill, s": None
        if settled_in is None
        else round(settled_in),
        "peak RSS MiB (with children)": peak,
        "CPU µs per message (every process, PostgreSQL and Redis)": round(
            meter.us_per_message(max(1, len(load.accepted)))
        ),
        "CPU s by process": {k: round(v) for k, v in cpu.items()},
        "cores": os.cpu_count(),
    }
    extra = {
        "kills": killer.log,
        "refusals": approver.refused[:EXAMPLES],
        "API errors": [e for a in apis.values() for e in a.examples][:EXAMPLES],
    }
    return checks, figures, extra


def _guarded(check, *args):
    """The check's verdict; a check that could not be made (its command failed, say) is a FAIL
    that says why, and the others are still made."""
    try:
        return check(*args)
    except Exception as exc:
        return Check(check.__name__, False, f"could not check: {exc!r}"[:500])


def rows_of(checks, figures):
    rows = [c.row() for c in checks]
    rows += [{"soak": name, "result": "", "detail": _figure(v)} for name, v in figures.items()]
    return rows


def _figure(value):
    if isinstance(value, dict):
        return (
            ", ".join(f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}" for k, v in value.items())
            or "none"
        )
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


# --- Where it runs: a database and a broker of its own --------------------------------------------


def database_fresh(url):
    """Drop the soak's PostgreSQL database and make it again."""
    import psycopg

    name = urlsplit(url).path.lstrip("/")
    admin = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def broker_fresh(url):
    import redis

    redis.Redis.from_url(url).flushdb()


def _answers(url, default_port):
    parts = urlsplit(url)
    return port_answers(parts.port or default_port, host=parts.hostname)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m bench.soak", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--messages", type=int)
    parser.add_argument("--minutes", type=float)
    parser.add_argument("--kills", type=int)
    parser.add_argument("--approve-every", type=float, help="seconds between approval rounds")
    parser.add_argument("--settle-timeout", type=float, help="seconds")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    # `python -m bench soak` prints the table itself, from the rows this hands it.
    parser.add_argument("--rows-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    size = Size.from_env(
        messages=args.messages,
        minutes=args.minutes,
        kills=args.kills,
        approve_every=args.approve_every,
        settle_timeout=args.settle_timeout,
    )
    database = os.environ.get("SOAK_DATABASE_URL", DATABASE)
    broker = os.environ.get("SOAK_BROKER_URL", BROKER)
    for url, port in ((database, 5432), (broker, 6379)):
        if not _answers(url, port):
            raise SystemExit(f"the soak runs on PostgreSQL and Redis: nothing answers at {url}")
    database_fresh(database)
    broker_fresh(broker)
    folder = Path(tempfile.mkdtemp(prefix="antidote-soak-"))
    env = {
        **os.environ,
        **SOAK_SETTINGS,
        "DATABASE_URL": database,
        "CELERY_BROKER_URL": broker,
        "VAR_DIR": str(folder / "var"),
        "LAKE_URI": str(folder / "lake"),
        "DJANGO_SETTINGS_MODULE": "console.settings",
        "PYTHONPATH": str(ROOT),
    }
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)

    from bench.__main__ import table
    from bench.support import rows_print

    checks, figures, extra = soak(size, folder, env)
    rows = rows_of(checks, figures)
    if not args.rows_only:
        print(table(rows), flush=True)
    failed = [c for c in checks if not c.ok]
    for c in failed:
        print(f"FAIL {c.name}: {c.examples}", flush=True)
    for name, value in extra.items():
        if value:
            say(f"{name}: {value}")
    if failed or os.environ.get("SOAK_KEEP") == "1" or args.keep:
        say(f"kept {folder}")
    else:
        shutil.rmtree(folder, ignore_errors=True)
    rows_print(rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
