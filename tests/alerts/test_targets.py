"""Alert targets people use, beside email and our signed webhooks: Slack (an incoming webhook's
Block Kit message), Microsoft Teams (a workflow's Adaptive Card) and PagerDuty (Events API v2,
trigger and resolve with one dedup key). Each payload arrives at a real HTTP receiver and is
checked against the service's documented schema (tests/alerts/schemas.py); each target hears
only of its events; what attackers wrote stays text; refusals are retried or not as the services
mean them."""

from datetime import timedelta
from types import SimpleNamespace

import jsonschema
import pytest
from django.test import override_settings
from django.urls import reverse
from django.utils import timezone

from console.alerts import events as E
from console.alerts.formats import PAGERDUTY_URL, body
from console.alerts.models import AlertDelivery, Webhook
from console.alerts.sending import alerts_send
from console.alerts.services import alert_raise, webhook_create
from console.audit.models import AuditEntry
from console.delivery.execution import _queues_record
from console.queues.models import Queue
from console.queues.services import queue_reenable
from tests.alerts import schemas
from tests.alerts.conftest import SECRET, SECRET_ENV, Receiver
from tests.browse.conftest import api, login

pytestmark = pytest.mark.django_db

ROUTING_KEY = "e93facc04764012d7bfb002500d5d1a6"  # PagerDuty's are 32 characters
ROUTING_KEY_ENV = "ANTIDOTE_ALERT_TEST_PAGERDUTY_KEY"
HOSTILE = (
    "<!channel> <@U024BE7LH> <https://evil.example|click> *bold* [here](https://evil.example) "
    "https://evil.example www.evil.example & <script>alert(1)</script> \u202etxt.exe\n- item"
)


@pytest.fixture
def receivers(monkeypatch, outbound_allow):
    """Receivers by name, made on demand, each on its own port (which the outbound guard lets
    through)."""
    monkeypatch.setenv(ROUTING_KEY_ENV, ROUTING_KEY)
    monkeypatch.setenv(SECRET_ENV, SECRET)
    made = {}

    def make(name):
        made[name] = Receiver()
        made[name].start()
        outbound_allow(f"127.0.0.1:{made[name].port}")
        return made[name]

    yield make
    for receiver in made.values():
        receiver.stop()


@pytest.fixture
def target(personas, receivers):
    """A webhook of a format to a receiver of its own: target("slack", kinds=[...])."""

    def make(fmt, *, name=None, kinds=(), queues=()):
        receiver = receivers(name or fmt)
        webhook_create(
            actor=personas["admin"],
            name=name or fmt,
            format=fmt,
            url=receiver.url,
            kinds=list(kinds),
            queues=list(queues),
            secret_env={Webhook.PAGERDUTY: ROUTING_KEY_ENV, Webhook.GENERIC: SECRET_ENV}.get(
                fmt, ""
            ),
        )
        if fmt == Webhook.SLACK:
            receiver.body = b"ok"
        elif fmt == Webhook.PAGERDUTY:
            receiver.answer = 202
            receiver.body = b'{"status":"success","message":"Event processed"}'
        elif fmt == Webhook.TEAMS:
            receiver.answer = 202
        return receiver

    return make


def raise_alert(kind=E.QUEUE_DISABLED, *, about="orders", title=None, text=None, **kwargs):
    kwargs.setdefault("queue", "orders" if kind in E.QUEUE_KINDS else "")
    return alert_raise(
        kind=kind,
        about=about,
        title=title or f"Queue {about} was disabled",
        text=text or f"The queue {about} was disabled: 5 failed attempts in a row",
        link="/queues/",
        to=[],
        **kwargs,
    )


def only(receiver):
    (payload,) = receiver.accepted()
    return payload


