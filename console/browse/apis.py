"""/api/v1/: the console's read models, and one message (its state and history, its body), with
the screens' permissions. Reading changes nothing (R12); reading a body is audited. The answers'
shapes are console.browse.serializers; their schema console.browse.api_schema."""

from datetime import UTC, datetime

from django.core.exceptions import ValidationError
from django.http import Http404
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.permissions import SAFE_METHODS
from rest_framework.response import Response
from rest_framework.views import APIView

from console.api import Moved, bad_filters, path_key, valid_filters
from console.browse import api_schema, counts, selectors, serializers
from console.browse.body import raw_body_response
from console.browse.exports import BODIES_REFUSED, MessageExportForm, message_export_response
from console.browse.forms import API_PAGE_SIZE_MAX, PAGE_SIZE, MessageFilterForm
from console.browse.freshness import counts_staleness
from console.browse.headers import HeadersUnreadable, headers_page
from console.browse.search import search
from console.browse.services import message_body_read
from console.ingest.apis import MaySendMessages, MessagesIngestApi
from console.ingest.demo import demo_progress
from console.notes.models import GROUP, MESSAGE
from console.notes.selectors import investigations_attach, owner_filter_clean
from console.permissions import (
    VIEW_BODY,
    VIEW_GROUPS,
    VIEW_MESSAGES,
    VIEW_NOTES,
    VIEW_STATS,
    has_perms,
)
from console.queues.selectors import source_status_list
from workers.engine.states import FLOW_QUARANTINED, FLOWS

_NO_MESSAGE = "no such message"
_NO_GROUP = "no such failure group"


def _found(read, *, not_found, **key):
    """What `read` finds for the one path parameter in `key`, or 404 (`not_found`)."""
    ((name, value),) = key.items()
    found = read(**{name: path_key(value, not_found=not_found)})
    if found is None:
        raise Http404(not_found)
    return found


def _message_list(request):
    """The answer of GET /api/v1/messages (and of its old path, /api/v1/index/messages)."""
    form = MessageFilterForm(
        request.query_params, page_size_max=API_PAGE_SIZE_MAX, user=request.user
    )
    if not form.is_valid():
        return bad_filters(form.errors)
    filters = form.filters()
    try:
        page = selectors.message_page(
            filters=filters, size=form.cleaned_data.get("page_size") or PAGE_SIZE, **form.keyset()
        )
    except selectors.BadCursor as exc:
        return bad_filters({"cursor": [str(exc)]})
    count = selectors.message_match_count(filters=filters)
    if request.user.has_perm(VIEW_NOTES):
        investigations_attach(page.rows, kind=MESSAGE)
    return Response(
        {
            "results": serializers.MessageEntrySerializer(page.rows, many=True).data,
            "next": page.next_cursor,
            "previous": page.prev_cursor,
            "sort": page.sort,
            "count": {"value": count.count, "more": count.more, "source": count.source},
        }
    )


class MessagesApi(MessagesIngestApi):
    """/api/v1/messages, where a REST client looks for messages: GET lists them (the quarantine
    browser), POST sends messages in (console.ingest.apis). Each method has its permission: a
    producer's service account (the application role) sends and sees nothing; a person sends
    only into the queues they may send into by hand."""

    def get_permissions(self):
        if self.request.method in SAFE_METHODS:
            return [has_perms(VIEW_MESSAGES)()]
        return [MaySendMessages()]

    @api_schema.message_list
    def get(self, request):
        return _message_list(request)


class MessageIndexApi(Moved, APIView):
    """The message list's old path: it answers as before, and says where it moved."""

    permission_classes = [has_perms(VIEW_MESSAGES)]
    moved_to = "/api/v1/messages"
    moved_on = datetime(2026, 11, 27, tzinfo=UTC)

    @api_schema.message_index
    def get(self, request):
        return _message_list(request)


class MessageExportApi(APIView):
    """Every message the quarantine browser's filters match, in its order (`sort`), as one
    streamed file: CSV or JSON Lines, with the fields `GET /api/v1/messages` gives each message, and
    with `bodies=1` its current body, base64. CSV cells that start with =, +, -, @, a tab or a
    carriage return are prefixed with a quote, which shows as text and runs nothing (take it off
    a body cell before decoding). The export is recorded in the audit trail before the file
    streams."""

    permission_classes = [has_perms(VIEW_MESSAGES)]

    def perform_content_negotiation(self, request, force=False):
        # The file's format is the `format` parameter, which DRF would otherwise take for a
        # renderer's and answer 404 for: JSON only for a refusal.
        return super().perform_content_negotiation(request, force=True)

    @api_schema.message_export
    def get(self, request):
        form = MessageExportForm(request.query_params, user=request.user)
        if not form.is_valid():
            return bad_filters(form.errors)
        if form.wants_bodies and not request.user.has_perm(VIEW_BODY):
            raise exceptions.PermissionDenied(BODIES_REFUSED)
        return message_export_response(actor=request.user, via="api", **form.export())


class GroupListApi(APIView):
    """Failure groups by what needs attention now: most quarantined members first, then most
    waiting ones. Groups whose members need nobody any more only with `resolved`."""

    permission_classes = [has_perms(VIEW_GROUPS)]

    @api_schema.group_list
    def get(self, request):
        filters = valid_filters(serializers.GroupFilterSerializer, request)
        try:
            owner = owner_filter_clean(filters.get("owner"), user=request.user)
        except ValidationError as exc:
            return bad_filters({"owner": exc.messages})
        groups = selectors.group_list(
            queue=filters.get("queue") or None,
            resolved=filters["resolved"],
            owner=owner or None,
            status=filters.get("status") or None,
        )
        if request.user.has_perm(VIEW_NOTES):
            investigations_attach(groups, kind=GROUP)
        return Response({"results": serializers.GroupSerializer(groups, many=True).data})


