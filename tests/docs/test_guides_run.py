"""The guides' commands, run as the role each is written for (issue 45, points 1 and 8).

A guide marks a code block it expects a reader to run with a comment on the line before it
(docs/layout.md, "A guide's commands"):

- `<!-- run as application -->` before a ```sh block: the block is run with bash, `ANTIDOTE`
  set to a live console's address and `TOKEN` to the application's token (a person's block
  calls with their session, which curl reads from its configuration); every curl fails on an
  answer of 400 or more;
- `<!-- run as operator: POST /api/v1/requests -->` before a ```json block: the block is sent as
  the body of that call, signed in as that role; `{id}` in the path is the previous answer's id.

The API guide (the introduction of the OpenAPI document, shown at /api/docs/) is written for an
application: its sh blocks run with the service account's token, as they stand. The broker
guides' redrive calls run against the real NATS and Redis: the guide's own queue file (with a
stream of the test's own) drains dead letters the test makes, the guide's calls ask for and
approve the redrive, and the messages arrive back on the broker.
"""

import json
import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import nats.errors
import pytest
import requests
import yaml
from django.contrib.auth.models import User
from django.core.cache import cache
from nats.js import api

from console.accounts.roles import APPLICATION, ROLES
from console.accounts.tokens.services import token_create
from console.decisions.models import ActionRequest
from console.ingest.models import MessageKey
from console.queues.models import BrokerSource
from console.queues.services import queues_load
from console.readmodels.models import MessageIndex
from tests.brokers.nats.conftest import SHARED_URL as NATS_URL
from tests.brokers.nats.conftest import Client
from tests.brokers.redis_streams.conftest import SHARED_URL as REDIS_URL
from tests.brokers.redis_streams.conftest import Streams
from tests.brokers.sources import consuming, drained_until, source_now
from tests.conftest import require_service, session_headers
from tests.decisions.desk import make_desk
from tests.demo.conftest import demo_seeded
from tests.processes.conftest import wait_for

DOCS = Path(__file__).resolve().parents[2] / "docs"
MARK = re.compile(r"^<!-- run as (\w+)(?:: (GET|POST|PUT|PATCH|DELETE) (\S+))? -->$")
FENCE = re.compile(r"^```(\w+)$")
# Dead letters each broker test makes: enough to see each come back once.
COUNT = 2
# Every curl of a block fails on an HTTP error, as a reader would notice one.
CURL_FAILS = 'curl() { command curl -sS --fail-with-body "$@"; }\n'
# The guides whose steps need a broker: run by the tests below with one, not against the demo.
BROKER_GUIDES = ("guides/nats.md", "guides/redis-streams.md")


@dataclass(frozen=True)
class Step:
    guide: str
    role: str
    language: str
    text: str
    method: str = ""
    path: str = ""


def guide_steps(guide):
    """The marked blocks of `guide` (a path under docs/), in order."""
    lines = (DOCS / guide).read_text().splitlines()
    steps = []
    for n, line in enumerate(lines):
        mark = MARK.match(line.strip())
        if not mark:
            continue
        fence = FENCE.match(lines[n + 1]) if n + 1 < len(lines) else None
        assert fence, f"{guide}:{n + 1}: a run mark stands right before a code block"
        end = lines.index("```", n + 2)
        role, method, path = mark.groups()
        text = "\n".join(lines[n + 2 : end]) + "\n"
        steps.append(Step(guide, role, fence.group(1), text, method or "", path or ""))
    return steps


def marked_guides():
    return sorted(
        str(path.relative_to(DOCS))
        for path in DOCS.rglob("*.md")
        if any(MARK.match(line.strip()) for line in path.read_text().splitlines())
    )


def test_every_run_mark_names_a_role_and_a_block_that_can_run():
    guides = marked_guides()

    assert set(BROKER_GUIDES) <= set(guides)
    assert set(guides) - set(BROKER_GUIDES) == set(DONE)
    for guide in guides:
        for step in guide_steps(guide):
            assert step.role in ROLES, step
            if step.language == "sh":
                assert not step.method, step
            else:
                assert step.language == "json" and step.method and step.path, step
                json.loads(step.text)


# --- Running a step ------------------------------------------------------------------------------


class Callers:
    """How each role calls a live console: the application with a token of its service
    account, a person with their session (R19: a person has no token)."""

    def __init__(self, url, users, tmp_path):
        self.url = url
        self.users = users
        self.tmp_path = tmp_path
        self.headers = {}

    def of(self, role):
        if role not in self.headers:
            user = self.users[role]
            if role == APPLICATION:
                _, key = token_create(actor="command:guides", user=user, name="guides")
                self.headers[role] = {"Authorization": f"Token {key}"}
            else:
                self.headers[role] = session_headers(user)
        return self.headers[role]

    def token(self, role):
        return self.of(role)["Authorization"].removeprefix("Token ")


