from django import forms
from django.contrib import admin, messages

from console.audit.services import audit_record
from console.queues.models import POLICY_FIELDS, Queue
from console.queues.services import queue_reenable


class QueueForm(forms.ModelForm):
    """The model's own validators run through full_clean; this adds the one check that needs
    other rows: a queue:<name> exception destination must name another, existing queue."""

    class Meta:
        model = Queue
        fields = ("name", "enabled", "disabled_reason", *POLICY_FIELDS)

    def clean(self):
        data = super().clean()
        destination = data.get("exception_destination") or ""
        if destination.startswith("queue:"):
            target = destination[len("queue:") :]
            if target == data.get("name"):
                self.add_error(
                    "exception_destination",
                    "names the queue itself; its failed messages would cycle forever",
                )
            elif not Queue.objects.filter(name=target).exists():
                self.add_error("exception_destination", f"there is no queue named {target!r}")
        return data


@admin.register(Queue)
class QueueAdmin(admin.ModelAdmin):
    form = QueueForm
    list_display = (
        "name",
        "handler",
        "enabled",
        "max_failed_deliveries",
        "exception_destination",
        "on_permanent",
        "poison_match",
        "disable_after",
        "consecutive_failures",
        "disabled_at",
        "updated_at",
    )
    list_filter = ("enabled", "on_permanent", "poison_match", "exception_destination")
    search_fields = ("name", "handler")
    readonly_fields = ("consecutive_failures", "disabled_at", "created_at", "updated_at")
    actions = ["reenable"]
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "name",
                    "handler",
                    "handler_options",
                    "enabled",
                    "disabled_at",
                    "disabled_reason",
                )
            },
        ),
        (
            "Retries and exception destination (R3, R4)",
            {"fields": ("max_failed_deliveries", "exception_destination", "blocked_retry_timeout")},
        ),
        ("Backoff (R5)", {"fields": ("backoff_every", "backoff_delays", "periodic_interval")}),
        (
            "Permanent failures, poison list, disabling, retention (R6, R9, R11, R15)",
            {
                "fields": (
                    "on_permanent",
                    "poison_match",
                    "disable_after",
                    "consecutive_failures",
                    "retention_days",
                )
            },
        ),
        ("Edits (R13, R18)", {"fields": ("locked_headers",)}),
        ("History", {"fields": ("created_at", "updated_at")}),
    )

    def save_model(self, request, obj, form, change):
        if obj.enabled and (obj.disabled_at or obj.consecutive_failures):
            # Ticking "enabled" is re-enabling (R11): the queue starts over like with the action.
            obj.disabled_at = None
            obj.disabled_reason = ""
            obj.consecutive_failures = 0
        super().save_model(request, obj, form, change)
        if form.changed_data:
            audit_record(
                actor=request.user,
                action="policy.changed" if change else "queue.created",
                target_type="queue",
                target_id=obj.name,
                details={"changed": {f: form.cleaned_data.get(f) for f in form.changed_data}},
            )

    @admin.action(description="Re-enable the selected queues", permissions=["change"])
    def reenable(self, request, queryset):
        count = queue_reenable(
            queue_ids=list(queryset.values_list("id", flat=True)), actor=request.user
        )
        self.message_user(request, f"{count} queue(s) re-enabled.", messages.SUCCESS)
