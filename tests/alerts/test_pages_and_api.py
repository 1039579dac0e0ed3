"""The alerts' screens and API: one's own alerts behind the bell, read by being shown; what one
hears of; the outbox, webhooks and thresholds for administrators only; hostile text inert."""

import pytest
from django.urls import reverse

from console.alerts import events as E
from console.alerts.models import AlertDelivery, InflowThreshold, Subscription, Webhook
from console.alerts.services import alert_raise
from console.audit.models import AuditEntry
from console.queues.models import Queue
from tests.browse.conftest import api, login

pytestmark = pytest.mark.django_db

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def raise_for(*people, title="Queue orders was disabled", text="five failures", queue="orders"):
    return alert_raise(
        kind=E.QUEUE_DISABLED,
        about=f"{queue}-{title}",
        title=title,
        text=text,
        link="/queues/",
        queue=queue,
        to=list(people),
    )


def test_the_bell_counts_unread_alerts_and_the_alerts_page_reads_them(personas):
    operator = personas["operator"]
    raise_for(operator)
    raise_for(operator, title="Queue payments was disabled", queue="payments")
    page = login(operator).get(reverse("message-list"))
    assert 'id="bell-count" class="bell-count">2<' in page.content.decode()

    alerts = login(operator).get(reverse("alert-list"))
    html = alerts.content.decode()
    assert html.count('class="alert-row unread"') == 2
    assert "Queue payments was disabled" in html
    assert not AlertDelivery.objects.filter(user=operator, read_at__isnull=True).exists()
    assert "bell-count" not in login(operator).get(reverse("alert-list")).content.decode()
    # Another's alerts are not in one's bell.
    assert (
        "Queue orders was disabled"
        not in login(personas["approver"]).get(reverse("alert-list")).content.decode()
    )


def test_hostile_text_in_an_alert_is_shown_as_text(personas):
    raise_for(personas["operator"], title=f"New failure group in orders: {HOSTILE}", text=HOSTILE)
    html = login(personas["operator"]).get(reverse("alert-list")).content.decode()
    assert "<script>alert" not in html
    assert "<img src=x" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html


def test_one_chooses_what_one_hears_of_from_the_events_one_may_see(personas):
    Queue.objects.create(name="orders", handler="workers.demo.handlers.noop")
    auditor = login(personas["auditor"]).get(reverse("alert-settings")).content.decode()
    assert E.LABELS[E.AUDIT_BROKEN] in auditor
    assert E.LABELS[E.QUEUE_DISABLED] not in auditor  # an auditor sees no queues

    client = login(personas["operator"])
    form = {
        f"{E.QUEUE_DISABLED}:email": "on",
        f"{E.QUEUE_DISABLED}:queues": "orders",
        f"{E.GROUP_NEW}:console": "on",
    }
    assert client.post(reverse("alert-settings"), form).status_code == 302
    mine = {s.kind: s for s in Subscription.objects.filter(user=personas["operator"])}
    assert (mine[E.QUEUE_DISABLED].console, mine[E.QUEUE_DISABLED].email) == (False, True)
    assert mine[E.QUEUE_DISABLED].queues == ["orders"]
    assert not mine[E.QUEUE_INFLOW].console  # unticked: off
    refused = client.post(reverse("alert-settings"), {f"{E.QUEUE_DISABLED}:queues": "nope"})
    assert refused.status_code == 400
    assert "no such queue: nope" in refused.content.decode()


@pytest.mark.parametrize("persona", ["operator", "approver", "viewer", "auditor", "outsider"])
def test_only_administrators_see_the_outbox_and_change_webhooks_and_thresholds(personas, persona):
    client = login(personas[persona])
    assert client.get(reverse("alert-outbox")).status_code == 403
    post = client.post(
        reverse("alert-webhook-create"),
        {"name": "x", "url": "http://127.0.0.1:9/", "secret_env": "X"},
    )
    assert post.status_code == 403
    assert api(personas[persona]).get(reverse("api-alert-outbox")).status_code == 403
    assert not Webhook.objects.exists()


