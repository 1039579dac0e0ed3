"""The alerts' screens: the bell's page (one's own alerts), what one hears of, and, for
administrators, the outbox, webhooks and inflow thresholds."""

from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from console.alerts import selectors, services
from console.alerts.forms import SubscriptionsForm, ThresholdForm, WebhookEditForm, WebhookForm
from console.alerts.models import AlertDelivery, Webhook
from console.permissions import MANAGE_ALERTS, perms_required

PAGE_SIZE = 50


@require_GET
@login_required
def alert_list(request):
    """One's alerts, newest first. Those on the page shown are read by being shown."""
    page = Paginator(selectors.inbox(user=request.user), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    unread = {d.alert_id for d in page if d.read_at is None}
    if unread:
        services.alerts_mark_read(user=request.user, alert_ids=unread)
    return render(request, "alerts/alert_list.html", {"page": page, "unread": unread})


@require_POST
@login_required
def alert_read_all(request):
    services.alerts_mark_read(user=request.user)
    return redirect("alert-list")


@require_http_methods(["GET", "POST"])
@login_required
def alert_settings(request):
    rows = selectors.subscriptions_of(request.user)
    posted = request.method == "POST"
    form = SubscriptionsForm(request.POST if posted else None, rows=rows)
    if posted and form.is_valid():
        changed = services.subscriptions_save(user=request.user, choices=form.choices())
        messages.success(request, "Saved." if changed else "Nothing changed.")
        return redirect("alert-settings")
    return render(
        request, "alerts/alert_settings.html", {"form": form}, status=400 if form.errors else 200
    )


def _outbox_change(view):
    """A change posted from the outbox page, by someone signed in who manages alerts: back to
    the outbox afterwards, unless the view answers otherwise."""

    @require_POST
    @login_required
    @perms_required(MANAGE_ALERTS)
    @wraps(view)
    def posted(request, *args, **kwargs):
        return view(request, *args, **kwargs) or redirect("alert-outbox")

    return posted


def _outbox(request, *, webhook_form=None, threshold_form=None, status=200):
    state = request.GET.get("state", "")
    state = state if state in selectors.OUTBOX_STATES else ""
    page = Paginator(selectors.outbox(state=state), PAGE_SIZE).get_page(request.GET.get("page"))
    ctx = {
        "page": page,
        "state": state,
        "counts": selectors.outbox_counts(),
        "webhooks": selectors.webhooks(),
        "thresholds": selectors.thresholds(),
        "webhook_form": webhook_form or WebhookForm(),
        "threshold_form": threshold_form or ThresholdForm(),
    }
    return render(request, "alerts/outbox.html", ctx, status=status)


def _outbox_form(form_class, name):
    """One of the outbox page's forms, posted (see _outbox_change): the view is
    `save(actor, data)`, which answers its sentence; or, when the form is not valid, the outbox
    again with the form's errors (400)."""

    def decorate(save):
        @_outbox_change
        @wraps(save)
        def posted(request):
            form = form_class(request.POST)
            if not form.is_valid():
                return _outbox(request, status=400, **{name: form})
            messages.success(request, save(request.user, form.cleaned_data))

        return posted

    return decorate


@require_GET
@login_required
@perms_required(MANAGE_ALERTS)
def outbox(request):
    return _outbox(request)


@_outbox_change
def delivery_retry(request, delivery_id):
    delivery = get_object_or_404(AlertDelivery, id=delivery_id)
    if services.delivery_retry(actor=request.user, delivery=delivery):
        messages.success(request, f"Delivery {delivery.id} will be sent again in a few seconds.")
    else:
        messages.error(request, f"Delivery {delivery.id} has not failed: nothing to send again.")


@_outbox_form(WebhookForm, "webhook_form")
def webhook_create(actor, data):
    services.webhook_create(actor=actor, **data)
    return f"Webhook {data['name']} added."


@require_http_methods(["GET", "POST"])
@login_required
@perms_required(MANAGE_ALERTS)
def webhook_edit(request, webhook_id):
    """A webhook's address, events (which alerts it is routed), queues and secret's variable."""
    hook = get_object_or_404(Webhook, id=webhook_id)
    posted = request.method == "POST"
    form = WebhookEditForm(request.POST if posted else None, webhook=hook)
    if posted and form.is_valid():
        changed = services.webhook_update(actor=request.user, webhook=hook, **form.cleaned_data)
        messages.success(request, f"Webhook {hook.name} saved." if changed else "Nothing changed.")
        return redirect("alert-outbox")
    return render(
        request,
        "alerts/webhook_edit.html",
        {"form": form, "hook": hook},
        status=400 if form.errors else 200,
    )


@_outbox_change
def webhook_switch(request, webhook_id):
    hook = get_object_or_404(Webhook, id=webhook_id)
    active = request.POST.get("active") == "1"
    try:
        services.webhook_switch(actor=request.user, webhook=hook, active=active)
    except ValidationError as exc:
        messages.error(request, f"Webhook {hook.name} stays disabled: {'; '.join(exc.messages)}")
    else:
        messages.success(request, f"Webhook {hook.name} {'enabled' if active else 'disabled'}.")


@_outbox_form(ThresholdForm, "threshold_form")
def threshold_set(actor, data):
    queue = data["queue"].name
    services.threshold_set(
        actor=actor, queue=queue, count=data["count"], window_hours=data["window_hours"]
    )
    return f"Inflow threshold of {queue} saved."


@_outbox_change
def threshold_remove(request, queue):
    if services.threshold_remove(actor=request.user, queue=queue):
        messages.success(request, f"Inflow threshold of {queue} removed.")