def _count(match):
    if match is None:
        return None
    return {"count": match.count, "more": match.more}


class SearchApi(APIView):
    """The console's search box: what a query finds. `message_id` is set when it names one message
    (its whole id, or the beginning of only one id when nothing else matches); otherwise the ids
    that start with it, how many messages have it in their last failure's reason, as their sender
    or their conversation (counts stop at 1,000: `more` says so), and the failure groups and
    queues whose names hold it. Reasons, groups and queues from 3 characters on."""

    permission_classes = [has_perms(VIEW_MESSAGES)]

    @api_schema.search
    def get(self, request):
        filters = valid_filters(serializers.SearchFilterSerializer, request)
        result = search(query=filters["q"], groups=request.user.has_perm(VIEW_GROUPS))
        return Response(
            {
                "query": result.query,
                "message_id": result.go_to,
                "message_ids": result.ids,
                "more_message_ids": result.more_ids,
                "reasons": _count(result.reasons),
                "senders": _count(result.senders),
                "conversations": _count(result.conversations),
                "groups": serializers.GroupSerializer(result.groups, many=True).data,
                "queues": result.queues,
            }
        )


class GroupDetailApi(APIView):
    """One failure group, by its fingerprint: its members' counts by state, its pattern, and a
    sample member with its reason and stack trace."""

    permission_classes = [has_perms(VIEW_GROUPS)]

    @api_schema.group_detail
    def get(self, request, fingerprint):
        group = _found(selectors.group_get, fingerprint=fingerprint, not_found=_NO_GROUP)
        if request.user.has_perm(VIEW_NOTES):
            investigations_attach([group], kind=GROUP)
        return Response(serializers.GroupDetailSerializer(group).data)


class StatsApi(APIView):
    """The dashboard's numbers."""

    permission_classes = [has_perms(VIEW_STATS)]

    @api_schema.stats
    def get(self, request):
        stats = counts.dashboard_stats()
        flows = counts.flow_series()
        series = flows[FLOW_QUARANTINED]
        groups = selectors.group_list(limit=selectors.TOP_GROUPS, muted=False)
        return Response(
            {
                "totals": dict(stats["totals"]),
                "queues": {name: dict(counts) for name, counts in stats["per_queue"]},
                "quarantined": stats["quarantined"],
                "delivered_after_failure": _count(stats["delivered_after_failure"]),
                "updated_at": stats["updated_at"],
                "disabled_queues": [
                    {"name": q.name, "disabled_at": q.disabled_at, "reason": q.disabled_reason}
                    for q in counts.queues_disabled()
                ],
                "top_groups": serializers.GroupSerializer(groups, many=True).data,
                "muted_groups": selectors.groups_muted_count(),
                "inflow": [{"hour": hour, "count": n} for hour, n in series],
                "flows": [
                    {"hour": hour, **{flow: flows[flow][i][1] for flow in FLOWS}}
                    for i, (hour, _) in enumerate(series)
                ],
                "sources": [s.as_dict() for s in source_status_list()],
                "counts_check": counts.counts_check_latest(),
                "demo": demo_progress(),
                "stale": _staleness(counts_staleness(now=timezone.now())),
            }
        )


def _staleness(stale):
    if stale is None:
        return None
    return {"reason": stale.reason, "waiting_since": stale.waiting_since, "text": stale.text}


class MessageBodyApi(APIView):
    """A message's current body, as bytes, with the raw download's headers."""

    permission_classes = [has_perms(VIEW_MESSAGES, VIEW_BODY)]

    def perform_content_negotiation(self, request, force=False):
        # The body is bytes whatever the client accepts (JSON only for a refusal): a client that
        # asks for application/octet-stream gets it, not a 406.
        return super().perform_content_negotiation(request, force=True)

    @api_schema.message_body
    def get(self, request, message_id):
        def read(message_id):
            return message_body_read(actor=request.user, message_id=message_id, via="api")

        found = _found(read, message_id=message_id, not_found=_NO_MESSAGE)
        return raw_body_response(found[0], message_id=message_id)


class MessageHeadersApi(APIView):
    """A message's headers, whole, a page at a time in the order they are stored: what the
    message's detail shows only the start of when it has many or long ones. Reading changes
    nothing (R12)."""

    permission_classes = [has_perms(VIEW_MESSAGES)]

    @api_schema.message_headers
    def get(self, request, message_id):
        filters = valid_filters(serializers.HeadersFilterSerializer, request)
        text = _found(selectors.message_headers_text, message_id=message_id, not_found=_NO_MESSAGE)
        try:
            page = headers_page(text, **filters)
        except HeadersUnreadable as exc:
            raise exceptions.APIException(str(exc)) from None
        return Response(
            {"headers": page.headers, "offset": page.offset, "count": page.count, "next": page.next}
        )


class MessageDetailApi(APIView):
    """A message's state, delivery count, candidate flag, next attempt time, reason and history.
    Reading changes nothing (R12)."""

    permission_classes = [has_perms(VIEW_MESSAGES)]

    @api_schema.message_detail
    def get(self, request, message_id):
        detail = _found(selectors.message_detail, message_id=message_id, not_found=_NO_MESSAGE)
        return Response(serializers.MessageDetailSerializer(detail).data)
