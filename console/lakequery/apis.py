"""/api/v1/lake-queries: run a lake query, follow its progress, page its result, cancel it.
The same permissions as the screens; a query that searched bodies is seen only by those who may
read bodies."""

from django.core.exceptions import ValidationError
from django.http import Http404
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from console.api import JSONParser, path_key
from console.lakequery import api_schema, selectors, serializers, services
from console.lakequery.models import LakeQuery
from console.lakequery.views import query_or_404
from console.permissions import VIEW_QUERIES, has_perms


def _bad_input(detail, errors):
    return Response({"detail": detail, "errors": errors}, status=status.HTTP_400_BAD_REQUEST)


def _conflict(detail):
    return Response({"detail": detail}, status=status.HTTP_409_CONFLICT)


class LakeQueryListApi(APIView):
    """GET: the newest queries you may see. POST: run a query (202: it is queued; follow it at
    /api/v1/lake-queries/<id>)."""

    permission_classes = [has_perms(VIEW_QUERIES)]
    # JSON only: the criteria hold lists, which a form says poorly.
    parser_classes = [JSONParser]

    @api_schema.lake_query_list
    def get(self, request):
        queries = selectors.lake_query_list(user=request.user)
        return Response(serializers.LakeQueryListSerializer({"results": queries}).data)

    @api_schema.lake_query_create
    def post(self, request):
        criteria = serializers.CriteriaSerializer(data=request.data)
        if not criteria.is_valid():
            return _bad_input("the criteria are not valid", criteria.errors)
        try:
            query = services.lake_query_create(actor=request.user, criteria=criteria.validated_data)
        except ValidationError as exc:
            return _bad_input(exc.messages[0], {"criteria": exc.messages})
        return Response(
            serializers.LakeQuerySerializer(query).data, status=status.HTTP_202_ACCEPTED
        )


class LakeQueryDetailApi(APIView):
    """One query: its status and progress (what the query page polls)."""

    permission_classes = [has_perms(VIEW_QUERIES)]

    @api_schema.lake_query
    def get(self, request, query_id):
        query = query_or_404(request.user, query_id)
        return Response(serializers.LakeQuerySerializer(query).data)


class LakeQueryResultsApi(APIView):
    """A finished query's result, by message id: pass `next` of one answer as `after` of the
    next request. Sorted by message_id."""

    permission_classes = [has_perms(VIEW_QUERIES)]

    @api_schema.lake_query_results
    def get(self, request, query_id):
        query = query_or_404(request.user, query_id)
        params = serializers.ResultFilterSerializer(data=request.query_params)
        if not params.is_valid():
            return _bad_input("the paging parameters are not valid", params.errors)
        if query.status != LakeQuery.DONE:
            return _conflict(f"lake query {query.id} is {query.status}: it has no result yet")
        page = selectors.lake_query_results(
            query=query,
            after=params.validated_data.get("after") or None,
            limit=params.validated_data.get("limit") or selectors.PAGE_SIZE,
        )
        return Response(
            serializers.ResultPageSerializer({"results": page.rows, "next": page.next_after}).data
        )


class LakeQueryCancelApi(APIView):
    """Stop a query that has not finished (its requester, or someone who may stop any)."""

    permission_classes = [has_perms(VIEW_QUERIES)]

    @api_schema.lake_query_cancel
    def post(self, request, query_id):
        query = query_or_404(request.user, query_id)
        try:
            query = services.lake_query_cancel(actor=request.user, query=query)
        except ValidationError as exc:
            return _conflict(exc.messages[0])
        return Response(serializers.LakeQuerySerializer(query).data)


class WhyFailApi(APIView):
    """POST: ask why a failure group's messages fail (202: a lake query is queued; its
    `analysis` holds the findings once done)."""

    permission_classes = [has_perms(VIEW_QUERIES)]
    parser_classes = [JSONParser]

    @api_schema.why_fail_create
    def post(self, request, fingerprint):
        fingerprint = path_key(fingerprint, not_found="no such failure group")
        try:
            query = services.why_fail_create(actor=request.user, fingerprint=fingerprint)
        except ValidationError as exc:
            raise Http404(exc.messages[0]) from None
        return Response(
            serializers.LakeQuerySerializer(query).data, status=status.HTTP_202_ACCEPTED
        )
