"""/api/v1/requests and /api/v1/notifications: action requests (ask, read, approve, reject,
withdraw, cancel, the frozen ids) and the error notifications sent to senders.

Refusals are {"detail": "<one readable sentence>"}: 400 for input that is not valid (with the
messages by field in "errors" when there are some) or a request the services refuse, 403 for a
caller without the permission (a requester approving their own request too), 404 for an unknown
request, 401 without credentials."""

import base64
import binascii
import hashlib

from django.core.exceptions import ValidationError as DjangoValidationError
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    extend_schema_serializer,
    inline_serializer,
)
from rest_framework import serializers, status
from rest_framework.permissions import SAFE_METHODS
from rest_framework.response import Response
from rest_framework.views import APIView

from console.api import (
    BAD_REQUEST,
    ERRORS,
    NOT_FOUND,
    BadRequestSerializer,
    JSONParser,
    ServiceRefusals,
    answer,
)
from console.decisions import api_examples as examples
from console.decisions import selectors, services
from console.decisions.break_glass import break_glass_execute, break_glass_review
from console.decisions.forms import (
    COMMENT_MAX,
    ERROR_CODE_MAX,
    ERROR_DESCRIPTION_MAX,
    MAX_ID,
    MAX_RATE,
    NOTIFICATIONS_PAGE,
    NOTIFICATIONS_PAGE_MAX,
    REQUESTS_PAGE,
    REQUESTS_PAGE_MAX,
    SCOPE_KINDS,
    TEXT_MAX,
    filter_scope,
)
from console.decisions.models import ActionRequest as R
from console.decisions.outcome import (
    CATEGORIES,
    OutcomeUnknown,
    outcome_available,
    outcome_page,
    request_outcome,
)
from console.decisions.overlaps import COMPARED_MAX, request_overlaps
from console.decisions.scope import MAX_SELECTION, ScopeError
from console.decisions.targets import REDRIVE_TARGET_KEYS, redrive_target_clean
from console.decisions.views import frozen_ids_response, request_or_404, why
from console.permissions import (
    APPROVE_REQUESTS,
    MAKE_REQUESTS,
    VIEW_BODY,
    VIEW_MESSAGES,
    VIEW_REQUESTS,
    has_perms,
)

REFUSED = OpenApiResponse(
    BadRequestSerializer,
    description="The request is not in a state that allows this (already decided, finished...), "
    "or the input is not valid.",
    examples=[examples.REFUSED],
)
REQUEST_ID = OpenApiParameter(
    "request_id", OpenApiTypes.INT, OpenApiParameter.PATH, description="The request's number."
)