def test_a_slack_webhook_gets_a_block_kit_message_slack_accepts(settings, target):
    settings.CONSOLE_URL = "https://antidote.example.com"
    slack = target("slack")
    raise_alert()
    assert alerts_send() == (1, 0)
    (headers, message, signed, status) = slack.got[0]
    schemas.check("slack", message)
    assert (status, signed) == (200, False)  # Slack checks no signature: none is sent
    assert headers["Content-Type"] == "application/json"
    assert message["text"] == "Queue orders was disabled"
    header, section, actions = message["blocks"]
    assert header["text"]["text"] == "Queue orders was disabled"
    assert section["text"] == {
        "type": "mrkdwn",
        "text": "The queue orders was disabled: 5 failed attempts in a row",
        "verbatim": True,
    }
    fields = [f["text"] for f in section["fields"]]
    assert fields[:3] == [
        "*Event*\nA queue was disabled",
        "*Severity*\ncritical",
        "*Queue*\norders",
    ]
    assert fields[3].startswith("*Raised*\n") and fields[3].endswith(" UTC")
    (button,) = actions["elements"]
    assert button["url"] == "https://antidote.example.com/queues/"
    assert AlertDelivery.objects.get(channel="webhook").state == "sent"


def test_a_teams_webhook_gets_an_adaptive_card_in_a_workflow_message(settings, target):
    settings.CONSOLE_URL = "https://antidote.example.com"
    teams = target("teams")
    raise_alert()
    assert alerts_send() == (1, 0)
    message = only(teams)
    schemas.check("teams", message)
    card = message["attachments"][0]["content"]
    assert card["version"] == "1.4"
    title, text, facts = card["body"]
    assert (title["text"], title["color"]) == ("Queue orders was disabled", "Attention")
    assert text["text"] == "The queue orders was disabled: 5 failed attempts in a row"
    assert {f["title"]: f["value"] for f in facts["facts"]}["Queue"] == "orders"
    assert card["actions"] == [
        {
            "type": "Action.OpenUrl",
            "title": "Open in Antidote",
            "url": "https://antidote.example.com/queues/",
        }
    ]


def disable(name, reason="queue disabled: 5 failed attempts in a row"):
    """R11 as a delivery run records it: its outcome disables the queue (the run's Spark part,
    which finds the streak, is in test_events_reach_people.py)."""
    _queues_record(SimpleNamespace(streaks={name: 5}, disabled={name: reason}))


def test_pagerduty_is_triggered_by_a_disabled_queue_and_resolved_when_it_is_enabled_again(
    settings, personas, target
):
    settings.CONSOLE_URL = "https://antidote.example.com"
    orders = Queue.objects.create(name="orders", handler="workers.demo.handlers.noop")
    pager = target("pagerduty", kinds=[E.QUEUE_DISABLED])
    disable("orders")
    assert alerts_send() == (1, 0)
    (trigger,) = pager.accepted()
    schemas.check("pagerduty", trigger)
    assert trigger["routing_key"] == ROUTING_KEY
    assert trigger["event_action"] == "trigger"
    assert trigger["dedup_key"] == "antidote:queue-disabled:orders"
    payload = trigger["payload"]
    assert (payload["summary"], payload["severity"]) == ("Queue orders was disabled", "critical")
    assert (payload["source"], payload["component"]) == ("antidote.example.com", "orders")
    assert payload["custom_details"]["details"] == {
        "reason": "queue disabled: 5 failed attempts in a row"
    }
    assert trigger["links"] == [
        {"href": "https://antidote.example.com/queues/", "text": "Open in Antidote"}
    ]

    # Re-enabled: its incident resolved, though the target names only queue.disabled.
    queue_reenable(queue_ids=[orders.id], actor=personas["admin"])
    assert alerts_send() == (1, 0)
    resolve = pager.accepted()[1]
    schemas.check("pagerduty", resolve)
    assert resolve == {
        "routing_key": ROUTING_KEY,
        "event_action": "resolve",
        "dedup_key": "antidote:queue-disabled:orders",
    }

    # Disabled again within the hour: paged again (not a repeat of the first alert).
    disable("orders")
    assert alerts_send() == (1, 0)
    again = pager.accepted()[2]
    assert (again["event_action"], again["dedup_key"]) == (
        "trigger",
        "antidote:queue-disabled:orders",
    )


