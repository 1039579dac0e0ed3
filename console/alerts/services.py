"""Raising alerts (into the outbox, in the caller's transaction) and the settings people change:
their subscriptions, webhooks, inflow thresholds, and sending a failed delivery again."""

from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from console.alerts import events as E
from console.alerts.models import Alert, AlertDelivery, InflowThreshold, Subscription, Webhook
from console.audit.services import audit_record
from console.envnames import alert_secret_refusal
from workers.redaction import url_redacted


def _period(now):
    """The dedupe period `now` falls in, as a number: alerts about one thing share it."""
    return int(now.timestamp() // (settings.ALERTS_DEDUPE_MINUTES * 60))


def alert_raise(
    *, kind, about, title, text, link="", queue="", details=None, to=None, exclude=(), once=False
):
    """Write an alert and its deliveries in the caller's transaction. `about` names what it is
    about (a queue, a group, a request): one alert per `about` and dedupe period, or ever when
    `once`; a repeat only counts on the first. `to`: its recipients, instead of everyone who may
    hear of `kind` and wants to. Returns the alert (its `pending`: the deliveries left for the
    worker to send), or None for a repeat.

    An event that opens or closes an incident ends the period of the events that act the other
    way on it: a queue disabled, enabled and disabled again within a period is three alerts, so
    that a pager which closed the incident on the second hears it open again on the third."""
    now = timezone.now()
    key = f"{kind}:{about}" if once else f"{kind}:{about}:{_period(now)}"
    with transaction.atomic():
        alert, created = Alert.objects.get_or_create(
            dedupe_key=key[:300],
            defaults={
                "kind": kind,
                "title": title[:300],
                "text": text,
                "link": link,
                "queue": queue,
                "details": details or {},
            },
        )
        if not created:
            Alert.objects.filter(pk=alert.pk).update(repeats=F("repeats") + 1)
            return None
        for other in E.opposite(kind):
            # Its key freed (and kept unique), the next one is a new alert, not a repeat.
            for pk in Alert.objects.filter(
                dedupe_key=f"{other}:{about}:{_period(now)}"[:300]
            ).values_list("pk", flat=True):
                Alert.objects.filter(pk=pk).update(dedupe_key=f"{other}:closed-by-{alert.pk}:{pk}")
        deliveries = [*_people(alert, to, exclude, now), *_webhooks(alert, now)]
        AlertDelivery.objects.bulk_create(deliveries)
    # What the default worker has to send (email, webhooks); the console's are delivered.
    alert.pending = sum(d.state == AlertDelivery.PENDING for d in deliveries)
    return alert


def _audience(kind, to, exclude):
    User = get_user_model()
    if to is not None:
        people = [u for u in to if u is not None and u.is_active]
    else:
        # Who holds the permission, in one query (not has_perm() a user at a time: this runs
        # inside its cause's transaction, a delivery run's commit among them).
        app_label, codename = E.PERMISSION[kind].split(".")
        holds = (
            Q(
                groups__permissions__codename=codename,
                groups__permissions__content_type__app_label=app_label,
            )
            | Q(
                user_permissions__codename=codename,
                user_permissions__content_type__app_label=app_label,
            )
            | Q(is_superuser=True)
        )
        people = list(
            User.objects.filter(holds, is_active=True).distinct().prefetch_related("groups")
        )
    excluded = {u.pk for u in exclude if u is not None}
    return [u for u in people if u.pk not in excluded]


def _people(alert, to, exclude, now):
    people = _audience(alert.kind, to, exclude)
    chosen = {
        s.user_id: s
        for s in Subscription.objects.filter(kind=alert.kind, user__in=[u.pk for u in people])
    }
    for user in people:
        console, email = channels_for(user, alert.kind, chosen.get(user.pk), queue=alert.queue)
        if console:
            yield AlertDelivery(
                alert=alert,
                channel=AlertDelivery.CONSOLE,
                user=user,
                state=AlertDelivery.SENT,
                sent_at=now,
            )
        if email and user.email:
            yield AlertDelivery(
                alert=alert,
                channel=AlertDelivery.EMAIL,
                user=user,
                address=user.email,
                due_at=now,
            )


def channels_for(user, kind, subscription, *, queue=""):
    """(console, email): how `user` hears of `kind` about `queue`, by their subscription, or
    else their roles' default."""
    if subscription is not None:
        if subscription.queues and queue and queue not in subscription.queues:
            return False, False
        return subscription.console, subscription.email
    if not E.role_default([g.name for g in user.groups.all()], kind):
        return False, False
    return True, kind in E.DEFAULT_EMAIL


def webhook_hears(hook, *, kind, queue=""):
    """Whether `hook` receives an alert of `kind` about `queue`: one of its events (or it names
    none), about one of its queues (or it names none). A pager also receives the events that
    close the incidents its events open: a queue re-enabled resolves the page of its disabling."""
    if hook.queues and queue and queue not in hook.queues:
        return False
    if not hook.kinds or kind in hook.kinds:
        return True
    return hook.format == Webhook.PAGERDUTY and any(k in hook.kinds for k in E.closes(kind))


def _webhooks(alert, now):
    for hook in Webhook.objects.filter(active=True):
        if not webhook_hears(hook, kind=alert.kind, queue=alert.queue):
            continue
        yield AlertDelivery(
            alert=alert, channel=AlertDelivery.WEBHOOK, webhook=hook, address=hook.url, due_at=now
        )


# --- What people read and change -----------------------------------------------------------------


def alerts_mark_read(*, user, alert_ids=None):
    """Mark the user's console alerts read (those of `alert_ids`, or all). Returns how many."""
    unread = AlertDelivery.objects.filter(
        user=user, channel=AlertDelivery.CONSOLE, read_at__isnull=True
    )
    if alert_ids is not None:
        unread = unread.filter(alert_id__in=alert_ids)
    return unread.update(read_at=timezone.now())


def subscriptions_save(*, user, choices):
    """Save `user`'s choices {kind: (console, email, queues)} for the events they may hear of;
    audited with what changed."""
    changes = {}
    with transaction.atomic():
        current = {s.kind: s for s in Subscription.objects.filter(user=user)}
        for kind, (console, email, queues) in choices.items():
            was = current.get(kind)
            now = {"console": console, "email": email, "queues": sorted(queues)}
            if (
                was is not None
                and {"console": was.console, "email": was.email, "queues": sorted(was.queues)}
                == now
            ):
                continue
            Subscription.objects.update_or_create(user=user, kind=kind, defaults=now)
            changes[kind] = now
        if changes:
            audit_record(
                actor=user,
                action="alerts.subscriptions_changed",
                target_type="user",
                target_id=user.get_username(),
                details={"changes": changes},
            )
    return changes


def _secret_env_checked(secret_env):
    # The forms say so first; here, so that no other caller saves what sending would refuse.
    refusal = alert_secret_refusal(secret_env) if secret_env else None
    if refusal:
        raise ValidationError(f"secret_env: {refusal}")


def webhook_create(*, actor, name, url, kinds, queues, secret_env, format=Webhook.GENERIC):
    """Add a webhook. Only its URL's origin is audited: Slack's and Teams' webhook URLs carry
    their password in their path or query."""
    _secret_env_checked(secret_env)
    with transaction.atomic():
        hook = Webhook.objects.create(
            name=name,
            format=format,
            url=url,
            kinds=kinds,
            queues=queues,
            secret_env=secret_env,
            created_by=actor,
        )
        audit_record(
            actor=actor,
            action="alerts.webhook_created",
            target_type="webhook",
            target_id=name,
            details={
                "format": format,
                "url": url_redacted(url),
                "kinds": kinds,
                "queues": queues,
                "secret_env": secret_env,
            },
        )
    return hook


def webhook_update(*, actor, webhook, url, kinds, queues, secret_env):
    """Change a webhook's address, events, queues or secret's variable; audited with what
    changed (the URL by its origin). Returns {field: new value} of what changed."""
    wanted = {"url": url, "kinds": kinds, "queues": queues, "secret_env": secret_env}
    changed = {k: v for k, v in wanted.items() if getattr(webhook, k) != v}
    if not changed:
        return {}
    if "secret_env" in changed:
        _secret_env_checked(secret_env)
    with transaction.atomic():
        Webhook.objects.filter(pk=webhook.pk).update(**changed)
        audit_record(
            actor=actor,
            action="alerts.webhook_changed",
            target_type="webhook",
            target_id=webhook.name,
            details={k: url_redacted(v) if k == "url" else v for k, v in changed.items()},
        )
    for field, value in changed.items():
        setattr(webhook, field, value)
    return changed


def webhook_switch(*, actor, webhook, active):
    """Enable or disable a webhook; False if it already was. One whose secret_env names a
    variable alerts may not read is not enabled (ValidationError): it would send nothing."""
    if active and webhook.format in Webhook.WITH_SECRET:
        _secret_env_checked(webhook.secret_env)
    with transaction.atomic():
        switched = Webhook.objects.filter(pk=webhook.pk, active=not active).update(
            active=active, disabled_reason=""
        )
        if not switched:
            return False
        audit_record(
            actor=actor,
            action="alerts.webhook_enabled" if active else "alerts.webhook_disabled",
            target_type="webhook",
            target_id=webhook.name,
        )
    return True


def threshold_set(*, actor, queue, count, window_hours):
    with transaction.atomic():
        InflowThreshold.objects.update_or_create(
            queue=queue,
            defaults={"count": count, "window_hours": window_hours, "updated_by": actor},
        )
        audit_record(
            actor=actor,
            action="alerts.threshold_set",
            target_type="queue",
            target_id=queue,
            details={"count": count, "window_hours": window_hours},
        )


def threshold_remove(*, actor, queue):
    with transaction.atomic():
        if not InflowThreshold.objects.filter(queue=queue).delete()[0]:
            return False
        audit_record(
            actor=actor, action="alerts.threshold_removed", target_type="queue", target_id=queue
        )
    return True


def delivery_retry(*, actor, delivery):
    """Send a failed delivery again, now, with a fresh count of attempts."""
    with transaction.atomic():
        if not AlertDelivery.objects.filter(pk=delivery.pk, state=AlertDelivery.FAILED).update(
            state=AlertDelivery.PENDING, due_at=timezone.now(), attempts=0
        ):
            return False
        audit_record(
            actor=actor,
            action="alerts.delivery_retried",
            target_type="alert_delivery",
            target_id=delivery.pk,
            details={"channel": delivery.channel, "address": delivery.address_shown},
        )
    return True


def backoff(attempts):
    """How long after its `attempts`-th failed attempt a delivery is tried again."""
    return timedelta(seconds=min(3600, 30 * 2 ** max(0, attempts - 1)))
