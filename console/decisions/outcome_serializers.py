"""The shapes of what became of a request's messages in /api/v1/ (console.decisions.apis):
its outcome, and the error notifications sent to senders when messages were ended with an
error. A request itself is console.decisions.serializers'."""

from drf_spectacular.utils import inline_serializer
from rest_framework import serializers

from console.decisions.forms import MAX_ID, NOTIFICATIONS_PAGE_MAX, REQUESTS_PAGE_MAX, TEXT_MAX
from console.decisions.outcome import CATEGORIES

# --- Outcome -------------------------------------------------------------------------------------


class OutcomeSerializer(serializers.Serializer):
    request = serializers.IntegerField(source="request_id")
    total = serializers.IntegerField(help_text="The frozen set's count.")
    counts = inline_serializer(
        "ActionRequestOutcomeCounts",
        {name: serializers.IntegerField(help_text=label) for name, label in CATEGORIES},
    )
    states = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="The messages it decided, by their state now.",
    )
    reasons = inline_serializer(
        "ActionRequestOutcomeReason",
        {
            "exception_type": serializers.CharField(),
            "group_id": serializers.CharField(help_text="The failure group's fingerprint."),
            "pattern": serializers.CharField(allow_null=True),
            "waiting": serializers.IntegerField(help_text="In WAIT: the engine retries them."),
            "quarantined": serializers.IntegerField(help_text="In NDLV."),
        },
        many=True,
        help_text="Why those that failed again failed, most first.",
    )
    more_reasons = serializers.IntegerField()
    retryable = serializers.IntegerField(
        help_text="Quarantined again: what `retry` would reprocess."
    )
    refreshed = inline_serializer(
        "ActionRequestOutcomeRefresh",
        {
            "id": serializers.IntegerField(),
            "finished_at": serializers.DateTimeField(allow_null=True),
            "upto_commit": serializers.IntegerField(allow_null=True),
        },
        source="refresh",
        allow_null=True,
        help_text=(
            "The refresh of the read models the message index is as of; the numbers also "
            "count the events committed since (`unfolded_commits`)."
        ),
    )
    unfolded_commits = serializers.IntegerField(
        source="unfolded",
        help_text=(
            "Events commits since that refresh, not folded into the index yet (delivery runs): "
            "read beside it, so the numbers are up to date with them."
        ),
    )
    unreadable_chunks = serializers.ListField(child=serializers.IntegerField())

    class Meta:
        ref_name = "ActionRequestOutcome"


class OutcomeFilterSerializer(serializers.Serializer):
    state = serializers.ChoiceField(choices=CATEGORIES, help_text="One of the outcome's counts.")
    after = serializers.IntegerField(required=False, min_value=0, max_value=MAX_ID)
    page_size = serializers.IntegerField(required=False, min_value=1, max_value=REQUESTS_PAGE_MAX)

    class Meta:
        ref_name = "ActionRequestOutcomeFilters"


class OutcomeMessageSerializer(serializers.Serializer):
    message_id = serializers.CharField()
    indexed = serializers.BooleanField(help_text="False: the message index does not hold it.")
    queue = serializers.CharField(allow_null=True)
    state = serializers.CharField(allow_null=True)
    delivery_count = serializers.IntegerField(allow_null=True)
    last_failure_at = serializers.DateTimeField(allow_null=True)
    exception_type = serializers.CharField(allow_null=True)
    reason = serializers.CharField(allow_null=True)

    class Meta:
        ref_name = "ActionRequestOutcomeMessage"


# --- Error notifications -------------------------------------------------------------------------


class NotificationFilterSerializer(serializers.Serializer):
    sender = serializers.CharField(required=False, max_length=300)
    conversation = serializers.CharField(required=False, max_length=200)
    message_id = serializers.CharField(required=False, max_length=TEXT_MAX)
    before = serializers.CharField(required=False, max_length=TEXT_MAX)
    page_size = serializers.IntegerField(
        required=False, min_value=1, max_value=NOTIFICATIONS_PAGE_MAX
    )

    class Meta:
        ref_name = "NotificationFilters"


class NotificationSerializer(serializers.Serializer):
    message_id = serializers.CharField()
    conversation_id = serializers.CharField(allow_null=True)
    sender = serializers.CharField(allow_null=True)
    code = serializers.CharField(allow_null=True)
    description = serializers.CharField(allow_null=True)
    at = serializers.DateTimeField()
    run_id = serializers.CharField(allow_null=True)

    class Meta:
        ref_name = "ErrorNotification"