def test_an_administrator_adds_a_webhook_and_a_threshold_and_sees_the_outbox(personas):
    Queue.objects.create(name="orders", handler="workers.demo.handlers.noop")
    client = login(personas["admin"])
    bad = client.post(
        reverse("alert-webhook-create"),
        {"name": "ops", "url": "javascript:alert(1)", "secret_env": "lower case"},
    )
    assert bad.status_code == 400
    html = bad.content.decode()
    assert "Enter a valid URL." in html
    assert "an environment variable&#x27;s name" in html
    made = client.post(
        reverse("alert-webhook-create"),
        {
            "name": "ops",
            "url": "https://hooks.example.test/antidote",
            "secret_env": "ANTIDOTE_ALERT_OPS_SECRET",
            "kinds": [E.QUEUE_DISABLED],
        },
    )
    assert made.status_code == 302
    hook = Webhook.objects.get()
    assert (hook.kinds, hook.secret_env) == ([E.QUEUE_DISABLED], "ANTIDOTE_ALERT_OPS_SECRET")
    assert (
        client.post(
            reverse("alert-threshold-set"), {"queue": "orders", "count": 50, "window_hours": 3}
        ).status_code
        == 302
    )
    assert InflowThreshold.objects.get(queue="orders").count == 50
    assert (
        client.post(reverse("alert-threshold-set"), {"queue": "nope", "count": 0}).status_code
        == 400
    )

    raise_for(personas["admin"])  # to the webhook as well
    outbox = client.get(reverse("alert-outbox")).content.decode()
    assert "https://hooks.example.test/antidote" in outbox
    assert "not set in this process" in outbox  # the secret's variable
    assert 'id="outbox-pending" href="?state=pending">pending (1)' in outbox
    answer = api(personas["admin"]).get(reverse("api-alert-outbox"), {"state": "pending"}).json()
    assert answer["counts"] == {"pending": 1, "sent": 0, "failed": 0}
    (row,) = answer["results"]
    assert (row["channel"], row["state"], row["alert"]["event"]) == (
        "webhook",
        "pending",
        E.QUEUE_DISABLED,
    )
    actions = set(AuditEntry.objects.values_list("action", flat=True))
    assert {"alerts.webhook_created", "alerts.threshold_set"} <= actions


def test_the_api_lists_ones_own_alerts_and_marks_them_read(personas):
    operator = personas["operator"]
    first = raise_for(operator)
    raise_for(operator, title="Queue payments was disabled", queue="payments")
    raise_for(personas["approver"], title="not the operator's")
    client = api(operator)
    answer = client.get(reverse("api-alert-list")).json()
    assert answer["unread"] == 2
    assert [r["title"] for r in answer["results"]] == [
        "Queue payments was disabled",
        "Queue orders was disabled",
    ]
    assert answer["results"][0]["read_at"] is None
    marked = client.post(reverse("api-alert-read"), {"ids": [first.id]}, format="json")
    assert marked.json() == {"marked": 1}
    assert client.get(reverse("api-alert-list"), {"unread": "true"}).json()["count"] == 1
    assert client.post(reverse("api-alert-read"), {"ids": ["x"]}, format="json").status_code == 400
    assert client.post(reverse("api-alert-read"), {}, format="json").json() == {"marked": 1}
    assert api(None).get(reverse("api-alert-list")).status_code == 401


def test_the_api_sets_what_one_hears_of_within_what_one_may_see(personas):
    Queue.objects.create(name="orders", handler="workers.demo.handlers.noop")
    client = api(personas["operator"])
    rows = {r["event"]: r for r in client.get(reverse("api-alert-subscriptions")).json()}
    assert E.AUDIT_BROKEN not in rows
    assert rows[E.QUEUE_DISABLED] | {"label": ""} == {
        "event": E.QUEUE_DISABLED,
        "label": "",
        "console": True,
        "email": True,
        "queues": [],
        "default": True,
    }
    url = reverse("api-alert-subscriptions")
    body = [{"event": E.QUEUE_DISABLED, "console": False, "email": True, "queues": ["orders"]}]
    rows = {r["event"]: r for r in client.put(url, body, format="json").json()}
    assert (rows[E.QUEUE_DISABLED]["console"], rows[E.QUEUE_DISABLED]["default"]) == (False, False)
    assert rows[E.GROUP_NEW]["default"] is True
    refused = client.put(
        url, [{"event": E.AUDIT_BROKEN, "console": True, "email": True}], format="json"
    )
    assert refused.status_code == 400
    assert "you may not hear of audit.broken" in refused.json()["detail"]
    unknown = client.put(
        url,
        [{"event": E.GROUP_NEW, "console": True, "email": True, "queues": ["x"]}],
        format="json",
    )
    assert "no such queue: x" in unknown.json()["detail"]


def test_administrators_manage_webhooks_and_thresholds_through_the_api(personas):
    Queue.objects.create(name="orders", handler="workers.demo.handlers.noop")
    client = api(personas["admin"])
    made = client.post(
        reverse("api-alert-webhooks"),
        {
            "name": "ops",
            "url": "https://hooks.example.test/a",
            "secret_env": "ANTIDOTE_ALERT_OPS_SECRET",
        },
        format="json",
    )
    assert made.status_code == 201, made.json()
    assert made.json()["active"] is True
    again = client.post(
        reverse("api-alert-webhooks"),
        {"name": "ops", "url": "ftp://x", "secret_env": "bad name"},
        format="json",
    )
    assert again.status_code == 400
    assert set(again.json()["errors"]) >= {"name", "url", "secret_env"}, again.json()
    assert [h["name"] for h in client.get(reverse("api-alert-webhooks")).json()] == ["ops"]
    threshold = {"queue": "orders", "count": 20, "window_hours": 2}
    assert client.put(reverse("api-alert-thresholds"), threshold, format="json").json() == threshold
    assert client.get(reverse("api-alert-thresholds")).json() == [threshold]
    bad = client.put(reverse("api-alert-thresholds"), {"queue": "nope", "count": 0}, format="json")
    assert set(bad.json()["errors"]) == {"queue", "count"}
    assert api(personas["operator"]).get(reverse("api-alert-webhooks")).status_code == 403
