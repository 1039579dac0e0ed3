"""The soak's one 404 (issue 29): "a message that exists answered 404 once, and 200 ten seconds
later, near a restart of the web".

A reader asks a real web process (runserver, autoreloader included, as the Procfile starts it)
for messages that exist, over and over: the API's detail and body, the detail page and the search
box's redirect. Meanwhile this process delivers, refreshes (incrementally and in full), compacts
the state and the history, purges other messages (old ones that share their lake directories with
messages read) and SIGKILLs the web and starts it again, some of those kills in the middle of a
full refresh or a purge. A sender posts new messages through the web as the soak did; each joins
the messages read once the web has answered 201 for it. No answer may be a 404.

A read the web cannot answer (it is down, or was killed mid-request) is a connection error, and
is only counted. A POST that dies with the web is a question for the client: it may or may not
have committed. The sender asks for such a message once the web is back (a 404 there is the right
answer for a message whose ingest never committed), then sends it again, as a careful client
would. Those are counted apart: a harness that reads an id whose POST died before it was sent
again sees exactly the soak's 404, then 200 once it has been.
"""

import contextlib
import random
import threading
from collections import Counter
from urllib.parse import quote, urlsplit

import pytest
import requests
from django.conf import settings as django_settings
from django.test import Client
from django.urls import reverse
from urllib3.exceptions import NewConnectionError

from console.accounts.tokens.services import token_create
from console.ingest.models import MessageKey
from console.ingest.services import messages_ingest
from console.lake.execution import lake_history_compact_if_due, lake_state_compact_if_due
from console.lake.services import lake_history_dirs_delete
from console.readmodels.execution import read_models_refresh
from console.readmodels.models import MessageIndex
from console.retention.execution import purge_dirs_delete, purge_run
from console.retention.models import PurgeRun
from tests.delivery.conftest import Engine
from tests.processes.conftest import free_port, wait_for

pytestmark = [pytest.mark.spark, pytest.mark.slow]

CYCLES = 2
OLD_PER_CYCLE = 4
# Short, so that the directories swapped out by purges and history merges are deleted while the
# reader reads; long enough for a read that listed them just before to finish with them.
GRACE_SECONDS = 10
# A bound on a hang (a request, the web coming up), not a measure of speed.
PATIENCE = 180
# The reader and the sender leave the machine's two cores to the web and Spark between calls.
READ_PAUSE = 0.05
SEND_PAUSE = 0.5

ENDPOINTS = ("api", "body", "page", "search")
SHARED = "sharing a directory a purge rewrites"
SENT = "sent through the API"


class Phase:
    """What the main thread is doing, for the reads to be counted by."""

    now = "setup"


class Web:
    """The web process, SIGKILLed with everything it started (the autoreloader's child) and
    started again on the same port."""

    def __init__(self, processes, log, env):
        self.processes, self.log, self.env = processes, log, env
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.restarts = 0
        self.proc = None

    def start(self):
        self.proc = self.processes.start(
            "manage.py", "runserver", f"127.0.0.1:{self.port}", log=self.log, env=self.env
        )
        wait_for(self.answers, timeout=PATIENCE, what="the web to answer")

    def answers(self):
        try:
            return requests.get(f"{self.url}/login/", timeout=5).status_code == 200
        except requests.RequestException:
            return False

    def restart(self):
        self.processes.kill(self.proc)
        self.restarts += 1
        self.start()

    @contextlib.contextmanager
    def restarted_during(self, after=1.0, once=lambda: True):
        """Kill and restart the web `after` seconds into the block, once `once()` holds (or after
        the block, if it is quicker): the web dies while the block's writer is at work."""

        def restart():
            wait_for(once, timeout=PATIENCE, what="a read answered before the web is killed")
            self.restart()

        timer = threading.Timer(after, restart)
        timer.start()
        try:
            yield
        finally:
            timer.join()


def _cut(response):
    """Was the answer cut by a kill? runserver (wsgiref) sends the status line, Date and Server
    each by itself before the other headers, and http.client takes the end of the connection
    for the end of the headers: a web killed in between leaves a status line with nothing after
    it. Every whole answer of these endpoints has a Content-Length (none of them streams)."""
    return "Content-Length" not in response.headers