def test_a_queue_disabled_twice_without_being_enabled_is_one_alert_with_a_repeat(target):
    pager = target("pagerduty")
    first = raise_alert()
    assert raise_alert() is None  # within the period, nothing between: a repeat
    first.refresh_from_db()
    assert first.repeats == 1
    assert alerts_send() == (1, 0)
    assert len(pager.accepted()) == 1


def test_a_break_glass_decision_reviewed_resolves_its_page(personas, quarantine, target):
    from console.decisions.break_glass import break_glass_execute, break_glass_review
    from tests.decisions.conftest import Requests

    pager = target("pagerduty", kinds=[E.REQUEST_BREAK_GLASS])
    request = Requests(personas).make({"kind": "selection", "ids": ["m-00", "m-02"]}, kind="fail")
    with override_settings(BREAK_GLASS=True):
        break_glass_execute(
            actor=personas["approver"], request=request, reason="the shop is down", confirm=True
        )
    alerts_send()
    request.refresh_from_db()
    break_glass_review(actor=personas["admin"], request=request, agrees=True)
    alerts_send()
    events = [(p["event_action"], p["dedup_key"]) for p in pager.accepted()]
    key = f"antidote:break-glass:{request.id}"
    assert events == [("trigger", key), ("resolve", key)]
    for payload in pager.accepted():
        schemas.check("pagerduty", payload)
    # No one hears of a review by default: the bells stay quiet.
    assert not AlertDelivery.objects.filter(
        alert__kind=E.REQUEST_BREAK_GLASS_REVIEWED, channel="console"
    ).exists()


def test_each_target_receives_only_the_events_it_names(target):
    slack = target("slack", kinds=[E.QUEUE_DISABLED])
    teams = target("teams", kinds=[E.GROUP_NEW, E.QUEUE_ENABLED])
    pager = target("pagerduty", kinds=[E.QUEUE_DISABLED], queues=["orders"])
    everything = target("generic", name="everything")

    raise_alert()  # queue.disabled on orders
    raise_alert(E.QUEUE_DISABLED, about="payments", queue="payments")
    raise_alert(E.QUEUE_ENABLED, title="Queue orders was enabled again", text="again")
    raise_alert(
        E.GROUP_NEW,
        about="abc",
        title="New failure group in orders: KeyError",
        text="KeyError: order not found",
        details={"fingerprint": "abc", "count": 3},
    )
    raise_alert(E.AUDIT_BROKEN, about="chain", title="The audit trail is not intact", text="x")

    by_target = {
        hook.name: sorted(
            AlertDelivery.objects.filter(webhook=hook).values_list("alert__kind", flat=True)
        )
        for hook in Webhook.objects.all()
    }
    assert by_target == {
        "slack": [E.QUEUE_DISABLED, E.QUEUE_DISABLED],
        "teams": [E.GROUP_NEW, E.QUEUE_ENABLED],
        # Its own event on its queue, and what resolves it; not payments, not the rest.
        "pagerduty": [E.QUEUE_DISABLED, E.QUEUE_ENABLED],
        "everything": sorted(
            [E.QUEUE_DISABLED, E.QUEUE_DISABLED, E.QUEUE_ENABLED, E.GROUP_NEW, E.AUDIT_BROKEN]
        ),
    }
    alerts_send()
    assert len(slack.accepted()) == 2
    assert [p["attachments"][0]["content"]["body"][0]["text"] for p in teams.accepted()] == [
        "Queue orders was enabled again",
        "New failure group in orders: KeyError",
    ]
    assert [p["event_action"] for p in pager.accepted()] == ["trigger", "resolve"]
    assert len(everything.accepted()) == 5
    assert all(signed for _, _, signed, _ in everything.got)  # ours are signed still


