"""Schemathesis against a live server: the CLI (`schemathesis run`), as any outside client runs
it, calls every operation of the document /api/schema/ serves, with requests it generates from
it, as a caller of each role (a person signed in, with their session's cookie and a CSRF token;
the application role's service account with its API token: R19), on a demo's data. No request makes
the API fail with a server error, and every answer is one the document describes (status,
content type, body).

Bounded and deterministic: the documented examples, then a few generated examples per
operation (valid and not), then the sequences the document's links infer, all in schemathesis'
deterministic mode (no example database), so that every run sends the same requests. Every role
calls every operation. The widest role (FULL_ROLE, which may call them all) sends MAX_EXAMPLES
generated examples to each operation that has changed since it last passed in depth
(examined.py keeps their fingerprints), and SAMPLE_EXAMPLES to the others, as every other role
does: what an unchanged operation or a narrower role adds is mostly which operations refuse it,
and with what answer, which a request or two per operation shows. The rates are raised
for the run, which would otherwise throttle it. The coverage phase (every parameter's edge cases,
some 3,000 requests, three minutes a role) is left to a deeper run:
SCHEMATHESIS_PHASES=examples,coverage,fuzzing,stateful (and SCHEMATHESIS_SAMPLE_EXAMPLES=5 for
every role in full).
"""

import json
import os
import re
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
import requests
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.management import call_command
from django.utils import timezone

from console.accounts.roles import ADMIN, APPLICATION, ROLES
from console.accounts.tokens.services import token_create
from console.decisions import services as decisions
from console.delivery.poison import poison_entries_put
from console.ingest.models import MessageKey
from console.lakequery.services import lake_query_create
from console.notes.models import MESSAGE
from console.notes.services import note_add
from tests.api import examined
from tests.browse.conftest import Index
from tests.conftest import session_headers

SCHEMATHESIS = str(Path(sys.executable).with_name("schemathesis"))
# Per operation and phase: the role that may call every operation, and each of the others.
FULL_ROLE = ADMIN
MAX_EXAMPLES = int(os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "5"))
SAMPLE_EXAMPLES = int(os.environ.get("SCHEMATHESIS_SAMPLE_EXAMPLES", "1"))
CHECKS = ",".join(
    [
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_schema_conformance",
    ]
)
PHASES = os.environ.get("SCHEMATHESIS_PHASES", "examples,fuzzing,stateful")
DEMO_ORDERS = 10
GROUP = "f" * 64


@pytest.fixture
def demo(transactional_db, lake_root, settings, tmp_path, monkeypatch):
    """`manage.py seed_demo`'s roles, users (one per role, named after it), queues and
    messages, and the read models a refresh would make of some of them: quarantined messages
    in a failure group, on the poison list, with a note, a pending request, a lake query."""
    for name in ("ANTIDOTE_AMQP_URL", "ANTIDOTE_NATS_URL", "ANTIDOTE_REDIS_STREAMS_URL"):
        monkeypatch.delenv(name, raising=False)
    settings.VAR_DIR = tmp_path / "var"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # Ingesting commits lake events; no worker needs to be asked to refresh for them.
    settings.REFRESH_ON_COMMIT = False
    # Raised for the run: schemathesis calls as fast as the server answers.
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"caller": "100000/min", "anonymous": "100000/min"},
    }
    cache.clear()
    call_command("seed_demo", "--orders", str(DEMO_ORDERS), stdout=StringIO())

    index = Index()
    index.group(GROUP, queue="orders")
    quarantined = ["demo-orders-000001", "demo-orders-000002", "demo-orders-000003"]
    for message_id in quarantined:
        key = MessageKey.objects.select_related("commit").get(message_id=message_id)
        index.row(message_id, group_id=GROUP, body_path=key.commit.path)
    # The message the document's examples name.
    index.message("order-1", '{"order": 1}', group_id=GROUP, content_type="application/json")
    index.stats("orders", NDLV=3, TBDL=7)
    index.inflow("orders", timezone.now().replace(minute=0, second=0, microsecond=0), 3)
    poison_entries_put(entries=[(quarantined[0], "orders", "crashed", GROUP)], source="engine")

    users = {role: User.objects.get(username=role) for role in ROLES}
    note_add(actor=users["operator"], kind=MESSAGE, target_id=quarantined[0], text="looked at it")
    decisions.action_request_create(
        actor=users["operator"],
        scope={"kind": "group", "group": GROUP},
        action=decisions.Action(kind="reprocess"),
        comment="the inventory service is back",
    )
    lake_query_create(actor=users["operator"], criteria={"queues": ["orders"]})
    yield users
    cache.clear()


