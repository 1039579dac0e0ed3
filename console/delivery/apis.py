"""/api/v1/poison-list: the shared poison list (R9) as an API of its own, for the console and for
applications outside the product (the AMPS pattern: read the list, skip what is on it, report
what you failed on).

How a consumer keeps a copy of the list current:
1. GET /api/v1/poison-list, page after page (`after` = the previous page's `next`), and keep the
   `cursor` of the FIRST page: it is read before that page, so no change falls between it and
   the pages.
2. Then, as often as it likes, GET /api/v1/poison-list/changes?since=<cursor>, apply the changes
   in order (they are idempotent: applying one twice changes nothing), and keep the answer's
   `cursor` for the next call; ask again at once while `more` is true.
A change is `added` (the id is listed with this reason and, if given, body hash; it replaces
what the copy held for that id), `removed` (the id is off the list), or `body_cleared` (the
entry stays listed by id but no longer poisons that body hash: a message with that body was
reprocessed). The client in static/clients/antidote_poison.py does all of this.

Refusals are {"detail": "<one readable sentence>"}, with the messages by field in "errors" for
input that is not valid (400); 401 without credentials, 403 without the permission.
"""

from django.http import Http404
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from console.api import JSONParser, path_key, valid_input
from console.delivery import api_schema, selectors, serializers
from console.delivery.poison import poison_cursor, poison_remove, poison_report
from console.permissions import REMOVE_POISON, REPORT_POISON, VIEW_POISON_LIST, has_perms


class _PoisonListApi(APIView):
    parser_classes = [JSONParser]


class PoisonListApi(_PoisonListApi):
    """The poison list, by message id, a page at a time. Keep the `cursor` of the first page and,
    once every page is read, follow /api/v1/poison-list/changes from it: the changes made while
    the pages were read are there."""

    permission_classes = [has_perms(VIEW_POISON_LIST)]

    # The docstring of the class being defined.
    @api_schema.poison_list(__doc__)
    def get(self, request):
        query = valid_input(serializers.PoisonListFilterSerializer, request.query_params)
        # Read before the page: a change made after it is in the changes since it.
        cursor = poison_cursor()
        entries, following = selectors.poison_page(
            after=query.get("after"), limit=query.get("limit") or serializers.PAGE
        )
        return Response(
            {
                "results": serializers.EntrySerializer(entries, many=True).data,
                "next": following,
                "cursor": cursor,
            }
        )


class PoisonChangesApi(_PoisonListApi):
    """The changes of the poison list after a cursor, oldest first. Apply them in order, keep the
    answer's `cursor`, and ask again at once while `more` is true."""

    permission_classes = [has_perms(VIEW_POISON_LIST)]

    @api_schema.poison_changes(__doc__)
    def get(self, request):
        query = valid_input(serializers.PoisonChangesFilterSerializer, request.query_params)
        changes, cursor, more = selectors.poison_changes(
            since=query["since"], limit=query.get("limit") or serializers.PAGE
        )
        results = serializers.ChangeSerializer(changes, many=True).data
        return Response({"results": results, "cursor": cursor, "more": more})


class PoisonCheckApi(_PoisonListApi):
    """Which of these message ids and body hashes (SHA-256 of the body's bytes) are on the list,
    in one call; only those that are come back. An application with no copy of the list asks
    this before it processes a batch."""

    permission_classes = [has_perms(VIEW_POISON_LIST)]

    @api_schema.poison_check(__doc__)
    def post(self, request):
        data = valid_input(serializers.PoisonCheckSerializer, request.data)
        listed, bodies = selectors.poison_check(ids=data["ids"], hashes=data["body_sha256"])
        return Response(
            {
                "ids": [
                    {"message_id": i, "reason": listed[i]}
                    for i in dict.fromkeys(data["ids"])
                    if i in listed
                ],
                "body_sha256": [
                    {"body_sha256": h, "reason": bodies[h]}
                    for h in dict.fromkeys(data["body_sha256"])
                    if h in bodies
                ],
            }
        )


class PoisonReportApi(_PoisonListApi):
    """Report a message this application failed on: it goes on the list (or its entry is
    replaced) with the caller's user name as its source, and the report is in the audit trail.
    Delivery runs already running see it before their next batch. Without `body_sha256`, an
    entry already listed for the id keeps its body hash."""

    permission_classes = [has_perms(REPORT_POISON)]

    @api_schema.poison_report(__doc__)
    def post(self, request):
        data = valid_input(serializers.PoisonReportSerializer, request.data)
        entry, _ = poison_report(actor=request.user, **data)
        return Response(serializers.EntrySerializer(entry).data, status=status.HTTP_201_CREATED)


class PoisonEntryApi(_PoisonListApi):
    """One entry of the list: read it, or (administrators) take it off the list. Removing it
    does not touch the message, which stays quarantined if it is; other entries with the same
    body hash keep it. The removal is in the audit trail."""

    def get_permissions(self):
        perm = REMOVE_POISON if self.request.method == "DELETE" else VIEW_POISON_LIST
        return [has_perms(perm)()]

    def _message_id(self, message_id):
        return path_key(message_id, not_found="not on the poison list")

    @api_schema.poison_entry
    def get(self, request, message_id):
        entry = selectors.poison_entry_get(message_id=self._message_id(message_id))
        if entry is None:
            raise Http404("not on the poison list")
        return Response(serializers.EntrySerializer(entry).data)

    @api_schema.poison_remove(__doc__)
    def delete(self, request, message_id):
        if poison_remove(actor=request.user, message_id=self._message_id(message_id)) is None:
            raise Http404("not on the poison list")
        return Response(status=status.HTTP_204_NO_CONTENT)