@pytest.mark.parametrize(
    ("fmt", "payload", "wrong"),
    [
        (
            "slack",
            {"blocks": [{"type": "header", "text": {"type": "plain_text", "text": "x" * 151}}]},
            "is too long",
        ),
        (
            "slack",
            {"text": "x", "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": ""}}]},
            "should be non-empty",
        ),
        (
            "teams",
            {"type": "message", "attachments": [{"contentType": "text/html", "content": {}}]},
            "'application/vnd.microsoft.card.adaptive' was expected",
        ),
        (
            "teams",
            {
                "type": "message",
                "attachments": [
                    {
                        "contentType": "application/vnd.microsoft.card.adaptive",
                        "content": {
                            "type": "AdaptiveCard",
                            "version": "1.4",
                            "body": [{"type": "Image", "url": "https://x.test/a.png"}],
                        },
                    }
                ],
            },
            "valid under",
        ),
        (
            "pagerduty",
            {
                "routing_key": ROUTING_KEY,
                "event_action": "trigger",
                "payload": {"summary": "s", "source": "h", "severity": "fatal"},
            },
            "fatal",
        ),
        ("pagerduty", {"routing_key": ROUTING_KEY, "event_action": "resolve"}, "dedup_key"),
        (
            "pagerduty",
            {
                "routing_key": "short",
                "event_action": "trigger",
                "payload": {"summary": "s" * 1025, "source": "h", "severity": "info"},
            },
            "short",
        ),
    ],
)
def test_the_schemas_refuse_what_the_services_refuse(fmt, payload, wrong):
    with pytest.raises(jsonschema.ValidationError) as refused:
        schemas.check(fmt, payload)
    assert wrong in refused.value.message


@pytest.mark.parametrize("kind", E.KINDS)
@pytest.mark.parametrize("fmt", ["slack", "teams", "pagerduty"])
def test_every_event_is_a_valid_message_in_every_format(personas, fmt, kind):
    webhook_create(
        actor=personas["admin"],
        name="t",
        format=fmt,
        url="https://hooks.example.test/x",
        kinds=[],
        queues=[],
        secret_env="",
    )
    raise_alert(
        kind,
        about="x",
        title="Something happened",
        text="A text",
        details={"request": 7, "source": "orders-dlq", "fingerprint": "f00", "grant": 3},
    )
    delivery = AlertDelivery.objects.get(channel="webhook")
    payload = body(delivery, ROUTING_KEY)
    schemas.check(fmt, payload)
    if fmt == "pagerduty":
        name, action, _ = E.INCIDENT[kind]
        assert payload["event_action"] == action
        assert payload["dedup_key"].startswith(f"antidote:{name}")


def test_what_attackers_wrote_is_text_in_every_format(settings, target):
    settings.CONSOLE_URL = "https://antidote.example.com"
    slack, teams, pager = target("slack"), target("teams"), target("pagerduty")
    raise_alert(
        E.GROUP_NEW, about="g", title=f"New failure group in orders: {HOSTILE}", text=HOSTILE
    )
    assert alerts_send() == (3, 0)

    message = only(slack)
    schemas.check("slack", message)
    section = message["blocks"][1]["text"]
    assert section["verbatim"] is True  # Slack links or parses nothing by itself
    for text in (message["text"], message["blocks"][0]["text"]["text"], section["text"]):
        assert "<" not in text and ">" not in text  # no link, mention or channel can be written
        assert "&lt;!channel&gt;" in text
        assert "&lt;@U024BE7LH&gt;" in text
        assert "\u202e" not in text
    assert "⟨U+202E⟩txt.exe" in section["text"]  # the override shown, obeying nothing
    assert "&amp;" in section["text"]
    # The notification's text and the header break every address.
    for text in (message["text"], message["blocks"][0]["text"]["text"]):
        assert "https://" not in text and "www." not in text

    card = only(teams)["attachments"][0]["content"]
    schemas.check("teams", only(teams))
    text = card["body"][1]["text"]
    assert r"\[here\]\(https:" in text  # no Markdown link
    assert "https://" not in text and "www." not in text  # nor an address to link
    assert r"\*bold\*" in text
    assert "\n\\- item" in text  # no list
    assert "\u202e" not in text and "⟨U+202E⟩" in text

    event = only(pager)
    schemas.check("pagerduty", event)
    assert event["payload"]["custom_details"]["text"] == HOSTILE  # plain JSON: as written


