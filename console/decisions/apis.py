"""/api/v1/requests and /api/v1/notifications: action requests (ask, read, approve, reject,
withdraw, cancel, the frozen ids) and the error notifications sent to senders. The answers'
shapes are console.decisions.serializers (and outcome_serializers); their schema
console.decisions.api_schema.

Refusals are {"detail": "<one readable sentence>"}: 400 for input that is not valid (with the
messages by field in "errors" when there are some) or a request the services refuse, 403 for a
caller without the permission (a requester approving their own request too), 404 for an unknown
request, 401 without credentials."""

from django.urls import reverse
from rest_framework import status
from rest_framework.permissions import SAFE_METHODS
from rest_framework.response import Response
from rest_framework.views import APIView

from console.api import JSONParser, ServiceRefusals, valid_input
from console.decisions import api_schema, outcome_serializers, selectors, serializers, services
from console.decisions.answers import frozen_ids_response, request_or_404, why
from console.decisions.break_glass import break_glass_execute, break_glass_review
from console.decisions.edit_serializers import PatchPreviewSerializer
from console.decisions.editing import preview_read
from console.decisions.forms import NOTIFICATIONS_PAGE, REQUESTS_PAGE
from console.decisions.models import ActionRequest as R
from console.decisions.outcome import OutcomeUnknown, outcome_page, request_outcome
from console.decisions.overlaps import request_overlaps
from console.decisions.patch_preview import (
    patch_preview,
    preview_failing,
    preview_refusal,
    scope_preview_ids,
)
from console.decisions.scope import ScopeError
from console.permissions import (
    APPROVE_REQUESTS,
    MAKE_REQUESTS,
    VIEW_BODY,
    VIEW_MESSAGES,
    VIEW_REQUESTS,
    has_perms,
)
from workers.jobs.decisions.body_edits import patch_sha256