class _DecisionsApi(ServiceRefusals, APIView):
    """The services' refusals as answers (ServiceRefusals), and a ScopeError a 400 too."""

    # JSON only: a scope is nested, which a form cannot say.
    parser_classes = [JSONParser]

    def handle_exception(self, exc):
        if isinstance(exc, ScopeError):
            return Response({"detail": why(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return super().handle_exception(exc)


def _validated(serializer_class, data):
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


# --- Serializers ---------------------------------------------------------------------------------


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


class _ProgressSerializer(serializers.Serializer):
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


class _RequestSerializer(serializers.Serializer):
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
    progress = _ProgressSerializer(source="*")
    url = serializers.SerializerMethodField()

    class Meta:
        ref_name = "ActionRequestSummary"

    @extend_schema_field(OpenApiTypes.URI_REF)
    def get_url(self, r):
        return reverse("api-request-detail", args=[r.id])


class _SampleSerializer(serializers.Serializer):
    message_id = serializers.CharField()
    queue = serializers.CharField()
    reason = serializers.CharField()
    last_failure_at = serializers.DateTimeField(allow_null=True)

    class Meta:
        ref_name = "ActionRequestSampleRow"


class _BreakdownSerializer(serializers.Serializer):
    queues = serializers.DictField(child=serializers.IntegerField(), help_text="Messages by queue.")
    groups = serializers.DictField(
        child=serializers.IntegerField(), help_text="Messages by failure group fingerprint."
    )

    class Meta:
        ref_name = "ActionRequestBreakdown"


class _AuditEntrySerializer(serializers.Serializer):
    seq = serializers.IntegerField()
    at = serializers.DateTimeField()
    actor = serializers.CharField()
    action = serializers.CharField()
    details = serializers.JSONField()

    class Meta:
        ref_name = "ActionRequestAuditEntry"


class _StepSerializer(serializers.Serializer):
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


class _OverlapSerializer(serializers.Serializer):
    request = serializers.IntegerField(source="request_id", help_text="The other request.")
    status = serializers.ChoiceField(choices=R.STATUSES)
    shared = serializers.IntegerField(
        help_text="How many of this request's frozen messages it holds too."
    )
    url = serializers.SerializerMethodField()

    class Meta:
        ref_name = "ActionRequestOverlap"

    @extend_schema_field(OpenApiTypes.URI_REF)
    def get_url(self, o):
        return reverse("api-request-detail", args=[o.request_id])


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


@extend_schema_serializer(examples=[examples.REQUEST])
class RequestSerializer(_RequestSerializer):
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
    progression = _StepSerializer(many=True, help_text="Each step and what became of it.")
    edited_body_size = serializers.SerializerMethodField()
    edited_body_sha256 = serializers.SerializerMethodField()
    edited_body_base64 = serializers.SerializerMethodField()
    breakdown = _BreakdownSerializer()
    sample = _SampleSerializer(many=True)
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
    audit = _AuditEntrySerializer(many=True, source="audit_entries")
    # Told while the request waits for approval (console.decisions.overlaps); null otherwise.
    overlaps = _OverlapSerializer(
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


def _request_data(r, request, *, body=False):
    """The request as RequestSerializer says, with its audit entries; its edited body only when
    asked for (`body`) by a caller who may read bodies, and that read is recorded like any
    other body read."""
    r.audit_entries = selectors.request_audit(request_id=r.id)
    found = request_overlaps(request=r) if r.status == R.PENDING else None
    r.overlaps = found if found is not None and not found.error else None
    with_body = body and r.edited_body is not None and request.user.has_perm(VIEW_BODY)
    if with_body:
        services.action_request_edited_body_read(actor=request.user, request=r, via="api")
    return RequestSerializer(r, context={"with_body": with_body}).data


# --- Requests -----------------------------------------------------------------------------------


class RequestListApi(_DecisionsApi):
    """GET: the requests, newest first, by pages (`before` from the previous answer's
    `next_before`). POST: ask for an action; the scope is frozen into an exact id set at once."""

    class FilterSerializer(serializers.Serializer):
        status = serializers.ChoiceField(choices=R.STATUSES, required=False)
        show = serializers.ChoiceField(
            choices=[("waiting", "waiting for my approval"), ("mine", "mine")],
            required=False,
            help_text="waiting: pending, someone else's, and you may approve; mine: yours.",
        )
        before = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
        page_size = serializers.IntegerField(
            required=False, min_value=1, max_value=REQUESTS_PAGE_MAX
        )

        class Meta:
            ref_name = "ActionRequestFilters"

    @extend_schema_serializer(examples=[examples.CREATE, examples.CREATE_ELSEWHERE])
    class InputSerializer(serializers.Serializer):
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
        error_code = serializers.CharField(
            required=False, allow_blank=True, max_length=ERROR_CODE_MAX
        )
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
                raise serializers.ValidationError(
                    "give edited_body or edited_body_base64, not both"
                )
            if text is not None:
                data["edited_body"] = text.encode("utf-8")
            elif encoded is not None:
                try:
                    data["edited_body"] = base64.b64decode(encoded, validate=True)
                except (binascii.Error, ValueError):
                    raise serializers.ValidationError(
                        {"edited_body_base64": "this is not base64"}
                    ) from None
            return data

    def get_permissions(self):
        if self.request.method in SAFE_METHODS:
            return [has_perms(VIEW_REQUESTS)()]
        return [has_perms(VIEW_REQUESTS, VIEW_MESSAGES, MAKE_REQUESTS)()]

    @extend_schema(
        operation_id="requests_list",
        description="The action requests, newest first, a page at a time (`before` from the "
        "previous answer's `next_before`); `show=waiting` for those waiting for your approval.",
        parameters=[FilterSerializer],
        responses={
            200: answer(
                inline_serializer(
                    "ActionRequestPage",
                    {
                        "results": _RequestSerializer(many=True),
                        "next_before": serializers.IntegerField(
                            allow_null=True, help_text="`before` for the next (older) page."
                        ),
                    },
                ),
                examples.PAGE,
            ),
            400: BAD_REQUEST,
            **ERRORS,
        },
    )
    def get(self, request):
        filters = _validated(self.FilterSerializer, request.query_params)
        page = selectors.request_list(
            user=request.user,
            status=filters.get("status", ""),
            show=filters.get("show", ""),
            before=filters.get("before"),
            limit=filters.get("page_size") or REQUESTS_PAGE,
        )
        return Response(
            {
                "results": _RequestSerializer(page.rows, many=True).data,
                "next_before": page.next_before,
            }
        )

    @extend_schema(
        operation_id="requests_create",
        description="Ask for an action (reprocess, fail, end with error) on a scope: one "
        "message, a selection, a failure group, the browser's filters or a lake query's result. "
        "The scope is frozen at once into the exact ids of the quarantined messages it matches. "
        "`needs_approval` and `approval_reason` say whether a second person must approve it "
        "(R17); otherwise it starts.",
        request=InputSerializer,
        responses={201: RequestSerializer, 400: BAD_REQUEST, **ERRORS},
    )
    def post(self, request):
        data = _validated(self.InputSerializer, request.data)
        created = services.action_request_create(
            actor=request.user,
            scope=data["scope"],
            action=services.Action(
                kind=data["action"],
                target_queue=data.get("target_queue", ""),
                redrive_target=data.get("redrive_target"),
                edited_body=data.get("edited_body"),
                error_code=data.get("error_code", ""),
                error_description=data.get("error_description", ""),
            ),
            comment=data["comment"],
            rate_limit=data.get("rate_limit"),
            canary=data["canary"],
            steps=data.get("steps")
            or (list(services.DEFAULT_STEPS) if data["progressive"] else None),
            refailure_threshold=data.get("refailure_threshold"),
        )
        return Response(
            _request_data(selectors.request_get(request_id=created.id), request),
            status=status.HTTP_201_CREATED,
            headers={"Location": reverse("api-request-detail", args=[created.id])},
        )


class RequestDetailApi(_DecisionsApi):
    """One request: the action, the scope as asked and as frozen (count, breakdown, sample,
    hash), the approval, the execution's progress and the audit entries."""

    permission_classes = [has_perms(VIEW_REQUESTS)]

    class QuerySerializer(serializers.Serializer):
        body = serializers.BooleanField(
            required=False,
            default=False,
            help_text="Include the edited body (edited_body_base64); needs the permission to "
            "read bodies, and the read is audited.",
        )

        class Meta:
            ref_name = "ActionRequestQuery"

    @extend_schema(
        operation_id="requests_retrieve",
        parameters=[REQUEST_ID, QuerySerializer],
        responses={200: RequestSerializer, 400: BAD_REQUEST, 404: NOT_FOUND, **ERRORS},
    )
    def get(self, request, request_id):
        r = request_or_404(request_id)
        query = _validated(self.QuerySerializer, request.query_params)
        return Response(_request_data(r, request, body=query["body"]))


@extend_schema_serializer(examples=[examples.COMMENT])
class _CommentSerializer(serializers.Serializer):
    comment = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=COMMENT_MAX
    )

    class Meta:
        ref_name = "ActionRequestComment"


def _decision_schema(operation_id, description):
    return extend_schema(
        operation_id=operation_id,
        description=description,
        parameters=[REQUEST_ID],
        request=_CommentSerializer,
        responses={200: RequestSerializer, 400: REFUSED, 404: NOT_FOUND, **ERRORS},
    )


class _DecisionApi(_DecisionsApi):
    service = None

    def _decide(self, request, request_id):
        r = request_or_404(request_id)
        data = _validated(_CommentSerializer, request.data)
        r = type(self).service(actor=request.user, request=r, comment=data["comment"])
        return Response(_request_data(selectors.request_get(request_id=r.id), request))


class RequestApproveApi(_DecisionApi):
    permission_classes = [has_perms(VIEW_REQUESTS, APPROVE_REQUESTS)]
    service = services.action_request_approve

    @_decision_schema(
        "requests_approve",
        "Approve the frozen set exactly as it is. Four eyes: the requester gets 403.",
    )
    def post(self, request, request_id):
        return self._decide(request, request_id)


class RequestRejectApi(_DecisionApi):
    permission_classes = [has_perms(VIEW_REQUESTS, APPROVE_REQUESTS)]
    service = services.action_request_reject

    @_decision_schema("requests_reject", "Reject a pending request; the comment (why) is required.")
    def post(self, request, request_id):
        return self._decide(request, request_id)


class RequestWithdrawApi(_DecisionApi):
    permission_classes = [has_perms(VIEW_REQUESTS)]
    service = services.action_request_withdraw

    @_decision_schema(
        "requests_withdraw", "The requester takes back a request that has not started."
    )
    def post(self, request, request_id):
        return self._decide(request, request_id)


class RequestCancelApi(_DecisionApi):
    permission_classes = [has_perms(VIEW_REQUESTS)]
    service = services.action_request_cancel

    @_decision_schema(
        "requests_cancel",
        "The requester or an approver stops an approved or running request: at once if it has "
        "not started or waits for its canary, otherwise before its next chunk.",
    )
    def post(self, request, request_id):
        return self._decide(request, request_id)


class RequestBreakGlassApi(_DecisionsApi):
    """Break-glass (R17): execute a pending request alone, in an emergency."""

    permission_classes = [has_perms(VIEW_REQUESTS, APPROVE_REQUESTS)]

    @extend_schema_serializer(examples=[examples.BREAK_GLASS])
    class InputSerializer(serializers.Serializer):
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

    @extend_schema(
        operation_id="requests_break_glass",
        description="Approve a pending request alone and start it: an approver or an administrator "
        "(its requester too), only when an administrator has turned BREAK_GLASS on (403 "
        "otherwise). The reason is required, and `confirm` must be true.",
        parameters=[REQUEST_ID],
        request=InputSerializer,
        responses={200: RequestSerializer, 400: REFUSED, 404: NOT_FOUND, **ERRORS},
    )
    def post(self, request, request_id):
        r = request_or_404(request_id)
        data = _validated(self.InputSerializer, request.data)
        r = break_glass_execute(
            actor=request.user, request=r, reason=data["reason"], confirm=data["confirm"]
        )
        return Response(_request_data(selectors.request_get(request_id=r.id), request))


class RequestReviewApi(_DecisionsApi):
    """Review a break-glass decision: agree, or disagree and say why."""

    # Approvers and administrators review (the service checks who: not the one who broke the
    # glass, not the requester).
    permission_classes = [has_perms(VIEW_REQUESTS)]

    @extend_schema_serializer(examples=[examples.REVIEW])
    class InputSerializer(serializers.Serializer):
        agrees = serializers.BooleanField(help_text="true: you agree; false: you disagree.")
        comment = serializers.CharField(
            required=False,
            allow_blank=True,
            default="",
            max_length=COMMENT_MAX,
            help_text="Why: required when you disagree.",
        )

        class Meta:
            ref_name = "ActionRequestReview"

    @extend_schema(
        operation_id="requests_review",
        description="Someone else's review of a break-glass decision, once: an approver or an "
        "administrator who neither broke the glass nor asked for the request.",
        parameters=[REQUEST_ID],
        request=InputSerializer,
        responses={200: RequestSerializer, 400: REFUSED, 404: NOT_FOUND, **ERRORS},
    )
    def post(self, request, request_id):
        r = request_or_404(request_id)
        data = _validated(self.InputSerializer, request.data)
        r = break_glass_review(
            actor=request.user, request=r, agrees=data["agrees"], comment=data["comment"]
        )
        return Response(_request_data(selectors.request_get(request_id=r.id), request))


class RequestIdsApi(_DecisionsApi):
    """The frozen ids, one a line, in order: `sha256sum` of the answer is `ids_sha256`."""

    permission_classes = [has_perms(VIEW_REQUESTS)]

    def perform_content_negotiation(self, request, force=False):
        # Text whatever the client accepts (JSON only for a refusal): no 406.
        return super().perform_content_negotiation(request, force=True)

    @extend_schema(
        operation_id="requests_ids",
        parameters=[REQUEST_ID],
        responses={
            (200, "text/plain"): answer(OpenApiTypes.STR, examples.IDS, "One id a line."),
            404: NOT_FOUND,
            **ERRORS,
        },
    )
    def get(self, request, request_id):
        return frozen_ids_response(request_or_404(request_id))


# --- Outcome ------------------------------------------------------------------------------------


class _OutcomeApi(_DecisionsApi):
    def handle_exception(self, exc):
        if isinstance(exc, OutcomeUnknown):
            return Response({"detail": str(exc)}, status=status.HTTP_404_NOT_FOUND)
        return super().handle_exception(exc)


class RequestOutcomeApi(_OutcomeApi):
    """Where the messages of a request are now: of its frozen set, how many are delivered, failed
    again (with why, by exception type and failure group), still on their way, failed or ended
    for good, gone from the index, or were not decided by it. They add up to `total`. Read from
    the message index, as of the refresh it names. 404 before the request has decided any."""

    permission_classes = [has_perms(VIEW_REQUESTS)]

    class OutputSerializer(serializers.Serializer):
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
            help_text="The refresh of the read models the numbers are as of.",
        )
        unfolded_commits = serializers.IntegerField(
            source="unfolded", help_text="Events commits since, not folded into the index yet."
        )
        unreadable_chunks = serializers.ListField(child=serializers.IntegerField())

        class Meta:
            ref_name = "ActionRequestOutcome"

    @extend_schema(
        operation_id="requests_outcome",
        parameters=[REQUEST_ID],
        responses={200: answer(OutputSerializer, examples.OUTCOME), 404: NOT_FOUND, **ERRORS},
    )
    def get(self, request, request_id):
        r = request_or_404(request_id)
        outcome = request_outcome(request=r)
        outcome.request_id = r.id
        return Response(self.OutputSerializer(outcome).data)


class RequestOutcomeMessagesApi(_OutcomeApi):
    """The messages behind one of the outcome's numbers, in the frozen order, a page at a time
    (`after` from the previous answer's `next_after`)."""

    permission_classes = [has_perms(VIEW_REQUESTS, VIEW_MESSAGES)]

    class FilterSerializer(serializers.Serializer):
        state = serializers.ChoiceField(
            choices=CATEGORIES, help_text="One of the outcome's counts."
        )
        after = serializers.IntegerField(required=False, min_value=0, max_value=MAX_ID)
        page_size = serializers.IntegerField(
            required=False, min_value=1, max_value=REQUESTS_PAGE_MAX
        )

        class Meta:
            ref_name = "ActionRequestOutcomeFilters"

    class RowSerializer(serializers.Serializer):
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

    @extend_schema(
        operation_id="requests_outcome_messages",
        parameters=[REQUEST_ID, FilterSerializer],
        responses={
            200: answer(
                inline_serializer(
                    "ActionRequestOutcomePage",
                    {
                        "results": RowSerializer(many=True),
                        "next_after": serializers.IntegerField(
                            allow_null=True, help_text="`after` for the next page."
                        ),
                    },
                ),
                examples.OUTCOME_PAGE,
            ),
            400: BAD_REQUEST,
            404: NOT_FOUND,
            **ERRORS,
        },
    )
    def get(self, request, request_id):
        r = request_or_404(request_id)
        filters = _validated(self.FilterSerializer, request.query_params)
        page = outcome_page(
            request=r,
            category=filters["state"],
            after=filters.get("after", -1),
            size=filters.get("page_size") or REQUESTS_PAGE,
        )
        fields = ("queue", "state", "delivery_count", "last_failure_at", "exception_type", "reason")
        rows = [
            {
                "message_id": message_id,
                "indexed": m is not None,
                **{name: getattr(m, name) if m is not None else None for name in fields},
            }
            for message_id, m in page.rows
        ]
        return Response(
            {"results": self.RowSerializer(rows, many=True).data, "next_after": page.next_after}
        )


class RequestRetryApi(_DecisionsApi):
    """Retry the ones that failed again: a new reprocess request whose scope is the messages
    this request decided that are quarantined again (`{"kind": "failed_again", "request": id}`),
    frozen now and approved like any other request."""

    permission_classes = [has_perms(VIEW_REQUESTS, VIEW_MESSAGES, MAKE_REQUESTS)]

    @extend_schema(
        operation_id="requests_retry",
        parameters=[REQUEST_ID],
        request=_CommentSerializer,
        responses={201: RequestSerializer, 400: REFUSED, 404: NOT_FOUND, **ERRORS},
    )
    def post(self, request, request_id):
        r = request_or_404(request_id)
        data = _validated(_CommentSerializer, request.data)
        created = services.action_request_create(
            actor=request.user,
            scope={"kind": "failed_again", "request": r.id},
            action=services.Action(kind=R.REPROCESS),
            comment=data["comment"].strip()
            or f"Retry: the messages request {r.id} decided that failed again",
        )
        return Response(
            _request_data(selectors.request_get(request_id=created.id), request),
            status=status.HTTP_201_CREATED,
            headers={"Location": reverse("api-request-detail", args=[created.id])},
        )


# --- Error notifications ------------------------------------------------------------------------


class NotificationListApi(_DecisionsApi):
    """Error notifications sent to senders when messages were ended with an error (R13), newest
    first; `before` from the previous answer's `next_before` for the next page."""

    permission_classes = [has_perms(VIEW_MESSAGES)]

    class FilterSerializer(serializers.Serializer):
        sender = serializers.CharField(required=False, max_length=300)
        conversation = serializers.CharField(required=False, max_length=200)
        message_id = serializers.CharField(required=False, max_length=TEXT_MAX)
        before = serializers.CharField(required=False, max_length=TEXT_MAX)
        page_size = serializers.IntegerField(
            required=False, min_value=1, max_value=NOTIFICATIONS_PAGE_MAX
        )

        class Meta:
            ref_name = "NotificationFilters"

    class OutputSerializer(serializers.Serializer):
        message_id = serializers.CharField()
        conversation_id = serializers.CharField(allow_null=True)
        sender = serializers.CharField(allow_null=True)
        code = serializers.CharField(allow_null=True)
        description = serializers.CharField(allow_null=True)
        at = serializers.DateTimeField()
        run_id = serializers.CharField(allow_null=True)

        class Meta:
            ref_name = "ErrorNotification"

    @extend_schema(
        operation_id="notifications_list",
        parameters=[FilterSerializer],
        responses={
            200: answer(
                inline_serializer(
                    "ErrorNotificationPage",
                    {
                        "results": OutputSerializer(many=True),
                        "next_before": serializers.CharField(
                            allow_null=True, help_text="`before` for the next (older) page."
                        ),
                    },
                ),
                examples.NOTIFICATIONS,
            ),
            400: BAD_REQUEST,
            **ERRORS,
        },
    )
    def get(self, request):
        filters = _validated(self.FilterSerializer, request.query_params)
        try:
            page = selectors.notification_list(
                filters={
                    k: filters[k] for k in ("sender", "conversation", "message_id") if k in filters
                },
                limit=filters.get("page_size") or NOTIFICATIONS_PAGE,
                before=filters.get("before"),
            )
        except selectors.BadCursor as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(
            {
                "results": self.OutputSerializer(page.rows, many=True).data,
                "next_before": page.next_before,
            }
        )