def test_long_texts_are_cut_to_each_services_limits(target):
    slack, teams, pager = target("slack"), target("teams"), target("pagerduty")
    raise_alert(title="&" * 300, text="<" * 5000)
    assert alerts_send() == (3, 0)
    message = only(slack)
    schemas.check("slack", message)
    header = message["blocks"][0]["text"]["text"]
    assert len(header) <= 150 and header == "&amp;" * 29 + "…"  # never half an entity
    section = message["blocks"][1]["text"]["text"]
    assert len(section) <= 3000 and section.endswith("&lt;…")
    schemas.check("teams", only(teams))
    event = only(pager)
    schemas.check("pagerduty", event)
    assert event["payload"]["summary"] == "&" * 300  # within PagerDuty's 1024


@pytest.mark.parametrize(
    ("status", "answer", "retry_after", "state", "error"),
    [
        (429, b"rate_limited", "120", "pending", "HTTP 429 Too Many Requests: rate_limited"),
        (500, b"rollup_error", None, "pending", "HTTP 500 Internal Server Error: rollup_error"),
        (503, b"", None, "pending", "HTTP 503 Service Unavailable"),
        (400, b"invalid_payload", None, "failed", "HTTP 400 Bad Request: invalid_payload"),
        (403, b"invalid_token", None, "failed", "HTTP 403 Forbidden: invalid_token"),
        (404, b"no_service", None, "failed", "HTTP 404 Not Found: no_service"),
        (410, b"channel_is_archived", None, "failed", "HTTP 410 Gone: channel_is_archived"),
    ],
)
def test_429_and_5xx_are_tried_again_and_other_4xx_fail_at_once_saying_why(
    target, status, answer, retry_after, state, error
):
    slack = target("slack")
    slack.answer, slack.body = status, answer
    if retry_after:
        slack.answer_headers = {"Retry-After": retry_after}
    raise_alert()
    assert alerts_send() == (0, 1)
    delivery = AlertDelivery.objects.get(channel="webhook")
    assert (delivery.state, delivery.attempts) == (state, 1)
    assert delivery.last_error == f"the receiver answered {error}"
    if state == "failed":
        assert delivery.due_at is None  # no retry mends it: an administrator sends it again
    else:
        # No sooner than Retry-After asks (beyond the first backoff's 30 s).
        least = timedelta(seconds=110 if retry_after else 20)
        assert delivery.due_at > timezone.now() + least
        slack.answer, slack.body, slack.answer_headers = 200, b"ok", {}
        assert alerts_send(now=timezone.now() + timedelta(hours=1)) == (1, 0)


def test_a_pagerduty_refusal_says_what_pagerduty_said(target):
    pager = target("pagerduty")
    pager.answer = 400
    pager.body = b'{"status":"invalid event","message":"Event object is invalid"}'
    raise_alert()
    alerts_send()
    delivery = AlertDelivery.objects.get(channel="webhook")
    assert delivery.state == "failed"
    assert delivery.last_error == (
        'the receiver answered HTTP 400 Bad Request: {"status":"invalid event","message":"Event '
        'object is invalid"}'
    )


def test_pagerduty_without_its_routing_key_fails_naming_the_variable(monkeypatch, target):
    pager = target("pagerduty")
    monkeypatch.delenv(ROUTING_KEY_ENV)
    raise_alert()
    assert alerts_send() == (0, 1)
    assert AlertDelivery.objects.get(channel="webhook").last_error == (
        f"SecretMissing: the environment variable {ROUTING_KEY_ENV}, which holds this webhook's "
        "routing key, is not set in the worker"
    )
    assert pager.got == []


# --- The form and the API ---------------------------------------------------------------------


