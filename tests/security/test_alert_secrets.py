"""Attack: an administrator makes an alert target carry one of the product's secrets away. A
PagerDuty webhook sends the variable its `secret_env` names as the routing key, to whatever URL
the administrator typed; the outbox showed a SHA-256 prefix of it. Rule (R19): a webhook names
only a variable under ANTIDOTE_ALERT_ or listed in ALERTS_SECRET_ENV_ALLOWED, never one of the
product's own settings (listed or not), and nothing derived from a secret is shown. The same
for what queue files name: a handler's `*_env` options and a broker source's `url_env` never
name the product's own variables. Rows saved before the rule are disabled or refused, saying
why, and listed by `manage.py check --deploy`.

The attacker's endpoint is a real HTTP server on 127.0.0.1 (the outbound guard lets exactly it
through), so that what would have been sent is seen."""

import hashlib
import importlib
from pathlib import Path

import pytest
from django.apps import apps as registry
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.urls import reverse

from console.alerts import events as E
from console.alerts.checks import named_variables_check
from console.alerts.models import AlertDelivery, Webhook
from console.alerts.sending import alerts_send
from console.alerts.services import webhook_switch
from console.envnames import settings_variables, variables_read
from console.ingest.consumers import source_config
from console.queues.models import BrokerSource, Queue
from console.queues.services import QueueLoadError, queues_load
from console.settings import envnamelist
from tests.alerts.conftest import queue_disabled_alert
from tests.brokers.http.receiver import Answer
from tests.browse.conftest import api, login
from workers.brokers.base import SourceDown

pytestmark = pytest.mark.django_db

# The product's own secrets an attacker would want, each a setting console/settings.py reads.
PRODUCT_SECRETS = (
    "SECRET_KEY",
    "AUDIT_KEY",
    "DATABASE_URL",
    "EMAIL_HOST_PASSWORD",
    "OIDC_CLIENT_SECRET",
    "LDAP_BIND_PASSWORD",
    "METRICS_TOKEN",
    "CELERY_BROKER_URL",
)
PLANTED = "planted-product-secret-0123456789abcdef"
ROUTING_KEY = "e93facc04764012d7bfb002500d5d1a6"
MIGRATION = importlib.import_module("console.alerts.migrations.0006_webhook_secret_names")


@pytest.fixture
def attacker(receiver):
    """The attacker's endpoint: it accepts whatever comes (202, as PagerDuty answers)."""
    return receiver(Answer(202, b'{"status":"success"}'))


@pytest.fixture
def planted(monkeypatch):
    """Every product secret of PRODUCT_SECRETS set in this process, to the same known value."""
    for name in PRODUCT_SECRETS:
        monkeypatch.setenv(name, PLANTED)


def _pager(attacker, secret_env, **fields):
    return {
        "name": "pager",
        "format": "pagerduty",
        "url": attacker.url,
        "secret_env": secret_env,
        "kinds": [E.QUEUE_DISABLED],
        **fields,
    }


def _written_straight(personas, attacker, secret_env, *, name="old-pager", active=True):
    """A PagerDuty webhook written into the database without the form or the service, as a
    database from before the rule holds it, or a row planted afterwards."""
    return Webhook.objects.create(
        name=name,
        format=Webhook.PAGERDUTY,
        url=attacker.url,
        secret_env=secret_env,
        active=active,
        created_by=personas["admin"],
    )


@pytest.mark.parametrize("name", PRODUCT_SECRETS)
def test_an_administrator_cannot_point_a_pagerduty_webhook_at_a_product_secret(
    personas, planted, attacker, name
):
    made = api(personas["admin"]).post(
        reverse("api-alert-webhooks"), _pager(attacker, name), format="json"
    )

    assert made.status_code == 400, made.json()
    assert "one of Antidote's own settings" in made.json()["errors"]["secret_env"][0]
    assert not Webhook.objects.exists()
    queue_disabled_alert(to=[])
    alerts_send()
    assert attacker.received == []


def test_the_outbox_page_refuses_a_product_secret_too(personas, planted, attacker):
    page = login(personas["admin"]).post(
        reverse("alert-webhook-create"), _pager(attacker, "SECRET_KEY")
    )

    assert page.status_code == 400
    assert "SECRET_KEY is one of Antidote&#x27;s own settings" in page.content.decode()
    assert not Webhook.objects.exists()


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("ANTIDOTE_AMQP_URL", "belongs to another part of Antidote"),
        ("ANTIDOTE_WEBHOOK_SECRET", "belongs to another part of Antidote"),
        ("HOME", "neither"),
        ("AWS_SECRET_ACCESS_KEY", "neither"),
    ],
)
def test_a_variable_outside_the_documented_prefix_is_refused(personas, attacker, name, says):
    made = api(personas["admin"]).post(
        reverse("api-alert-webhooks"), _pager(attacker, name), format="json"
    )

    assert made.status_code == 400
    assert says in made.json()["errors"]["secret_env"][0]


