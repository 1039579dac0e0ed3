"""The shapes of /api/v1/requests and /api/v1/notifications (console.decisions.apis) as DRF
serializers: what a request is asked with and answered as, the outcome of one, the error
notifications. The schema's examples and decorations are in console.decisions.api_schema."""

import base64
import binascii
import hashlib

from django.core.exceptions import ValidationError as DjangoValidationError
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from console.api import optional_comment
from console.decisions import services
from console.decisions.edit_serializers import (
    EditsSerializer,
    edited_headers_field,
    json_body_check,
    patch_field,
)
from console.decisions.forms import (
    COMMENT_MAX,
    ERROR_CODE_MAX,
    ERROR_DESCRIPTION_MAX,
    MAX_ID,
    MAX_RATE,
    REQUESTS_PAGE_MAX,
    SCOPE_KINDS,
    TEXT_MAX,
    filter_scope,
)
from console.decisions.models import ActionRequest as R
from console.decisions.outcome import outcome_available
from console.decisions.overlaps import COMPARED_MAX
from console.decisions.scope import MAX_SELECTION, ScopeError
from console.decisions.targets import REDRIVE_TARGET_KEYS, redrive_target_clean

# --- A request ------------------------------------------------------------------------------------


class ScopeSerializer(serializers.Serializer):
    """What a request acts on: the quarantined (NDLV) messages among those the scope names,
    frozen into an exact id set when the request is made. Give `kind` and its one field."""

    kind = serializers.ChoiceField(choices=SCOPE_KINDS)
    id = serializers.CharField(required=False, max_length=TEXT_MAX, help_text="kind message")
    ids = serializers.ListField(
        child=serializers.CharField(max_length=TEXT_MAX),
        required=False,
        min_length=1,
        max_length=MAX_SELECTION,
        help_text="kind selection: message ids",
    )
    group = serializers.CharField(
        required=False, max_length=TEXT_MAX, help_text="kind group: a failure group's fingerprint"
    )
    filters = serializers.DictField(
        child=serializers.CharField(allow_blank=True, max_length=TEXT_MAX),
        required=False,
        help_text="kind filter: the message browser's filters (queue, state, group, "
        "exception_type, since, until, sender, conversation, candidate, q)",
    )
    query = serializers.IntegerField(
        required=False, min_value=1, max_value=MAX_ID, help_text="kind lake_query: its number"
    )
    request = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_ID,
        help_text="kind failed_again: an earlier request's number; the messages it decided "
        "that are quarantined again",
    )

    _FIELD = {
        "message": "id",
        "selection": "ids",
        "group": "group",
        "filter": "filters",
        "lake_query": "query",
        "failed_again": "request",
    }

    class Meta:
        ref_name = "Scope"

    def validate(self, data):
        kind = data["kind"]
        field = self._FIELD[kind]
        if field not in data:
            raise serializers.ValidationError({field: f"a {kind} scope needs `{field}`"})
        others = sorted(set(data) - {"kind", field})
        if others:
            raise serializers.ValidationError(f"a {kind} scope takes only `{field}`, not {others}")
        if kind == "filter":
            try:
                return filter_scope({k: v for k, v in data["filters"].items() if v})
            except ScopeError as exc:
                raise serializers.ValidationError({"filters": str(exc)}) from None
        return {"kind": kind, field: data[field]}


@extend_schema_field(OpenApiTypes.URI_REF)
class RequestUrlField(serializers.Field):
    """The API's path of the request whose number the field's source holds."""

    def __init__(self, **kwargs):
        super().__init__(read_only=True, **kwargs)

    def to_representation(self, value):
        return reverse("api-request-detail", args=[value])


class ProgressSerializer(serializers.Serializer):
    percent = serializers.IntegerField(
        source="progress", help_text="Share of the frozen set dealt with, 0 to 100."
    )
    done = serializers.IntegerField(help_text="Decided.")
    skipped = serializers.IntegerField(help_text="Changed since the request: no longer NDLV.")
    failed = serializers.IntegerField(help_text="Could not be decided (see `error`).")
    chunks_done = serializers.IntegerField()
    chunks_total = serializers.IntegerField()
    siblings_ended = serializers.IntegerField(
        help_text="End with error: other messages of the conversations, ended too."
    )
    notifications = serializers.IntegerField(help_text="Error notifications sent to senders.")

    class Meta:
        ref_name = "ActionRequestProgress"


class RequestSummarySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    action = serializers.ChoiceField(choices=R.ACTIONS)
    status = serializers.ChoiceField(choices=R.STATUSES)
    count = serializers.IntegerField(help_text="How many messages the frozen set holds.")
    ids_sha256 = serializers.CharField(help_text="SHA-256 of the sorted ids, one a line.")
    requester = serializers.CharField(source="requester.get_username")
    created_at = serializers.DateTimeField()
    comment = serializers.CharField()
    needs_approval = serializers.BooleanField()
    approval_reason = serializers.CharField(
        help_text="Why a second person must approve (R17), in words; empty when no one must."
    )
    decided_by = serializers.CharField(
        source="decided_by.get_username", default=None, allow_null=True
    )
    decided_at = serializers.DateTimeField(allow_null=True)
    expires_at = serializers.DateTimeField(
        allow_null=True, help_text="The approval is good until then."
    )
    progress = ProgressSerializer(source="*")
    url = RequestUrlField(source="id")

    class Meta:
        ref_name = "ActionRequestSummary"


class SampleSerializer(serializers.Serializer):
    message_id = serializers.CharField()
    queue = serializers.CharField()
    reason = serializers.CharField()
    last_failure_at = serializers.DateTimeField(allow_null=True)

    class Meta:
        ref_name = "ActionRequestSampleRow"


class BreakdownSerializer(serializers.Serializer):
    queues = serializers.DictField(child=serializers.IntegerField(), help_text="Messages by queue.")
    groups = serializers.DictField(
        child=serializers.IntegerField(), help_text="Messages by failure group fingerprint."
    )

    class Meta:
        ref_name = "ActionRequestBreakdown"


class AuditEntrySerializer(serializers.Serializer):
    seq = serializers.IntegerField()
    at = serializers.DateTimeField()
    actor = serializers.CharField()
    action = serializers.CharField()
    details = serializers.JSONField()

    class Meta:
        ref_name = "ActionRequestAuditEntry"


class StepSerializer(serializers.Serializer):
    step = serializers.IntegerField(help_text="From 1.")
    size = serializers.IntegerField(help_text="Messages of the frozen set in this step.")
    status = serializers.ChoiceField(
        choices=["waiting", "watching", "passed", "failed", "reprocessed", "not run"],
        help_text="watching: committed, its messages' delivery outcome awaited; reprocessed: "
        "committed and not watched (nothing came after it, or nothing was reprocessed).",
    )
    reprocessed = serializers.IntegerField(allow_null=True)
    delivered = serializers.IntegerField(
        allow_null=True, help_text="Reached a final state without failing again."
    )
    refailed = serializers.IntegerField(
        allow_null=True, help_text="Failed an attempt again: back in WAIT or NDLV."
    )
    pending = serializers.IntegerField(allow_null=True, help_text="No outcome yet.")
    rate = serializers.FloatField(allow_null=True, help_text="Re-failure rate, percent.")
    reasons = serializers.ListField(
        child=serializers.ListField(),
        help_text="The main new failure reasons: [reason, messages], most first.",
    )

    class Meta:
        ref_name = "ActionRequestStep"


class OverlapSerializer(serializers.Serializer):
    request = serializers.IntegerField(source="request_id", help_text="The other request.")
    status = serializers.ChoiceField(choices=R.STATUSES)
    shared = serializers.IntegerField(
        help_text="How many of this request's frozen messages it holds too."
    )
    url = RequestUrlField(source="request_id")

    class Meta:
        ref_name = "ActionRequestOverlap"