def run_step(step, callers, previous=None):
    """Run one marked block as its role; the answer's JSON (a json step's), else None."""
    if step.language == "sh":
        return _run_shell(step, callers)
    path = step.path.format(id=(previous or {}).get("id", ""))
    answer = requests.request(
        step.method,
        callers.url + path,
        data=step.text.encode(),
        headers={**callers.of(step.role), "Content-Type": "application/json"},
        timeout=120,
    )
    assert answer.status_code < 400, (step, answer.status_code, answer.text[:500])
    return answer.json()


def _run_shell(step, callers):
    env = {**os.environ, "ANTIDOTE": callers.url}
    if step.role == APPLICATION:
        env["TOKEN"] = callers.token(step.role)
    else:
        # A person's session, in curl's own configuration: the block stays as a reader runs it.
        home = callers.tmp_path / f"curl-{step.role}"
        home.mkdir(exist_ok=True)
        rc = "".join(f'header = "{k}: {v}"\n' for k, v in callers.of(step.role).items())
        (home / ".curlrc").write_text(rc)
        env["CURL_HOME"] = str(home)
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", CURL_FAILS + step.text],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, (step.guide, step.text, done.stdout, done.stderr)
    return None


# --- The guides against the demo -----------------------------------------------------------------


@pytest.fixture
def demo(transactional_db, lake_root, settings, tmp_path, monkeypatch):
    """`manage.py seed_demo`'s roles, users (one per role, named after it) and queues, with a
    few messages."""
    demo_seeded(settings, tmp_path, monkeypatch, orders=3)
    yield {role: User.objects.get(username=role) for role in ROLES}
    cache.clear()


def api_guide_steps(callers):
    """The API guide: the introduction of the document /api/schema/ serves, whose sh blocks are
    for an application (its token in TOKEN)."""
    schema = requests.get(
        f"{callers.url}/api/schema/?format=json", headers=callers.of(APPLICATION), timeout=300
    )
    schema.raise_for_status()
    intro = schema.json()["info"]["description"]
    blocks = re.findall(r"```sh\n(.*?)```", intro, re.DOTALL)
    return [Step("API guide", APPLICATION, "sh", block) for block in blocks]


def test_the_api_guides_calls_work_with_the_token_of_the_application_it_is_written_for(
    demo, live_server, tmp_path
):
    callers = Callers(live_server.url, demo, tmp_path)
    steps = api_guide_steps(callers)

    assert len(steps) >= 2  # a first call and a message sent
    for step in steps:
        run_step(step, callers)


def test_a_step_its_role_may_not_take_stops_the_run(demo, live_server, tmp_path):
    # The dead end of issue 45: the queue list is for people; an application's token gets a 403
    # there, and a guide that told an application to call it would fail here.
    callers = Callers(live_server.url, demo, tmp_path)
    step = Step(
        "a guide",
        APPLICATION,
        "sh",
        'curl -H "Authorization: Token $TOKEN" "$ANTIDOTE/api/v1/queues"\n',
    )

    with pytest.raises(AssertionError, match="403"):
        run_step(step, callers)


# What a guide's steps leave behind, checked after them: a step that answered 2xx but did
# nothing would pass otherwise.
DONE = {
    "guides/other-brokers.md": lambda: MessageKey.objects.filter(
        message_id="bridge-7", queue="orders"
    ).exists(),
}


@pytest.mark.parametrize("guide", [g for g in marked_guides() if g not in BROKER_GUIDES])
def test_each_guides_marked_commands_run_against_the_demo_as_their_role(
    demo, live_server, tmp_path, guide
):
    callers = Callers(live_server.url, demo, tmp_path)
    previous = None
    for step in guide_steps(guide):
        previous = run_step(step, callers, previous)

    assert DONE[guide]()


# --- The broker guides' redrive, against the real brokers ----------------------------------------


def guide_queue_file(guide):
    """The guide's first YAML block that lists sources: its queues and sources, parsed."""
    text = (DOCS / guide).read_text()
    for block in re.findall(r"```yaml\n(.*?)```", text, re.DOTALL):
        document = yaml.safe_load(block)
        if isinstance(document, dict) and "sources" in document:
            return document
    raise AssertionError(f"{guide} has no queue file with sources")


@pytest.fixture
def desk(transactional_db, lake_root, spark, personas, settings):
    return make_desk(spark, personas, settings)