class _DecisionsApi(ServiceRefusals, APIView):
    """The services' refusals as answers (ServiceRefusals), and a ScopeError a 400 too."""

    # JSON only: a scope is nested, which a form cannot say.
    parser_classes = [JSONParser]

    def handle_exception(self, exc):
        if isinstance(exc, ScopeError):
            return Response({"detail": why(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return super().handle_exception(exc)


def _request_data(r, request, *, body=False):
    """The request as RequestSerializer says, with its audit entries; its edited body and its
    bulk edit's preview diffs only when asked for (`body`) by a caller who may read bodies, and
    those reads are recorded like any other body read; an edit's headers to a caller who may
    read messages."""
    r.audit_entries = selectors.request_audit(request_id=r.id)
    found = request_overlaps(request=r) if r.status == R.PENDING else None
    r.overlaps = found if found is not None and not found.error else None
    user = request.user
    with_body = body and user.has_perm(VIEW_BODY)
    if with_body and r.edited_body is not None:
        services.action_request_edited_body_read(actor=user, request=r, via="api")
    if with_body:
        preview_read(user=user, rows=r.patch_preview or [], request=r)
    context = {"with_body": with_body, "with_messages": user.has_perm(VIEW_MESSAGES)}
    return serializers.RequestSerializer(r, context=context).data


def _request_now(request, request_id):
    """The answer after a change: the request as it is now."""
    return Response(_request_data(selectors.request_get(request_id=request_id), request))


def _request_created(request, created):
    """The answer to a new request: 201, the request, and where it lives."""
    return Response(
        _request_data(selectors.request_get(request_id=created.id), request),
        status=status.HTTP_201_CREATED,
        headers={"Location": reverse("api-request-detail", args=[created.id])},
    )


# --- Requests -----------------------------------------------------------------------------------


class RequestListApi(_DecisionsApi):
    """GET: the requests, newest first, by pages (`before` from the previous answer's
    `next_before`). POST: ask for an action; the scope is frozen into an exact id set at once."""

    def get_permissions(self):
        if self.request.method in SAFE_METHODS:
            return [has_perms(VIEW_REQUESTS)()]
        return [has_perms(VIEW_REQUESTS, VIEW_MESSAGES, MAKE_REQUESTS)()]

    @api_schema.request_list
    def get(self, request):
        filters = valid_input(serializers.RequestFilterSerializer, request.query_params)
        page = selectors.request_list(
            user=request.user,
            status=filters.get("status", ""),
            show=filters.get("show", ""),
            before=filters.get("before"),
            limit=filters.get("page_size") or REQUESTS_PAGE,
        )
        return Response(
            {
                "results": serializers.RequestSummarySerializer(page.rows, many=True).data,
                "next_before": page.next_before,
            }
        )

    @api_schema.request_create
    def post(self, request):
        data = valid_input(serializers.RequestCreateSerializer, request.data)
        created = services.action_request_create(
            actor=request.user,
            scope=data["scope"],
            action=services.Action(
                kind=data["action"],
                target_queue=data.get("target_queue", ""),
                redrive_target=data.get("redrive_target"),
                edited_body=data.get("edited_body"),
                edited_headers=data.get("edited_headers"),
                patch=data.get("patch"),
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
        return _request_created(request, created)


class RequestPatchPreviewApi(_DecisionsApi):
    """A bulk edit's preview, before the request is made: the JSON Patch applied to the first
    quarantined messages of the scope by id, each with the diff of its body (to a caller who may
    read bodies, each read recorded), or why the patch does not apply to it; and why a request
    with it would be refused, if it would. Nothing is changed."""

    permission_classes = [has_perms(VIEW_REQUESTS, VIEW_MESSAGES, MAKE_REQUESTS)]

    @api_schema.request_patch_preview
    def post(self, request):
        data = valid_input(serializers.PatchPreviewInputSerializer, request.data)
        patch = data["patch"]
        rows = patch_preview(message_ids=scope_preview_ids(data["scope"]), patch=patch)
        with_body = preview_read(user=request.user, rows=rows)
        answer = {
            "patch_sha256": patch_sha256(patch),
            "rows": rows,
            "failing": preview_failing(rows),
            "refused": preview_refusal(rows),
        }
        return Response(PatchPreviewSerializer(answer, context={"with_body": with_body}).data)


class RequestDetailApi(_DecisionsApi):
    """One request: the action, the scope as asked and as frozen (count, breakdown, sample,
    hash), the approval, the execution's progress and the audit entries."""

    permission_classes = [has_perms(VIEW_REQUESTS)]

    @api_schema.request_detail
    def get(self, request, request_id):
        r = request_or_404(request_id)
        query = valid_input(serializers.RequestQuerySerializer, request.query_params)
        return Response(_request_data(r, request, body=query["body"]))


class _DecisionApi(_DecisionsApi):
    """A decision on a request with a comment: its `service` decides."""

    service = None

    def _decide(self, request, request_id):
        r = request_or_404(request_id)
        data = valid_input(serializers.CommentSerializer, request.data)
        r = type(self).service(actor=request.user, request=r, comment=data["comment"])
        return _request_now(request, r.id)


class RequestApproveApi(_DecisionApi):
    permission_classes = [has_perms(VIEW_REQUESTS, APPROVE_REQUESTS)]
    service = services.action_request_approve

    @api_schema.request_approve
    def post(self, request, request_id):
        return self._decide(request, request_id)


class RequestRejectApi(_DecisionApi):
    permission_classes = [has_perms(VIEW_REQUESTS, APPROVE_REQUESTS)]
    service = services.action_request_reject

    @api_schema.request_reject
    def post(self, request, request_id):
        return self._decide(request, request_id)


class RequestWithdrawApi(_DecisionApi):
    permission_classes = [has_perms(VIEW_REQUESTS)]
    service = services.action_request_withdraw

    @api_schema.request_withdraw
    def post(self, request, request_id):
        return self._decide(request, request_id)


class RequestCancelApi(_DecisionApi):
    permission_classes = [has_perms(VIEW_REQUESTS)]
    service = services.action_request_cancel

    @api_schema.request_cancel
    def post(self, request, request_id):
        return self._decide(request, request_id)


class RequestBreakGlassApi(_DecisionsApi):
    """Break-glass (R17): execute a pending request alone, in an emergency."""

    permission_classes = [has_perms(VIEW_REQUESTS, APPROVE_REQUESTS)]

    @api_schema.request_break_glass
    def post(self, request, request_id):
        r = request_or_404(request_id)
        data = valid_input(serializers.BreakGlassSerializer, request.data)
        r = break_glass_execute(
            actor=request.user, request=r, reason=data["reason"], confirm=data["confirm"]
        )
        return _request_now(request, r.id)


class RequestReviewApi(_DecisionsApi):
    """Review a break-glass decision: agree, or disagree and say why."""

    # Approvers and administrators review (the service checks who: not the one who broke the
    # glass, not the requester).
    permission_classes = [has_perms(VIEW_REQUESTS)]

    @api_schema.request_review
    def post(self, request, request_id):
        r = request_or_404(request_id)
        data = valid_input(serializers.ReviewSerializer, request.data)
        r = break_glass_review(
            actor=request.user, request=r, agrees=data["agrees"], comment=data["comment"]
        )
        return _request_now(request, r.id)


class RequestIdsApi(_DecisionsApi):
    """The frozen ids, one a line, in order: `sha256sum` of the answer is `ids_sha256`."""

    permission_classes = [has_perms(VIEW_REQUESTS)]

    def perform_content_negotiation(self, request, force=False):
        # Text whatever the client accepts (JSON only for a refusal): no 406.
        return super().perform_content_negotiation(request, force=True)

    @api_schema.request_ids
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
    the message index, as of the refresh it names, and the events committed since (delivery
    runs it has not folded yet). 404 before the request has decided any."""

    permission_classes = [has_perms(VIEW_REQUESTS)]

    @api_schema.request_outcome
    def get(self, request, request_id):
        r = request_or_404(request_id)
        outcome = request_outcome(request=r)
        outcome.request_id = r.id
        return Response(outcome_serializers.OutcomeSerializer(outcome).data)


class RequestOutcomeMessagesApi(_OutcomeApi):
    """The messages behind one of the outcome's numbers, in the frozen order, a page at a time
    (`after` from the previous answer's `next_after`)."""

    permission_classes = [has_perms(VIEW_REQUESTS, VIEW_MESSAGES)]

    @api_schema.request_outcome_messages
    def get(self, request, request_id):
        r = request_or_404(request_id)
        filters = valid_input(outcome_serializers.OutcomeFilterSerializer, request.query_params)
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
            {
                "results": outcome_serializers.OutcomeMessageSerializer(rows, many=True).data,
                "next_after": page.next_after,
            }
        )


class RequestRetryApi(_DecisionsApi):
    """Retry the ones that failed again: a new reprocess request whose scope is the messages
    this request decided that are quarantined again (`{"kind": "failed_again", "request": id}`),
    frozen now and approved like any other request."""

    permission_classes = [has_perms(VIEW_REQUESTS, VIEW_MESSAGES, MAKE_REQUESTS)]

    @api_schema.request_retry
    def post(self, request, request_id):
        r = request_or_404(request_id)
        data = valid_input(serializers.CommentSerializer, request.data)
        created = services.action_request_create(
            actor=request.user,
            scope={"kind": "failed_again", "request": r.id},
            action=services.Action(kind=R.REPROCESS),
            comment=data["comment"].strip()
            or f"Retry: the messages request {r.id} decided that failed again",
        )
        return _request_created(request, created)


# --- Error notifications ------------------------------------------------------------------------


class NotificationListApi(_DecisionsApi):
    """Error notifications sent to senders when messages were ended with an error (R13), newest
    first; `before` from the previous answer's `next_before` for the next page."""

    permission_classes = [has_perms(VIEW_MESSAGES)]

    @api_schema.notification_list
    def get(self, request):
        filters = valid_input(
            outcome_serializers.NotificationFilterSerializer, request.query_params
        )
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
                "results": outcome_serializers.NotificationSerializer(page.rows, many=True).data,
                "next_before": page.next_before,
            }
        )