# Revoking a token is tested last, alone: the key of a service account's own token is in the
# answers of GET /api/v1/tokens, and once it is revoked every call after it is a 401.
LAST = "tokens_revoke"


def _headers(user):
    """How `user` calls: a service account with a token, a person with their session."""
    if user.username != APPLICATION:
        return session_headers(user)
    _, token = token_create(actor="command:schemathesis", user=user, name="schemathesis")
    return {"Authorization": f"Token {token}"}


def _document(live_server, headers, tmp_path):
    """The document /api/schema/ serves, fetched as the caller fetches it, once for both runs of
    a role: schemathesis' own fetch gives up after 10 s, which a live server on a busy machine
    may take to render it."""
    response = requests.get(
        f"{live_server.url}/api/schema/?format=json", headers=headers, timeout=300
    )
    response.raise_for_status()
    path = tmp_path / "schema.json"
    path.write_bytes(response.content)
    return path


def _run(live_server, headers, *, document, phases, examples, tmp_path, operations):
    return subprocess.run(
        [
            SCHEMATHESIS,
            "run",
            str(document),
            "--url",
            live_server.url,
            *(arg for name, value in headers.items() for arg in ("--header", f"{name}: {value}")),
            "--checks",
            CHECKS,
            "--phases",
            phases,
            "--max-examples",
            str(examples),
            # The same requests every run (and no example database: it implies none).
            "--generation-deterministic",
            "--workers",
            "1",
            "--request-timeout",
            "60",
            "--no-color",
            *operations,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )


# CI's PostgreSQL run takes the two widest roles (every operation of an administrator, every
# decision of an operator); the embedded run takes them all.
ON_POSTGRESQL_TOO = ("admin", "operator")


@pytest.mark.slow
@pytest.mark.parametrize(
    "role",
    [
        pytest.param(role, marks=() if role in ON_POSTGRESQL_TOO else pytest.mark.database_blind)
        for role in ROLES
    ],
)
def test_no_generated_request_makes_the_api_fail_or_answer_off_its_schema(
    role, demo, live_server, tmp_path
):
    headers = _headers(demo[role])
    document = _document(live_server, headers, tmp_path)
    operations = json.loads(document.read_text())
    writing = role == FULL_ROLE and os.environ.get("SCHEMATHESIS_EXAMINED_WRITE") == "1"
    # The widest role sends MAX_EXAMPLES to what has not passed in depth as it is now (every
    # operation when the fingerprints are to be written), a sample to the rest (examined.py).
    deep = []
    if role == FULL_ROLE:
        done = set() if writing else set(examined.unchanged(operations))
        deep = sorted(set(examined.fingerprints(operations)) - done)

    def only(ids):
        return [arg for op in ids for arg in ("--include-operation-id", op)]

    def without(ids):
        return [arg for op in ids for arg in ("--exclude-operation-id", op)]

    deep_before_last = [op for op in deep if op != LAST]
    sampled = set(examined.fingerprints(operations)) - {*deep, LAST}
    plans = []  # (which operations, examples each); a run that would select none is left out
    if deep_before_last:
        plans.append((only(deep_before_last), MAX_EXAMPLES))
    if sampled:
        plans.append((without([*deep_before_last, LAST]), SAMPLE_EXAMPLES))
    plans.append((only([LAST]), MAX_EXAMPLES if LAST in deep else SAMPLE_EXAMPLES))
    runs = [
        _run(
            live_server,
            headers,
            document=document,
            phases=PHASES,
            examples=examples,
            tmp_path=tmp_path,
            operations=options,
        )
        for options, examples in plans
    ]

    tested, total = 0, None
    for done in runs:
        report = done.stdout[-20_000:] + done.stderr[-5_000:]
        assert done.returncode == 0, report
        selected = re.search(r"Selected: (\d+)/(\d+)", done.stdout)
        assert selected and f"Tested: {selected[1]}" in done.stdout, report
        tested, total = tested + int(selected[1]), int(selected[2])
    # Every operation of the document, none skipped.
    assert tested == total
    if writing:
        examined.examined_write(operations)