class RedriveTargetSerializer(serializers.Serializer):
    """A reprocess's own redrive target: where each broker's sink sends the messages instead of
    their origin. Give the keys of the brokers concerned; the others' sinks keep the origin."""

    exchange = serializers.CharField(
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        max_length=REDRIVE_TARGET_KEYS["exchange"],
        help_text='RabbitMQ: publish to this exchange ("" for the default exchange), with '
        "routing_key.",
    )
    routing_key = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=REDRIVE_TARGET_KEYS["routing_key"],
        help_text="RabbitMQ: with this routing key.",
    )
    subject = serializers.CharField(
        required=False,
        max_length=REDRIVE_TARGET_KEYS["subject"],
        help_text="NATS JetStream: publish on this subject.",
    )
    stream = serializers.CharField(
        required=False,
        max_length=REDRIVE_TARGET_KEYS["stream"],
        help_text="Redis Streams: XADD to this stream.",
    )
    url = serializers.CharField(
        required=False,
        max_length=REDRIVE_TARGET_KEYS["url"],
        help_text="HTTP delivery: POST to this http:// or https:// URL.",
    )

    class Meta:
        ref_name = "RedriveTarget"

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(str(key) for key in data if key not in REDRIVE_TARGET_KEYS)
            if unknown:
                raise serializers.ValidationError(
                    f"unknown key(s) {', '.join(unknown)}; use {', '.join(REDRIVE_TARGET_KEYS)}"
                )
        value = super().to_internal_value(data)
        try:
            return redrive_target_clean(dict(value))
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.messages) from None


class RequestSerializer(RequestSummarySerializer, EditsSerializer):
    """Everything the request page shows."""

    scope = ScopeSerializer(help_text="The scope as asked.")
    target_queue = serializers.CharField(help_text="Reprocess in this queue; empty: its own.")
    redrive_target = RedriveTargetSerializer(
        allow_null=True, help_text="Reprocess only: where the sinks send it; null: its origin."
    )
    error_code = serializers.CharField()
    error_description = serializers.CharField()
    rate_limit = serializers.IntegerField(allow_null=True, help_text="Messages a second.")
    canary = serializers.IntegerField(help_text="The first step's size; 0 without steps.")
    steps = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="Progressive redrive: messages per step, then the rest; empty: all at once.",
    )
    refailure_threshold = serializers.FloatField(
        help_text="Percent of a step's messages that may fail again for the next step to go."
    )
    step_now = serializers.IntegerField(
        allow_null=True, help_text="The step being carried out or watched, from 1."
    )
    progression = StepSerializer(many=True, help_text="Each step and what became of it.")
    edited_body_size = serializers.SerializerMethodField()
    edited_body_sha256 = serializers.SerializerMethodField()
    edited_body_base64 = serializers.SerializerMethodField()
    breakdown = BreakdownSerializer()
    sample = SampleSerializer(many=True)
    ids = serializers.SerializerMethodField()
    outcome = serializers.SerializerMethodField()
    decision_comment = serializers.CharField()
    # Break-glass (R17): who executed it alone, when, why, and someone else's review of it.
    break_glass_by = serializers.CharField(
        source="break_glass_by.get_username",
        default=None,
        allow_null=True,
        help_text="Who executed it alone (break-glass); null when it was not.",
    )
    break_glass_at = serializers.DateTimeField(allow_null=True)
    break_glass_reason = serializers.CharField()
    review_due_at = serializers.DateTimeField(
        allow_null=True, help_text="Someone else reviews the break-glass decision by then."
    )
    review_overdue = serializers.SerializerMethodField()
    reviewed_by = serializers.CharField(
        source="reviewed_by.get_username", default=None, allow_null=True
    )
    reviewed_at = serializers.DateTimeField(allow_null=True)
    review_agrees = serializers.BooleanField(
        allow_null=True, help_text="The review: true agrees, false disagrees; null before it."
    )
    review_comment = serializers.CharField(help_text="Why the reviewer disagrees (or a note).")
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    cancel_requested = serializers.BooleanField()
    cancelled_by = serializers.CharField(
        source="cancelled_by.get_username", default=None, allow_null=True
    )
    canary_result = serializers.CharField()
    error = serializers.CharField()
    audit = AuditEntrySerializer(many=True, source="audit_entries")
    # Told while the request waits for approval (console.decisions.overlaps); null otherwise.
    overlaps = OverlapSerializer(
        source="overlaps.rows",
        many=True,
        allow_null=True,
        help_text="While pending: the other open requests (not final) that hold some of its "
        "frozen messages, by number; whichever runs later skips them. Null otherwise.",
    )
    overlaps_total = serializers.IntegerField(
        source="overlaps.total",
        allow_null=True,
        help_text="While pending: how many of its frozen messages at least one other open "
        "request holds. Null otherwise.",
    )
    overlaps_not_compared = serializers.IntegerField(
        source="overlaps.not_compared",
        allow_null=True,
        help_text=f"Older open requests not compared: only the newest {COMPARED_MAX} are.",
    )
    overlaps_unknown = serializers.ListField(
        child=serializers.IntegerField(),
        source="overlaps.unknown",
        allow_null=True,
        help_text="Open requests whose frozen ids could not be read in order, not compared.",
    )

    class Meta:
        ref_name = "ActionRequest"

    @extend_schema_field(
        {
            "type": "boolean",
            "description": "A break-glass decision not reviewed by its due time.",
        }
    )
    def get_review_overdue(self, r):
        due = r.review_due_at
        return due is not None and r.reviewed_at is None and due <= timezone.now()

    @extend_schema_field({"type": "integer", "nullable": True})
    def get_edited_body_size(self, r):
        return None if r.edited_body is None else len(r.edited_body)

    @extend_schema_field({"type": "string", "nullable": True})
    def get_edited_body_sha256(self, r):
        return None if r.edited_body is None else hashlib.sha256(bytes(r.edited_body)).hexdigest()

    @extend_schema_field(
        {
            "type": "string",
            "format": "byte",
            "nullable": True,
            "description": "The edited body, when asked for with `body=true` by a caller who "
            "may read bodies.",
        }
    )
    def get_edited_body_base64(self, r):
        if r.edited_body is None or not self.context.get("with_body"):
            return None
        return base64.b64encode(bytes(r.edited_body)).decode()

    @extend_schema_field(
        {"type": "string", "format": "uri-reference", "description": "The frozen ids as text."}
    )
    def get_ids(self, r):
        return reverse("api-request-ids", args=[r.id])

    @extend_schema_field(
        {
            "type": "string",
            "format": "uri-reference",
            "nullable": True,
            "description": "Where its messages are now (delivered, failed again...), once it "
            "has decided some.",
        }
    )
    def get_outcome(self, r):
        return reverse("api-request-outcome", args=[r.id]) if outcome_available(r) else None


