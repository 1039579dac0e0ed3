"""/api/v1/purges: run a purge of the final messages past their queue's retention, or preview
one (R15), follow it, list them, and read a purge's id list. Running one is for administrators;
administrators and auditors see them."""

from django.core.exceptions import ValidationError
from django.http import Http404, StreamingHttpResponse
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from console.permissions import RUN_PURGES, VIEW_PURGES, has_perms
from console.retention import api_schema, selectors, serializers
from console.retention.models import PurgeRun
from console.retention.services import PurgeBusy, purge_create
from console.retention.tasks import purge_enqueue


def purge_or_404(purge_id):
    """The purge, or 404 for an id that is unknown, not a number, or too big for one."""
    try:
        number = int(purge_id)
    except (TypeError, ValueError):
        number = 0
    purge = selectors.purge_get(purge_id=number) if 0 < number < 2**63 else None
    if purge is None:
        raise Http404("no such purge")
    return purge


def _refused(detail, code):
    return Response({"detail": detail}, status=code)


class PurgeListApi(APIView):
    """GET: the newest purges and previews. POST: run a purge, or preview one (202: it is
    queued; follow it at /api/v1/purges/<id>)."""

    def get_permissions(self):
        wanted = RUN_PURGES if self.request.method == "POST" else VIEW_PURGES
        return [has_perms(wanted)()]

    @api_schema.purge_list
    def get(self, request):
        purges = {"results": selectors.purge_list()}
        return Response(serializers.PurgeListSerializer(purges).data)

    @api_schema.purge_create
    def post(self, request):
        given = serializers.PurgeRequestSerializer(data=request.data)
        if not given.is_valid():
            field, messages = next(iter(given.errors.items()))
            return _refused(f"{field}: {messages[0]}", status.HTTP_400_BAD_REQUEST)
        try:
            purge = purge_create(
                actor=request.user,
                dry_run=given.validated_data["dry_run"],
                queue=given.validated_data["queue"],
                enqueue=purge_enqueue,
            )
        except ValidationError as exc:
            return _refused(exc.messages[0], status.HTTP_400_BAD_REQUEST)
        except PurgeBusy as exc:
            return _refused(str(exc), status.HTTP_409_CONFLICT)
        return Response(serializers.PurgeSerializer(purge).data, status=status.HTTP_202_ACCEPTED)


class PurgeDetailApi(APIView):
    """One purge: its status and, once done, what it purged."""

    permission_classes = [has_perms(VIEW_PURGES)]

    @api_schema.purge
    def get(self, request, purge_id):
        return Response(serializers.PurgeSerializer(purge_or_404(purge_id)).data)


class PurgeIdsApi(APIView):
    """The ids a finished purge purged (a preview: would purge), sorted, one a line: the text
    whose SHA-256 is its ids_sha256."""

    permission_classes = [has_perms(VIEW_PURGES)]

    def perform_content_negotiation(self, request, force=False):
        # The list is text whatever the client accepts (JSON only for a refusal).
        return super().perform_content_negotiation(request, force=True)

    @api_schema.purge_ids
    def get(self, request, purge_id):
        purge = purge_or_404(purge_id)
        if purge.status != PurgeRun.DONE:
            return _refused(
                f"purge {purge.id} is {purge.status}: it has no id list",
                status.HTTP_409_CONFLICT,
            )
        response = StreamingHttpResponse(
            selectors.purge_ids_lines(purge=purge), content_type="text/plain; charset=utf-8"
        )
        response["Content-Disposition"] = f'attachment; filename="purge-{purge.id}-ids.txt"'
        return response
