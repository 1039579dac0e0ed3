"""/api/v1/audit: the audit trail, with the screen's filters and permissions, and its CSV export."""

from rest_framework.response import Response
from rest_framework.views import APIView

from console.api import valid_filters
from console.audit import api_schema, selectors, serializers
from console.audit.exports import audit_csv_response
from console.permissions import EXPORT_AUDIT, VIEW_AUDIT, has_perms


class AuditListApi(APIView):
    """The audit trail, newest first, by keyset on seq. Pass `after` (or `before`) from the
    previous answer's `next` (or `previous`) for the older (or newer) page."""

    permission_classes = [has_perms(VIEW_AUDIT)]

    @api_schema.audit_list
    def get(self, request):
        params = valid_filters(serializers.PageFilterSerializer, request)
        page = selectors.audit_page(
            filters=selectors.filters_from(params),
            after=params.get("after"),
            before=params.get("before"),
            size=params["page_size"],
        )
        return Response(serializers.PageSerializer(page).data)


class AuditExportApi(APIView):
    """Every matching entry as CSV, oldest first: seq, at, actor, action, target_type, target_id,
    details (JSON), prev_hash, hash. The export itself is recorded in the trail first."""

    permission_classes = [has_perms(VIEW_AUDIT, EXPORT_AUDIT)]

    def perform_content_negotiation(self, request, force=False):
        # The export is CSV whatever the client accepts (JSON only for a refusal): a client that
        # asks for text/csv gets it, not a 406.
        return super().perform_content_negotiation(request, force=True)

    @api_schema.audit_export
    def get(self, request):
        params = valid_filters(serializers.FilterSerializer, request)
        filters = selectors.filters_from(params)
        return audit_csv_response(actor=request.user, filters=filters, via="api")