# --- Asking and deciding -------------------------------------------------------------------------


class RequestFilterSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=R.STATUSES, required=False)
    show = serializers.ChoiceField(
        choices=[("waiting", "waiting for my approval"), ("mine", "mine")],
        required=False,
        help_text="waiting: pending, someone else's, and you may approve; mine: yours.",
    )
    before = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    page_size = serializers.IntegerField(required=False, min_value=1, max_value=REQUESTS_PAGE_MAX)

    class Meta:
        ref_name = "ActionRequestFilters"


class RequestCreateSerializer(serializers.Serializer):
    action = serializers.ChoiceField(choices=R.ACTIONS)
    scope = ScopeSerializer()
    comment = serializers.CharField(max_length=COMMENT_MAX, help_text="Why. Required.")
    target_queue = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=100,
        help_text="Reprocess only: in this queue instead of its own.",
    )
    redrive_target = RedriveTargetSerializer(
        required=False,
        allow_null=True,
        help_text="Reprocess to a broker only: send the messages here rather than to their "
        "origin (the default): an exchange and routing key (RabbitMQ), a subject (NATS), a "
        "stream (Redis) or a URL (HTTP). A second person always approves it (R17).",
    )
    edited_body = serializers.CharField(
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        help_text="Reprocess one message only: the new body, as text (stored as UTF-8).",
    )
    edited_body_base64 = serializers.CharField(
        required=False,
        allow_blank=True,
        help_text="Reprocess one message only: the new body, as base64 (any bytes).",
    )
    edited_headers = edited_headers_field()
    patch = patch_field(required=False, allow_null=True)
    error_code = serializers.CharField(required=False, allow_blank=True, max_length=ERROR_CODE_MAX)
    error_description = serializers.CharField(
        required=False, allow_blank=True, max_length=ERROR_DESCRIPTION_MAX
    )
    rate_limit = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=MAX_RATE,
        help_text="Reprocess only: at most this many messages a second.",
    )
    canary = serializers.IntegerField(
        required=False,
        default=0,
        min_value=0,
        max_value=services.MAX_CANARY,
        help_text="Reprocess only: reprocess this many first; the rest goes only if they "
        "are delivered (the steps [canary] with a re-failure threshold of 0).",
    )
    progressive = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Reprocess only: a progressive redrive in the default steps, "
        f"{list(services.DEFAULT_STEPS)}, unless `steps` says others.",
    )
    steps = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=services.MAX_CANARY),
        required=False,
        allow_null=True,
        min_length=1,
        max_length=services.MAX_STEPS,
        help_text="Reprocess only: a progressive redrive, this many messages a step, then "
        "the rest; each next step goes only if at most `refailure_threshold` percent of "
        "the last step's messages failed again.",
    )
    refailure_threshold = serializers.FloatField(
        required=False,
        allow_null=True,
        min_value=0,
        max_value=100,
        help_text="Percent, with steps or a canary; default "
        f"{services.DEFAULT_REFAILURE_THRESHOLD:g} with steps, 0 with a canary.",
    )

    class Meta:
        ref_name = "ActionRequestCreate"

    def validate(self, data):
        if isinstance(self.initial_data.get("refailure_threshold"), bool):
            # A float field takes true for 1.0: a threshold is a number someone chose.
            raise serializers.ValidationError(
                {"refailure_threshold": "the re-failure threshold is a number (percent)"}
            )
        text = data.pop("edited_body", None)
        encoded = data.pop("edited_body_base64", None)
        if text is not None and encoded is not None:
            raise serializers.ValidationError("give edited_body or edited_body_base64, not both")
        if text is not None:
            data["edited_body"] = text.encode("utf-8")
        elif encoded is not None:
            try:
                data["edited_body"] = base64.b64decode(encoded, validate=True)
            except (binascii.Error, ValueError):
                raise serializers.ValidationError(
                    {"edited_body_base64": "this is not base64"}
                ) from None
        json_body_check(data, "edited_body" if text is not None else "edited_body_base64")
        return data