def _never_sent(exc):
    """True when a request failed to connect at all (the web was down), so it never reached it."""
    reason = getattr(exc.args[0] if exc.args else None, "reason", None)
    return isinstance(reason, NewConnectionError)


class Reader(threading.Thread):
    """Reads messages that exist, each by every endpoint in turn, until halted."""

    def __init__(self, web, cookie):
        super().__init__(name="reader", daemon=True)
        # A person reads, signed in: their session answers the API and the pages alike (R19).
        self.web, self.cookie = web, cookie
        self.fixed = []  # [(message_id, kind, body)] set up before the reads start
        self.sent = []  # the same, of those the web answered 201 for
        self.lock = threading.RLock()  # the counts too: the main thread reads them
        self.halt = threading.Event()
        self.random = random.Random(29)
        self.answered = Counter()  # (kind, endpoint) -> right answers
        self.during = Counter()  # (kind, the work under way) -> right answers
        self.unanswered = 0
        self.cut = 0  # answers a kill cut short: the status line, not the answer
        self.not_found = []  # (endpoint, message_id, kind, phase)
        self.wrong = []  # (endpoint, message_id, what came back, phase)

    def add(self, message_id, kind, body, *, sent=False):
        with self.lock:
            (self.sent if sent else self.fixed).append((message_id, kind, body))

    def pairs(self):
        """Every (kind, endpoint) the reader must have answered right: of the kinds it has
        messages of so far."""
        with self.lock:
            kinds = {kind for _, kind, _ in self.fixed + self.sent}
        return {(kind, endpoint) for kind in kinds for endpoint in ENDPOINTS}

    def covered(self):
        """Has every kind been read right by every endpoint (the sent ones too, once any)?"""
        with self.lock:
            return bool(self.sent) and self.pairs() <= set(self.answered)

    def next_read(self, turn):
        """(message, endpoint) to ask next. First a (kind, endpoint) not yet answered right, then
        what the work under way rewrites, so that the coverage asserted is driven, whatever
        number of reads a busy machine gets done; then the reads in turn."""
        with self.lock:
            missing = sorted(self.pairs() - set(self.answered))
        if missing:
            kind, endpoint = missing[turn % len(missing)]
            return self.of_kind(kind), endpoint
        if Phase.now.endswith("purge") and not self.during[(SHARED, "purge")]:
            return self.of_kind(SHARED), ENDPOINTS[turn % len(ENDPOINTS)]
        return self.message(turn // len(ENDPOINTS)), ENDPOINTS[turn % len(ENDPOINTS)]

    def answered_during(self, work, kind=None):
        """Has a read begun during `work` (of a message of `kind`, if given) been answered right?"""
        with self.lock:
            return any(w == work and kind in (None, k) for k, w in self.during)

    def of_kind(self, kind):
        with self.lock:
            return self.random.choice([m for m in self.fixed + self.sent if m[1] == kind])

    def message(self, slot):
        """Two messages in three from those set up before, in turn, so that each is read every
        few seconds however many the sender adds; the third one it sent, at random."""
        with self.lock:
            if slot % 3 == 2 and self.sent:
                return self.random.choice(self.sent)
            return self.fixed[(slot - slot // 3) % len(self.fixed)]

    def run(self):
        http = requests.Session()
        http.trust_env = False
        http.cookies.set(django_settings.SESSION_COOKIE_NAME, self.cookie)
        turn = 0
        while not self.halt.is_set():
            (message_id, kind, body), endpoint = self.next_read(turn)
            turn += 1
            phase = Phase.now
            try:
                status, right, missing = self.read(http, endpoint, message_id, body)
            except requests.RequestException:
                # The web is down or was killed mid-request: no answer, not a wrong one.
                self.unanswered += 1
                self.halt.wait(0.2)
                continue
            except Exception as exc:  # an answer the reader could not read is a wrong one
                self.wrong.append((endpoint, message_id, repr(exc), phase))
                continue
            if status is None:
                self.cut += 1
            elif right:
                with self.lock:
                    self.answered[(kind, endpoint)] += 1
                    self.during[(kind, phase.split(":")[-1].strip())] += 1
            elif missing:
                self.not_found.append((endpoint, message_id, kind, phase))
            else:
                self.wrong.append((endpoint, message_id, status, phase))
            self.halt.wait(READ_PAUSE)

    def read(self, http, endpoint, message_id, body):
        """(status, the right answer?, the answer says there is no such message?); status None
        for an answer a kill cut short."""
        base, quoted = self.web.url, quote(message_id, safe="")
        page = reverse("message-detail", kwargs={"message_id": message_id})
        if endpoint == "api":
            r = http.get(f"{base}/api/v1/messages/{quoted}", timeout=PATIENCE)
        elif endpoint == "body":
            r = http.get(f"{base}/api/v1/messages/{quoted}/body", timeout=PATIENCE)
        elif endpoint == "page":
            r = http.get(f"{base}{page}", timeout=PATIENCE, allow_redirects=False)
        else:
            r = http.get(
                f"{base}/search/", params={"q": message_id}, timeout=PATIENCE, allow_redirects=False
            )
        if _cut(r):
            return None, False, False
        if endpoint == "api":
            right = r.status_code == 200 and r.json()["id"] == message_id
        elif endpoint == "body":
            right = r.status_code == 200 and r.content == body
        elif endpoint == "page":
            right = r.status_code == 200
        else:
            right = r.status_code == 302 and urlsplit(r.headers["Location"]).path == page
            # The search's own "no such message": its results page instead of the message.
            if r.status_code == 200:
                return r.status_code, False, True
        return r.status_code, right, r.status_code == 404


class Sender(threading.Thread):
    """Posts new messages through the web, one at a time, until halted."""

    def __init__(self, web, token, reader):
        super().__init__(name="sender", daemon=True)
        self.web, self.token, self.reader = web, token, reader
        self.halt = threading.Event()
        self.accepted = 0
        self.refused = 0  # POSTs that found the web down: never sent
        self.died = []  # (message_id, whether it existed once the web was back)
        self.wrong = []

    def run(self):
        http = requests.Session()
        http.trust_env = False
        http.headers["Authorization"] = f"Token {self.token}"
        n = 0
        while not self.halt.is_set():
            # Some fail and are quarantined: they move into the index at the next refresh and
            # stay there; the others are delivered and leave it.
            body = "permanent" if n % 3 == 0 else "ok"
            self.send(http, f"api-{n:05d}", body)
            n += 1
            self.halt.wait(SEND_PAUSE)

    def send(self, http, message_id, body):
        """Until the web answers: a message whose POST died is sent again even after a halt,
        so that every message is either answered or known."""
        record = {"id": message_id, "queue": "orders", "body": body}
        while True:
            try:
                r = http.post(f"{self.web.url}/api/v1/messages", json=record, timeout=PATIENCE)
            except requests.RequestException as exc:
                if _never_sent(exc):
                    self.refused += 1
                    self.halt.wait(0.2)
                    continue
                r = None
            if r is None or _cut(r):
                self.died.append((message_id, self.exists_once_back(http, message_id)))
                continue  # and send it again: a duplicate of a committed one answers 201
            if r.status_code == 201:
                self.accepted += 1
                self.reader.add(message_id, SENT, body.encode(), sent=True)
            else:
                self.wrong.append((message_id, r.status_code, r.text[:200]))
            return

    def exists_once_back(self, http, message_id):
        """Did the POST that died commit? Asked once the web answers again."""
        while True:
            try:
                r = http.get(
                    f"{self.web.url}/api/v1/messages/{quote(message_id, safe='')}",
                    timeout=PATIENCE,
                )
            except requests.RequestException:
                r = None
            if r is not None and not _cut(r):
                return r.status_code == 200
            self.halt.wait(0.2)


def _read_during(reader, work, kind=None):
    """Wait for a read begun during `work` to be answered right, rather than hope that one was:
    on a busy machine a short work may be over before the reader's next answer."""
    wait_for(
        lambda: reader.answered_during(work, kind),
        timeout=PATIENCE,
        what=f"a read answered during the {work}",
    )


def _setup(engine):
    """The messages read, by kind, and the old ones each cycle's purge takes: ingested in one
    batch with two of the messages read, so that the purge rewrites their directory."""
    engine.queue("orders")
    for cycle in range(CYCLES):
        engine.queue(f"old-{cycle}", retention_days=1)
    read = {}
    for message_id in engine.ingest("orders", ["permanent"] * 2, prefix="quarantined"):
        read[message_id] = ("quarantined (indexed)", b"permanent")
    for message_id in engine.ingest("orders", ["ok"] * 2, prefix="delivered"):
        read[message_id] = ("delivered at first try (MessageKey only)", b"ok")
    old = {}
    for cycle in range(CYCLES):
        batch = {f"shared-{cycle}-ok": "ok", f"shared-{cycle}-bad": "permanent"}
        old[cycle] = [f"old-{cycle}-{n}" for n in range(OLD_PER_CYCLE)]
        records = [{"id": m, "queue": "orders", "body": b} for m, b in batch.items()]
        records += [{"id": m, "queue": f"old-{cycle}", "body": "ok"} for m in old[cycle]]
        assert messages_ingest(records=records, source="test").accepted == len(records)
        for message_id, body in batch.items():
            read[message_id] = (SHARED, body.encode())
    # The engine's clock is months behind: the old queues' messages are past their retention
    # (a day) as soon as they are delivered, and the purges run on the real clock.
    engine.deliver_until_idle()
    read_models_refresh(full=True, spark=engine.spark)
    indexed = set(MessageIndex.objects.values_list("message_id", flat=True))
    assert {m for m, (kind, _) in read.items() if "indexed" in kind} <= indexed
    assert not {m for m, (kind, _) in read.items() if "MessageKey" in kind} & indexed
    return read, old


def test_a_message_that_exists_never_answers_404_while_the_lake_and_the_web_are_churned(
    processes, personas, spark, settings, tmp_path
):
    # This process refreshes by itself (no worker here); the deletions after a grace period
    # happen while the reader reads.
    settings.REFRESH_ON_COMMIT = False
    settings.PURGE_GRACE_SECONDS = GRACE_SECONDS
    engine = Engine(spark)
    read, old = _setup(engine)

    operator = personas["operator"]  # reads metadata and bodies
    # A producer's service account sends messages in, with its token.
    _, token = token_create(actor="command:tests", user=personas["application"], name="sender")
    browser = Client()
    browser.force_login(operator)
    cookie = browser.cookies[settings.SESSION_COOKIE_NAME].value
    web = Web(
        processes,
        tmp_path / "web.log",
        env={
            "REFRESH_ON_COMMIT": "false",
            # The ingests' requests for delivery stay in the web: this process delivers.
            "CELERY_BROKER_URL": "memory://",
            "API_THROTTLE_RATE": "1000000/min",
            "PURGE_GRACE_SECONDS": str(GRACE_SECONDS),
        },
    )
    web.start()
    reader = Reader(web, cookie)
    for message_id, (kind, body) in read.items():
        reader.add(message_id, kind, body)
    sender = Sender(web, token, reader)
    reader.start()
    sender.start()

    done = Counter()
    for cycle in range(CYCLES):
        Phase.now = f"cycle {cycle}: delivery"
        engine.deliver()
        Phase.now = f"cycle {cycle}: incremental refresh"
        done["incremental refreshes"] += read_models_refresh(spark=spark) is not None
        _read_during(reader, "incremental refresh")
        Phase.now = f"cycle {cycle}: full refresh"
        with web.restarted_during(once=lambda: reader.answered_during("full refresh")):
            done["full refreshes"] += read_models_refresh(full=True, spark=spark) is not None
        Phase.now = f"cycle {cycle}: restart"
        web.restart()
        Phase.now = f"cycle {cycle}: state compaction"
        done["state compactions"] += lake_state_compact_if_due(force=True, spark=spark) is not None
        _read_during(reader, "state compaction")
        Phase.now = f"cycle {cycle}: history compaction"
        done["retired directories deleted"] += lake_history_dirs_delete()
        done["history compactions"] += (
            lake_history_compact_if_due(force=True, spark=spark) is not None
        )
        _read_during(reader, "history compaction")
        Phase.now = f"cycle {cycle}: purge"
        done["retired directories deleted"] += purge_dirs_delete()
        with web.restarted_during(once=lambda: reader.answered_during("purge", SHARED)):
            purge = purge_run(queue=f"old-{cycle}", spark=spark)
        assert (purge.status, purge.total) == (PurgeRun.DONE, OLD_PER_CYCLE), purge.error
        # It rewrote the directory the two messages read share with the purged ones.
        assert purge.lake_changes["messages"]["rewritten"] == 1
        done["purges"] += 1
    Phase.now = "done"
    # Every kind of message read right by every endpoint: driven by the reader, waited for
    # here rather than hoped of the churn's length.
    wait_for(reader.covered, timeout=PATIENCE, what="every kind read by every endpoint")
    # The messages sent last are read a few times too.
    sender.halt.set()
    sender.join(PATIENCE)
    reader.halt.set()
    reader.join(PATIENCE)
    assert not (reader.is_alive() or sender.is_alive())

    assert not reader.not_found, f"404 for messages that exist: {reader.not_found[:20]}"
    assert not reader.wrong, f"wrong answers: {reader.wrong[:20]}"
    assert not sender.wrong, f"POSTs refused: {sender.wrong[:20]}"
    # It measured what it says: every kind of message read right by every endpoint, reads
    # answered during every kind of work that writes what they read (a delivery is short, and
    # a restart's reads go unanswered: they are not required), and the web restarted three
    # times a cycle.
    kinds = {kind for kind, _ in read.values()} | {SENT}
    assert {(k, e) for k in kinds for e in ENDPOINTS} <= set(reader.answered)
    assert {w for _, w in reader.during} >= {
        "incremental refresh",
        "full refresh",
        "state compaction",
        "history compaction",
        "purge",
    }
    assert reader.during[(SHARED, "purge")] > 0
    assert web.restarts == 3 * CYCLES
    assert done["full refreshes"] == done["state compactions"] == CYCLES
    assert done["history compactions"] == CYCLES
    assert done["retired directories deleted"] > 0
    # And a 404 is what the reader would have seen of a message the product does not know: the
    # purged ones are forgotten (R15).
    purged = [m for ids in old.values() for m in ids]
    assert not MessageKey.objects.filter(message_id__in=purged).exists()
    gone = requests.get(
        f"{web.url}/api/v1/messages/{purged[0]}",
        cookies={settings.SESSION_COOKIE_NAME: cookie},
        timeout=PATIENCE,
    )
    assert gone.status_code == 404
    # Every POST that died with the web was answered 201 when sent again.
    sent = {m for m, _, _ in reader.sent}
    assert {m for m, _ in sender.died} <= sent

    committed = sum(1 for _, existed in sender.died if existed)
    by_endpoint = Counter()
    for (_, endpoint), n in reader.answered.items():
        by_endpoint[endpoint] += n
    during = Counter()
    for (_, work), n in reader.during.items():
        during[work] += n
    print(
        f"\nreads answered: {sum(by_endpoint.values())} {dict(by_endpoint)}; "
        f"unanswered (web down): {reader.unanswered}; cut by a kill: {reader.cut}; "
        f"404: {len(reader.not_found)}; "
        f"messages read: {len(reader.fixed) + len(reader.sent)}\n"
        f"answered during: {dict(during)}\n"
        f"web restarts: {web.restarts}; {dict(done)}\n"
        f"POSTs: {sender.accepted} answered 201, {sender.refused} found the web down, "
        f"{len(sender.died)} died with the web: {committed} had committed, "
        f"{len(sender.died) - committed} had not (404 until sent again)"
    )