def redrive_as_the_guide_says(guide, desk, live_server, tmp_path):
    """The guide's marked steps (ask, approve), then the workers' part: the request executed
    and the redrive queue delivered."""
    desk.deliver_until_idle()
    desk.refresh()
    assert MessageIndex.objects.filter(queue="orders-dead", state="NDLV").count() == COUNT
    callers = Callers(live_server.url, desk.personas, tmp_path)
    previous = None
    steps = guide_steps(guide)
    assert [(s.role, s.method) for s in steps] == [("operator", "POST"), ("approver", "POST")]
    for step in steps:
        previous = run_step(step, callers, previous)
    assert previous["status"] == "approved"
    request = ActionRequest.objects.get(id=previous["id"])
    assert request.target_queue == "orders-redrive"
    assert desk.execute(request).status == "done"
    desk.deliver_until_idle()


@pytest.mark.services
@pytest.mark.slow
@pytest.mark.database_blind  # the shared NATS server: one run at a time (tests/conftest.py)
def test_the_nats_guides_redrive_publishes_the_messages_back_to_their_subject(
    desk, live_server, tmp_path, monkeypatch
):
    require_service("NATS (JetStream)", port=4222)
    tag = os.urandom(5).hex().upper()
    stream, capture = f"ORDERS_{tag}", f"ANTIDOTE_ADVISORIES_ORDERS_{tag}"
    monkeypatch.setenv("SHOP_NATS_URL", NATS_URL)
    document = guide_queue_file("guides/nats.md")
    (source,) = document["sources"]
    source["broker_queue"] = stream
    source["options"].update(advisory_stream=capture, durable=f"antidote-orders-{tag}")
    client = Client(NATS_URL)
    try:
        client.add_stream(stream, [f"orders.{tag}.>"])
        queues_load(data=document)
        # As the guide says: the source runs once before the consumers it watches give up.
        with consuming(BrokerSource.objects.get(name=source["name"])):
            wait_for(
                lambda: (
                    source_now(BrokerSource.objects.get(name=source["name"])).state == "consuming"
                ),
                timeout=60,
                what="the source's first run",
            )
        worker = client.worker(stream, "billing", max_deliver=2)
        bodies = [b'{"order": %d}' % n for n in range(COUNT)]
        for body in bodies:
            client.publish(f"orders.{tag}.placed", body, headers={"X-Tenant": "acme"})
        client.fail_until_given_up(worker)
        drained_until(
            source["name"],
            into="orders-dead",
            count=COUNT,
            done=lambda: client.stream_info(capture).state.messages == 0,
        )
        fixed = client.run(
            client.js.pull_subscribe(
                f"orders.{tag}.>",
                durable="billing-fixed",
                stream=stream,
                config=api.ConsumerConfig(deliver_policy=api.DeliverPolicy.NEW),
            )
        )

        redrive_as_the_guide_says("guides/nats.md", desk, live_server, tmp_path)

        received = []
        while True:
            try:
                received += client.run(fixed.fetch(100, timeout=1))
            except (TimeoutError, nats.errors.TimeoutError):
                break
        assert sorted(m.data for m in received) == bodies
        assert {m.subject for m in received} == {f"orders.{tag}.placed"}
        assert {m.headers["X-Tenant"] for m in received} == {"acme"}
    finally:
        for name in (stream, capture):
            client.delete_stream(name)
        client.close()


@pytest.mark.services
@pytest.mark.slow
def test_the_redis_guides_redrive_appends_the_entries_to_their_stream_again(
    desk, live_server, tmp_path, monkeypatch
):
    require_service("Redis", port=6379)
    streams = Streams(REDIS_URL)
    try:
        stream = streams.key("orders")
        monkeypatch.setenv("SHOP_REDIS_URL", REDIS_URL)
        document = guide_queue_file("guides/redis-streams.md")
        (source,) = document["sources"]
        source["broker_queue"] = stream
        options = source["options"]
        # The guide's min_deliveries (5) as written; not its minute of idleness, for a test.
        options["min_idle_ms"] = 100
        bodies = [b'{"invoice": %d}' % n for n in range(COUNT)]
        for body in bodies:
            streams.poisoned(
                stream,
                options["group"],
                {"body": body, "tenant": "acme"},
                reads=options["min_deliveries"],
            )
        time.sleep(0.2)  # idle for longer than min_idle_ms
        queues_load(data=document)
        drained_until(
            source["name"],
            into="orders-dead",
            count=COUNT,
            done=lambda: streams.pending(stream, options["group"]) == {},
        )
        streams.client.xgroup_create(stream, "billing-fixed", id="$")

        redrive_as_the_guide_says("guides/redis-streams.md", desk, live_server, tmp_path)

        reply = streams.client.xreadgroup("billing-fixed", "fixed-1", {stream: ">"}, count=100)
        entries = [fields for _, batch in reply for _, fields in batch]
        assert sorted(fields[b"body"] for fields in entries) == bodies
        assert {fields[b"tenant"] for fields in entries} == {b"acme"}
    finally:
        streams.close()