class PatchPreviewInputSerializer(serializers.Serializer):
    scope = ScopeSerializer(help_text="What the request would act on.")
    patch = patch_field()

    class Meta:
        ref_name = "PatchPreviewInput"


class RequestQuerySerializer(serializers.Serializer):
    body = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Include the edited body (edited_body_base64) and the diffs of a bulk edit's "
        "preview; needs the permission to read bodies, and the read is audited.",
    )

    class Meta:
        ref_name = "ActionRequestQuery"


class CommentSerializer(serializers.Serializer):
    comment = optional_comment(COMMENT_MAX, default="")

    class Meta:
        ref_name = "ActionRequestComment"


class BreakGlassSerializer(serializers.Serializer):
    # Blank is for the service to refuse, in its words.
    reason = serializers.CharField(
        allow_blank=True, max_length=COMMENT_MAX, help_text="Why, now. Required."
    )
    confirm = serializers.BooleanField(
        help_text="true: you know what happens. The messages are decided now without a "
        "second person's approval; every other approver and administrator is told at once, "
        "and someone else must review it within BREAK_GLASS_REVIEW_HOURS."
    )

    class Meta:
        ref_name = "ActionRequestBreakGlass"


class ReviewSerializer(serializers.Serializer):
    agrees = serializers.BooleanField(help_text="true: you agree; false: you disagree.")
    comment = optional_comment(
        COMMENT_MAX, default="", help_text="Why: required when you disagree."
    )

    class Meta:
        ref_name = "ActionRequestReview"
