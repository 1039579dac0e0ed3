"""Sending what is due in the outbox: email through Django's email backend, webhooks in their
service's format (console.alerts.formats; ours signed). At least once: a delivery is claimed for
ALERTS_CLAIM_SECONDS before it is sent, so two workers never send it together, and one killed
mid-send leaves it due again when the claim runs out. Receivers recognize a repeat by its
delivery id (the webhook's X-Antidote-Delivery header, the email's Message-ID); PagerDuty by the
incident's dedup key.

A receiver's answer decides what follows: any 2xx is sent (Slack answers 200 "ok", PagerDuty and
Teams 202); 408, 429 and 5xx are tried again with backoff (no sooner than a Retry-After says);
any other 4xx is a mistake that no retry mends (a revoked URL, a bad routing key, a payload
refused), so the delivery fails at once, with the status and the start of the answer as its
reason, for an administrator to fix and send again.

A webhook goes out through the outbound guard (workers.outbound): never to an internal address
(loopback, link-local, private...) unless OUTBOUND_ALLOW_INTERNAL lets it through (for demos
and tests only), the connection made to the address checked; a refused one fails at once with
its reason, nothing sent. Of an answer, the status and a short inert excerpt are kept.

A webhook's secret is read only from a variable alerts may read (console.envnames: under
ANTIDOTE_ALERT_, or listed; never one of the product's own settings): a delivery of one naming
another fails at once, nothing read or sent. Its address is logged redacted (workers.redaction,
scheme://host:port and a marker): a Slack or Teams URL's path is its key, and whatever quotes
the URL back (an error, the receiver's answer) is scrubbed of it."""

import hashlib
import hmac
import json
import logging
import os
import time
from datetime import timedelta

from django.conf import settings
from django.core.mail import EmailMessage
from django.db.models import F
from django.utils import timezone
from requests import RequestException

from console.alerts import formats
from console.alerts.models import AlertDelivery, Webhook
from console.alerts.services import backoff
from console.envnames import alert_secret_refusal
from workers.outbound import (
    DestinationError,
    OutboundRefused,
    excerpt,
    failure_cause,
    guarded_session,
)
from workers.redaction import library_logs_redacted, scrubbed, url_secrets

log = logging.getLogger(__name__)
# urllib3 logs a request's path (a Slack or Teams webhook's key) at DEBUG: redacted.
library_logs_redacted()
SIGNATURE_HEADER = "X-Antidote-Signature"
SEND_BATCH = 200
# How much of a refusal's answer its reason keeps.
ANSWER_SHOWN = 200
# The refusals that another attempt may get past: a timeout, too many requests.
TRANSIENT_4XX = (408, 429)


class SecretMissing(RuntimeError):
    pass


class SecretRefused(RuntimeError):
    """The webhook names a variable alerts may not read (console.envnames): nothing is read,
    nothing is sent, and no attempt will do better until an administrator names another."""

    permanent = True


class Refused(Exception):
    """The receiver answered, but not with a 2xx: its status, the start of its answer, and the
    seconds its Retry-After asks for (None if it asks nothing)."""

    def __init__(self, status, reason, answer="", retry_after=None):
        self.status, self.reason = status, reason
        self.answer, self.retry_after = answer, retry_after
        super().__init__(f"HTTP {status} {reason}")

    @property
    def permanent(self):
        return 400 <= self.status < 500 and self.status not in TRANSIENT_4XX


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
            _failed(delivery, claim, exc)
        else:
            sent += 1
            AlertDelivery.objects.filter(id=delivery_id, due_at=claim).update(
                state=AlertDelivery.SENT, sent_at=timezone.now(), last_error=""
            )
    return sent, failed


def _failed(delivery, claim, exc):
    why = _why(exc)
    if delivery.webhook is not None:
        # A library's error may quote the URL (as sent, or as it was when the alert was raised):
        # its path or query is a Slack or Teams key.
        secrets = (*url_secrets(delivery.webhook.url), *url_secrets(delivery.address))
        why = scrubbed(why, secrets)
    permanent = getattr(exc, "permanent", False)
    gave_up = permanent or delivery.attempts >= settings.ALERTS_MAX_ATTEMPTS
    log.warning(
        "alert delivery %s (%s to %s), attempt %s: %s%s",
        delivery.id,
        delivery.channel,
        delivery.address_shown,
        delivery.attempts,
        why,
        "; giving up" if gave_up else "",
    )
    wait = backoff(delivery.attempts)
    asked = getattr(exc, "retry_after", None)
    if asked is not None:
        wait = max(wait, timedelta(seconds=min(asked, 3600)))
    AlertDelivery.objects.filter(id=delivery.id, due_at=claim).update(
        state=AlertDelivery.FAILED if gave_up else AlertDelivery.PENDING,
        due_at=None if gave_up else timezone.now() + wait,
        last_error=why[:2000],
    )


