"""`manage.py check --deploy`: what configuration names that it may not read (console.envnames,
R19). Saving refuses each of these; what was saved before the rule (or before a setting changed)
is said here, each naming the row and the variable:

- secrets.W001: ALERTS_SECRET_ENV_ALLOWED lists one of the product's own variables, which no
  list makes allowed;
- secrets.W002: a webhook still enabled whose secret_env alerts may not read (it sends nothing:
  each delivery fails, saying why);
- secrets.W003: a queue whose handler options name one of the product's own variables;
- secrets.W004: a broker source whose url_env does (its consumer refuses to connect).

The database is read only when it answers: on a database not migrated yet there is nothing to
say about rows."""

import contextlib

from django.conf import settings
from django.core.checks import Warning
from django.db import DatabaseError

from console.alerts.models import Webhook
from console.envnames import alert_secret_refusal, handler_options_refusals, product_refusal
from console.queues.models import BrokerSource, Queue


def _listed_refusals():
    return [
        Warning(
            f"ALERTS_SECRET_ENV_ALLOWED lists {name}: {refusal}.",
            hint=f"Take {name} out of ALERTS_SECRET_ENV_ALLOWED; give the webhook's secret a "
            "variable of its own (ANTIDOTE_ALERT_...).",
            id="secrets.W001",
        )
        for name in settings.ALERTS_SECRET_ENV_ALLOWED
        if (refusal := alert_secret_refusal(name))
    ]


def _row_refusals():
    found = []
    hooks = Webhook.objects.filter(active=True, format__in=Webhook.WITH_SECRET)
    for hook in hooks.exclude(secret_env="").order_by("name"):
        refusal = alert_secret_refusal(hook.secret_env)
        if refusal:
            found.append(
                Warning(
                    f"Webhook {hook.name!r} names secret_env {hook.secret_env}: {refusal}.",
                    hint="Name a variable starting with ANTIDOTE_ALERT_ on the alerts' outbox "
                    "page (or PATCH /api/v1/alerts/webhooks/<id>); until then it sends nothing.",
                    id="secrets.W002",
                )
            )
    for queue in Queue.objects.order_by("name"):
        for refusal in handler_options_refusals(queue.handler_options):
            found.append(
                Warning(
                    f"Queue {queue.name!r}'s handler_options: {refusal}.",
                    hint="Name a variable of its own in the queue file and load it again.",
                    id="secrets.W003",
                )
            )
    for source in BrokerSource.objects.order_by("name"):
        refusal = product_refusal(source.url_env)
        if refusal:
            found.append(
                Warning(
                    f"Broker source {source.name!r}'s url_env: {refusal}.",
                    hint="Name a variable of its own in the queue file and load it again; "
                    "its consumer does not connect until then.",
                    id="secrets.W004",
                )
            )
    return found


def named_variables_check(app_configs=None, **kwargs):
    found = _listed_refusals()
    # No tables yet (a fresh database): no rows to speak of.
    with contextlib.suppress(DatabaseError):
        found += _row_refusals()
    return found