def test_a_listed_variable_is_allowed_but_never_a_product_setting_even_listed(
    personas, settings, attacker
):
    settings.ALERTS_SECRET_ENV_ALLOWED = ["PAGERDUTY_ROUTING_KEY", "SECRET_KEY"]
    client = api(personas["admin"])

    listed = client.post(
        reverse("api-alert-webhooks"), _pager(attacker, "PAGERDUTY_ROUTING_KEY"), format="json"
    )
    product = client.post(
        reverse("api-alert-webhooks"),
        _pager(attacker, "SECRET_KEY", name="pager-2"),
        format="json",
    )

    assert listed.status_code == 201, listed.json()
    assert product.status_code == 400
    assert [w.id for w in named_variables_check()] == ["secrets.W001"]


def test_a_webhook_cannot_be_changed_to_a_product_secret(personas, monkeypatch, attacker):
    monkeypatch.setenv("ANTIDOTE_ALERT_PAGER_KEY", ROUTING_KEY)
    client = api(personas["admin"])
    made = client.post(
        reverse("api-alert-webhooks"), _pager(attacker, "ANTIDOTE_ALERT_PAGER_KEY"), format="json"
    )
    hook = Webhook.objects.get(pk=made.json()["id"])

    changed = client.patch(
        reverse("api-alert-webhook", args=[hook.id]), {"secret_env": "AUDIT_KEY"}, format="json"
    )

    assert changed.status_code == 400
    hook.refresh_from_db()
    assert hook.secret_env == "ANTIDOTE_ALERT_PAGER_KEY"


def test_an_allowed_routing_key_still_reaches_pagerduty(personas, monkeypatch, attacker):
    # The feature stays: a key under the documented prefix is sent to the webhook's URL.
    monkeypatch.setenv("ANTIDOTE_ALERT_PAGER_KEY", ROUTING_KEY)
    api(personas["admin"]).post(
        reverse("api-alert-webhooks"), _pager(attacker, "ANTIDOTE_ALERT_PAGER_KEY"), format="json"
    )

    queue_disabled_alert(to=[])

    assert alerts_send() == (1, 0)
    assert ROUTING_KEY.encode() in attacker.received[0].body


def test_a_webhook_saved_before_the_rule_is_disabled_saying_why_and_sends_nothing(
    personas, planted, attacker
):
    # As a database from before the rule holds it: written without the form or the service.
    hook = _written_straight(personas, attacker, "DATABASE_URL")
    queue_disabled_alert(to=[])  # its delivery is due before the migration runs

    MIGRATION.disable_refused(registry, None)

    hook.refresh_from_db()
    assert not hook.active
    assert hook.disabled_reason.startswith("its secret_env is refused: DATABASE_URL is one of")
    # What it had to send fails at once, saying why; nothing reaches the attacker.
    assert alerts_send() == (0, 1)
    delivery = AlertDelivery.objects.get(webhook=hook)
    assert delivery.state == AlertDelivery.FAILED
    assert "secret_env is refused: DATABASE_URL is one of Antidote's own" in delivery.last_error
    assert attacker.received == []
    page = login(personas["admin"]).get(reverse("alert-outbox")).content.decode()
    assert "disabled: its secret_env is refused: DATABASE_URL" in page


def test_an_administrator_cannot_enable_it_again_until_it_names_an_allowed_variable(
    personas, planted, attacker
):
    hook = _written_straight(personas, attacker, "OIDC_CLIENT_SECRET", active=False)

    answer = login(personas["admin"]).post(
        reverse("alert-webhook-switch", args=[hook.id]), {"active": "1"}, follow=True
    )

    assert "stays disabled" in answer.content.decode()
    hook.refresh_from_db()
    assert not hook.active
    with pytest.raises(ValidationError, match="OIDC_CLIENT_SECRET is one of"):
        webhook_switch(actor=personas["admin"], webhook=hook, active=True)


def test_a_webhook_left_enabled_with_a_product_secret_sends_nothing_and_is_listed(
    personas, planted, attacker
):
    # A row the migration never saw (written straight into the database afterwards).
    hook = _written_straight(personas, attacker, "EMAIL_HOST_PASSWORD", name="planted")
    queue_disabled_alert(to=[])

    assert alerts_send() == (0, 1)
    assert AlertDelivery.objects.get(webhook=hook).state == AlertDelivery.FAILED
    assert attacker.received == []
    found = named_variables_check()
    assert [w.id for w in found] == ["secrets.W002"]
    assert "'planted'" in found[0].msg and "EMAIL_HOST_PASSWORD" in found[0].msg