def test_an_administrator_adds_each_kind_of_target_on_the_outbox_page(personas):
    client = login(personas["admin"])
    page = client.get(reverse("alert-outbox")).content.decode()
    for value in ("generic", "slack", "teams", "pagerduty"):
        assert f'value="{value}"' in page
    made = client.post(
        reverse("alert-webhook-create"),
        {
            "name": "pager",
            "format": "pagerduty",
            "secret_env": "ANTIDOTE_ALERT_PAGERDUTY_KEY",
            "kinds": [E.QUEUE_DISABLED, E.SOURCE_DOWN],
        },
    )
    assert made.status_code == 302
    slack = client.post(
        reverse("alert-webhook-create"),
        {"name": "chat", "format": "slack", "url": "https://hooks.slack.test/services/T/B/X"},
    )
    assert slack.status_code == 302
    pager, chat = Webhook.objects.get(name="pager"), Webhook.objects.get(name="chat")
    assert (pager.format, pager.url, pager.kinds) == (
        "pagerduty",
        PAGERDUTY_URL,
        [E.QUEUE_DISABLED, E.SOURCE_DOWN],
    )
    assert (chat.format, chat.secret_env) == ("slack", "")
    html = client.get(reverse("alert-outbox")).content.decode()
    assert "PagerDuty (Events API v2)" in html and "none: its URL" in html
    # The audit trail keeps the URL's origin: a Slack URL's path is its password.
    entry = AuditEntry.objects.get(action="alerts.webhook_created", target_id="chat")
    assert entry.details["url"] == "https://hooks.slack.test:443/[redacted]"
    assert entry.details["format"] == "slack"


@pytest.mark.parametrize(
    ("given", "field", "says"),
    [
        ({"format": "slack"}, "url", "the address it posts to is required"),
        ({"format": "slack", "url": "https://h.test/x", "secret_env": "X"}, "secret_env", "leave"),
        ({"format": "pagerduty"}, "secret_env", "name the environment variable of its routing"),
        ({"format": "generic", "url": "https://h.test/x"}, "secret_env", "signing secret"),
        ({"format": "pagerduty", "secret_env": "lower"}, "secret_env", "capital letters"),
        ({"format": "discord", "url": "https://h.test/x"}, "format", "not one of"),
        ({"format": "teams", "url": "javascript:alert(1)"}, "url", "Enter a valid URL."),
    ],
)
def test_the_form_and_the_api_refuse_a_target_that_cannot_work(personas, given, field, says):
    form = login(personas["admin"]).post(reverse("alert-webhook-create"), {"name": "x", **given})
    assert form.status_code == 400
    assert says.replace("'", "&#x27;") in form.content.decode()
    answer = api(personas["admin"]).post(
        reverse("api-alert-webhooks"), {"name": "x", **given}, format="json"
    )
    assert answer.status_code == 400
    assert field in answer.json()["errors"], answer.json()
    assert not Webhook.objects.exists()


def test_the_api_adds_targets_with_their_format_and_validates_their_events(personas):
    client = api(personas["admin"])
    url = reverse("api-alert-webhooks")
    made = client.post(
        url,
        {
            "name": "pager",
            "format": "pagerduty",
            "kinds": [E.QUEUE_DISABLED, E.QUEUE_DISABLED],
            "secret_env": "ANTIDOTE_ALERT_PAGERDUTY_KEY",
        },
        format="json",
    )
    assert made.status_code == 201, made.json()
    assert made.json() | {"id": 0} == {
        "id": 0,
        "name": "pager",
        "format": "pagerduty",
        "url": PAGERDUTY_URL,
        "kinds": [E.QUEUE_DISABLED],
        "queues": [],
        "secret_env": "ANTIDOTE_ALERT_PAGERDUTY_KEY",
        "active": True,
        "disabled_reason": "",
    }
    bad = client.post(
        url,
        {"name": "t", "format": "teams", "url": "https://h.test/x", "kinds": ["queue.exploded"]},
        format="json",
    )
    assert bad.status_code == 400
    assert "kinds" in bad.json()["errors"]
    old = client.post(
        url,
        {"name": "old", "url": "https://h.test/x", "secret_env": "ANTIDOTE_ALERT_OLD_SECRET"},
        format="json",
    )
    assert old.json()["format"] == "generic"  # as before formats were
    assert [h["format"] for h in client.get(url).json()] == ["generic", "pagerduty"]


@pytest.mark.parametrize("persona", ["operator", "approver", "viewer", "auditor", "outsider"])
def test_only_administrators_add_slack_teams_or_pagerduty_targets(personas, persona):
    for fmt, extra in (
        ("slack", {"url": "https://hooks.slack.test/x"}),
        ("teams", {"url": "https://teams.test/x"}),
        ("pagerduty", {"secret_env": "ANTIDOTE_ALERT_PD_KEY"}),
    ):
        given = {"name": fmt, "format": fmt, **extra}
        assert (
            login(personas[persona]).post(reverse("alert-webhook-create"), given).status_code == 403
        )
        answer = api(personas[persona]).post(reverse("api-alert-webhooks"), given, format="json")
        assert answer.status_code == 403
    assert not Webhook.objects.exists()