def _why(exc):
    if isinstance(exc, Refused):
        said = f": {exc.answer}" if exc.answer else ""
        return f"the receiver answered HTTP {exc.status} {exc.reason}{said}"
    if isinstance(exc, RequestException):
        return f"the receiver could not be reached: {failure_cause(exc)}"
    if isinstance(exc, OutboundRefused | DestinationError):
        return f"not sent: {exc}"
    return f"{exc.__class__.__name__}: {exc}"


def _send(delivery):
    if delivery.channel == AlertDelivery.EMAIL:
        _email(delivery)
    elif delivery.channel == AlertDelivery.WEBHOOK:
        _webhook(delivery)
    else:
        raise ValueError(f"a {delivery.channel} delivery is not sent")


def _email(delivery):
    alert = delivery.alert
    body = f"{alert.text}\n\n{formats.absolute(alert.link)}\n"
    if alert.repeats:
        body += f"\n(Raised {alert.repeats} more time(s) since.)\n"
    EmailMessage(
        subject=f"[Antidote] {alert.title}",
        body=body,
        to=[delivery.address],
        headers={"Message-ID": f"<alert-delivery-{delivery.id}@antidote>"},
    ).send()


def signature(secret, timestamp, body):
    """`t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`: the receiver recomputes it with
    the shared secret and refuses an old timestamp (a replay)."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def _webhook(delivery):
    hook = delivery.webhook
    secret = _secret(hook)
    body = json.dumps(formats.body(delivery, secret), sort_keys=True).encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "Antidote-alerts",
        "X-Antidote-Event": delivery.alert.kind,
        "X-Antidote-Delivery": str(delivery.id),
    }
    if hook.format == Webhook.GENERIC:
        headers[SIGNATURE_HEADER] = signature(secret, int(time.time()), body)
    # Only to an address the guard checks as it connects (workers.outbound: no internal
    # address unless OUTBOUND_ALLOW_INTERNAL names it). A signed POST is not replayed elsewhere:
    # a redirect is not followed but refused, an error to look at.
    with guarded_session(allowance=settings.OUTBOUND_ALLOW_INTERNAL) as session:
        response = session.post(
            hook.url,
            data=body,
            headers=headers,
            timeout=settings.ALERTS_WEBHOOK_TIMEOUT_SECONDS,
            allow_redirects=False,
            stream=True,
        )
        with response:
            if not 200 <= response.status_code < 300:
                raise Refused(
                    response.status_code,
                    excerpt(response.reason or ""),
                    _answer(response, url_secrets(hook.url)),
                    _seconds(response.headers.get("Retry-After")),
                )


def _secret(hook):
    """The webhook's secret from the worker's environment: the signing secret, PagerDuty's
    routing key; None for the formats that have none. A variable alerts may not read (one of
    the product's own settings, say) is refused before it is read."""
    if hook.format not in Webhook.WITH_SECRET:
        return None
    refusal = alert_secret_refusal(hook.secret_env) if hook.secret_env else None
    if refusal:
        raise SecretRefused(f"not sent: secret_env is refused: {refusal}")
    secret = os.environ.get(hook.secret_env, "") if hook.secret_env else ""
    if not secret:
        what = "routing key" if hook.format == Webhook.PAGERDUTY else "secret"
        raise SecretMissing(
            f"the environment variable {hook.secret_env}, which holds this webhook's {what}, "
            "is not set in the worker"
        )
    return secret


def _answer(response, secrets=()):
    """The start of a refusal's answer (Slack says why in words: "invalid_payload"), on one
    line and inert: never more of it. A receiver that quotes the request back quotes its URL's
    key: `secrets` are scrubbed, read past the cut by the longest so that none is cut in two."""
    margin = max(map(len, secrets), default=0)
    try:
        start = response.raw.read(ANSWER_SHOWN + margin, decode_content=True) or b""
    except Exception:  # whatever the answer's body does, its status is the reason
        return ""
    text = scrubbed(start.decode("utf-8", "replace"), secrets)
    return excerpt(text, ANSWER_SHOWN)


def _seconds(retry_after):
    # Retry-After in seconds; its other form (an HTTP date) is left to the backoff.
    try:
        return max(0, int(retry_after))
    except (TypeError, ValueError):
        return None