def test_the_outbox_shows_whether_a_secret_is_set_and_nothing_derived_from_it(
    personas, monkeypatch, attacker
):
    secret = "s3cret-routing-key-of-the-pager-0000"
    monkeypatch.setenv("ANTIDOTE_ALERT_PAGER_KEY", secret)
    api(personas["admin"]).post(
        reverse("api-alert-webhooks"), _pager(attacker, "ANTIDOTE_ALERT_PAGER_KEY"), format="json"
    )

    page = login(personas["admin"]).get(reverse("alert-outbox")).content.decode()
    listed = api(personas["admin"]).get(reverse("api-alert-webhooks")).content.decode()

    digest = hashlib.sha256(secret.encode()).hexdigest()
    for shown in (page, listed):
        assert secret not in shown
        assert digest[:6] not in shown  # not even the fingerprint's first characters
    assert "(set in this process)" in page


# --- What queue files name ----------------------------------------------------------------------


def test_a_queue_file_cannot_have_a_sink_read_a_product_variable():
    # A RabbitMQ redrive naming CELERY_BROKER_URL would publish bodies into the task queue.
    document = {
        "queues": [
            {
                "name": "orders-redrive",
                "handler": "workers.brokers.redrive.publisher",
                "handler_options": {"url_env": "CELERY_BROKER_URL"},
            },
            {
                "name": "billing",
                "handler": "workers.brokers.http.poster",
                "handler_options": {
                    "url": "https://billing.example.com/h",
                    "secret_env": "AUDIT_KEY",
                },
            },
        ]
    }

    with pytest.raises(QueueLoadError) as refused:
        queues_load(data=document)

    said = "\n".join(refused.value.errors)
    assert "url_env: CELERY_BROKER_URL is one of Antidote's own settings" in said
    assert "secret_env: AUDIT_KEY is one of Antidote's own settings" in said
    assert not Queue.objects.exists()


def test_a_queue_file_cannot_have_a_source_drain_the_products_broker():
    document = {
        "queues": [{"name": "orders-dead", "handler": "workers.brokers.intake.dead_letter"}],
        "sources": [
            {
                "name": "orders-dlq",
                "kind": "redis",
                "url_env": "CELERY_BROKER_URL",
                "broker_queue": "celery",
                "queue": "orders-dead",
            }
        ],
    }

    with pytest.raises(QueueLoadError, match="url_env: CELERY_BROKER_URL is one of Antidote's"):
        queues_load(data=document)
    assert not BrokerSource.objects.exists()


def test_the_admin_cannot_set_a_product_variable_in_handler_options():
    queue = Queue(
        name="orders-redrive",
        handler="workers.brokers.redrive.publisher",
        handler_options={"url_env": "DATABASE_URL"},
    )

    with pytest.raises(ValidationError, match="DATABASE_URL is one of Antidote's own settings"):
        queue.full_clean()


def test_rows_saved_before_the_rule_are_listed_and_a_source_does_not_connect(planted):
    dead = Queue.objects.create(name="orders-dead", handler="workers.brokers.intake.dead_letter")
    Queue.objects.create(
        name="orders-redrive",
        handler="workers.brokers.redrive.publisher",
        handler_options={"url_env": "CELERY_BROKER_URL"},
    )
    source = BrokerSource.objects.create(
        name="orders-dlq",
        kind="redis",
        url_env="CELERY_BROKER_URL",
        broker_queue="celery",
        queue=dead,
    )

    with pytest.raises(SourceDown, match="url_env is refused: CELERY_BROKER_URL is one of"):
        source_config(source)
    assert sorted(w.id for w in named_variables_check()) == ["secrets.W003", "secrets.W004"]


def test_every_variable_the_settings_read_is_known_to_the_rule():
    # The rule's list of the product's settings is read from console/settings.py itself: each
    # read names its variable where it is read, so none escapes it.
    from console import settings as module

    names, unresolved = variables_read(Path(module.__file__).read_text(encoding="utf-8"), module)

    assert unresolved == 0
    assert names == settings_variables()
    assert set(PRODUCT_SECRETS) <= names
    assert {"METRICS_ALLOWED_IPS", "OUTBOUND_ALLOW_INTERNAL", "TRUSTED_PROXY_COUNT"} <= names


@pytest.mark.parametrize("value", ["SECRET KEY", "lower_case", "9LIVES", "ÄPFEL"])
def test_the_allow_list_setting_refuses_what_is_not_a_variables_name(monkeypatch, value):
    monkeypatch.setenv("ALERTS_SECRET_ENV_ALLOWED", f"PAGER_KEY,{value}")

    with pytest.raises(ImproperlyConfigured, match="ALERTS_SECRET_ENV_ALLOWED must list"):
        envnamelist("ALERTS_SECRET_ENV_ALLOWED", "")