def test_an_administrator_reroutes_a_target_on_its_page(personas, target):
    slack = target("slack", kinds=[E.QUEUE_DISABLED])
    hook = Webhook.objects.get(name="slack")
    client = login(personas["admin"])
    page = client.get(reverse("alert-webhook-edit", args=[hook.id])).content.decode()
    assert f'value="{E.QUEUE_DISABLED}" id="id_kinds_0" checked' in page
    assert f'value="{E.QUEUE_ENABLED}" id="id_kinds_1">' in page
    refused = client.post(
        reverse("alert-webhook-edit", args=[hook.id]),
        {"url": slack.url, "kinds": [E.GROUP_NEW], "secret_env": "NOT_FOR_SLACK"},
    )
    assert refused.status_code == 400
    assert "has no secret but its URL" in refused.content.decode()
    saved = client.post(
        reverse("alert-webhook-edit", args=[hook.id]), {"url": slack.url, "kinds": [E.GROUP_NEW]}
    )
    assert saved.status_code == 302
    hook.refresh_from_db()
    assert (hook.kinds, hook.format, hook.name) == ([E.GROUP_NEW], "slack", "slack")
    entry = AuditEntry.objects.get(action="alerts.webhook_changed")
    assert entry.details == {"kinds": [E.GROUP_NEW]}

    raise_alert()  # queue.disabled: no longer its event
    raise_alert(E.GROUP_NEW, about="g", title="New failure group in orders: KeyError", text="x")
    assert alerts_send() == (1, 0)
    assert only(slack)["blocks"][0]["text"]["text"] == "New failure group in orders: KeyError"


def test_the_api_reroutes_a_target_and_keeps_what_it_is_not_given(personas, target):
    target("pagerduty", kinds=[E.QUEUE_DISABLED])
    Queue.objects.create(name="orders", handler="workers.demo.handlers.noop")
    hook = Webhook.objects.get(name="pagerduty")
    client = api(personas["admin"])
    url = reverse("api-alert-webhook", args=[hook.id])
    changed = client.patch(
        url, {"kinds": [E.SOURCE_DOWN, E.QUEUE_DISABLED], "queues": ["orders"]}, format="json"
    )
    assert changed.status_code == 200, changed.json()
    assert changed.json() | {"id": 0, "url": ""} == {
        "id": 0,
        "name": "pagerduty",
        "format": "pagerduty",
        "url": "",
        "kinds": [E.SOURCE_DOWN, E.QUEUE_DISABLED],
        "queues": ["orders"],
        "secret_env": ROUTING_KEY_ENV,
        "active": True,
        "disabled_reason": "",
    }
    assert client.get(url).json()["kinds"] == [E.SOURCE_DOWN, E.QUEUE_DISABLED]
    for wrong, field in (
        ({"kinds": ["queue.exploded"]}, "kinds"),
        ({"secret_env": ""}, "secret_env"),
        ({"queues": ["nope"]}, "queues"),
        ({"url": "ftp://x"}, "url"),
    ):
        refused = client.patch(url, wrong, format="json")
        assert refused.status_code == 400
        assert field in refused.json()["errors"], refused.json()
    assert (
        client.patch(reverse("api-alert-webhook", args=[999]), {}, format="json").status_code == 404
    )
    for persona in ("operator", "approver", "viewer", "auditor", "outsider"):
        assert api(personas[persona]).patch(url, {"kinds": []}, format="json").status_code == 403
        assert api(personas[persona]).get(url).status_code == 403
        assert (
            login(personas[persona]).get(reverse("alert-webhook-edit", args=[hook.id])).status_code
            == 403
        )
    hook.refresh_from_db()
    assert hook.kinds == [E.SOURCE_DOWN, E.QUEUE_DISABLED]
