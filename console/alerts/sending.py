"""Sending what is due in the outbox: email through Django's email backend, webhooks as signed
JSON. At least once: a delivery is claimed for ALERTS_CLAIM_SECONDS before it is sent, so two
workers never send it together, and one killed mid-send leaves it due again when the claim runs
out. Receivers recognize a repeat by its delivery id (the webhook's X-Antidote-Delivery header,
the email's Message-ID)."""

import hashlib
import hmac
import json
import logging
import os
import time
import urllib.error
import urllib.request
from datetime import timedelta

from django.conf import settings
from django.core.mail import EmailMessage
from django.db.models import F
from django.utils import timezone

from console.alerts.models import AlertDelivery
from console.alerts.services import backoff

log = logging.getLogger(__name__)
SIGNATURE_HEADER = "X-Antidote-Signature"
SEND_BATCH = 200


class SecretMissing(RuntimeError):
    pass


def alerts_send(*, now=None, limit=SEND_BATCH):
    """Send the deliveries due by `now` (default: now), oldest first. Returns (sent, failed)."""
    now = now or timezone.now()
    due = list(
        AlertDelivery.objects.filter(state=AlertDelivery.PENDING, due_at__lte=now)
        .order_by("due_at", "id")
        .values_list("id", "due_at")[:limit]
    )
    sent = failed = 0
    for delivery_id, due_at in due:
        claim = timezone.now() + timedelta(seconds=settings.ALERTS_CLAIM_SECONDS)
        won = AlertDelivery.objects.filter(
            id=delivery_id, state=AlertDelivery.PENDING, due_at=due_at
        ).update(due_at=claim, attempts=F("attempts") + 1)
        if not won:
            continue  # another worker has it
        delivery = AlertDelivery.objects.select_related("alert", "webhook").get(id=delivery_id)
        try:
            _send(delivery)
        except Exception as exc:
            failed += 1
            _failed(delivery, claim, _why(exc))
        else:
            sent += 1
            AlertDelivery.objects.filter(id=delivery_id, due_at=claim).update(
                state=AlertDelivery.SENT, sent_at=timezone.now(), last_error=""
            )
    return sent, failed


def _failed(delivery, claim, why):
    gave_up = delivery.attempts >= settings.ALERTS_MAX_ATTEMPTS
    log.warning(
        "alert delivery %s (%s to %s), attempt %s: %s%s",
        delivery.id,
        delivery.channel,
        delivery.address,
        delivery.attempts,
        why,
        "; giving up" if gave_up else "",
    )
    AlertDelivery.objects.filter(id=delivery.id, due_at=claim).update(
        state=AlertDelivery.FAILED if gave_up else AlertDelivery.PENDING,
        due_at=None if gave_up else timezone.now() + backoff(delivery.attempts),
        last_error=why[:2000],
    )


def _why(exc):
    if isinstance(exc, urllib.error.HTTPError):
        return f"the receiver answered HTTP {exc.code} {exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        return f"the receiver could not be reached: {exc.reason}"
    return f"{exc.__class__.__name__}: {exc}"


def _send(delivery):
    if delivery.channel == AlertDelivery.EMAIL:
        _email(delivery)
    elif delivery.channel == AlertDelivery.WEBHOOK:
        _webhook(delivery)
    else:
        raise ValueError(f"a {delivery.channel} delivery is not sent")


def _absolute(link):
    return f"{settings.CONSOLE_URL}{link}" if link else settings.CONSOLE_URL + "/"


def _email(delivery):
    alert = delivery.alert
    body = f"{alert.text}\n\n{_absolute(alert.link)}\n"
    if alert.repeats:
        body += f"\n(Raised {alert.repeats} more time(s) since.)\n"
    EmailMessage(
        subject=f"[Antidote] {alert.title}",
        body=body,
        to=[delivery.address],
        headers={"Message-ID": f"<alert-delivery-{delivery.id}@antidote>"},
    ).send()


def payload(delivery):
    """The JSON a webhook receives. `text` is Slack's (and Mattermost's) message field."""
    alert = delivery.alert
    link = _absolute(alert.link)
    return {
        "delivery": delivery.id,
        "alert": alert.id,
        "event": alert.kind,
        "title": alert.title,
        "text": f"{alert.title}: {alert.text} <{link}>",
        "link": link,
        "queue": alert.queue,
        "details": alert.details,
        "repeats": alert.repeats,
        "created_at": alert.created_at.isoformat(),
    }


def signature(secret, timestamp, body):
    """`t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`: the receiver recomputes it with
    the shared secret and refuses an old timestamp (a replay)."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    # A signed POST is not replayed elsewhere as a GET: a redirect is an error to look at.
    def redirect_request(self, *args, **kwargs):
        return None


_opener = urllib.request.build_opener(_NoRedirects)


def _webhook(delivery):
    hook = delivery.webhook
    secret = os.environ.get(hook.secret_env, "")
    if not secret:
        raise SecretMissing(
            f"the environment variable {hook.secret_env}, which holds this webhook's secret, "
            "is not set in the worker"
        )
    body = json.dumps(payload(delivery), sort_keys=True).encode()
    request = urllib.request.Request(  # noqa: S310 - an administrator's http(s) URL (forms)
        hook.url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "User-Agent": "Antidote-alerts",
            "X-Antidote-Event": delivery.alert.kind,
            "X-Antidote-Delivery": str(delivery.id),
            SIGNATURE_HEADER: signature(secret, int(time.time()), body),
        },
    )
    with _opener.open(request, timeout=settings.ALERTS_WEBHOOK_TIMEOUT_SECONDS) as response:
        if not 200 <= response.status < 300:
            raise urllib.error.HTTPError(hook.url, response.status, response.reason, None, None)


def secret_fingerprint(env_name):
    """The first characters of the secret's SHA-256, or "" when the variable is unset: enough to
    tell which secret is in use, nothing to sign with."""
    secret = os.environ.get(env_name, "")
    return hashlib.sha256(secret.encode()).hexdigest()[:12] if secret else ""
