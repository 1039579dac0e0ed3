"""POST /api/v1/messages: send messages in.

The body is one message object, a list of them, or {"messages": [...]} (fields: SEMANTICS' words,
see console.ingest.files.FIELDS). The answer counts what became of every record:

- 201 Created: every record was accepted or was a duplicate of one accepted before (re-sending a
  batch is safe, and answers 201 again).
- 200 OK with `errors`: some records were accepted and some refused. The accepted ones are in;
  resend only the refused ones, fixed. (207 Multi-Status would say the same, but it is WebDAV's and
  clients handle a plain 200 with an error list better.)
- 400 Bad Request: nothing was accepted and something was refused, the JSON is malformed, or the
  body holds no message.
- 413: the request is larger than one message at MAX_BODY_BYTES can need; larger batches go
  through the inbox folder.

Each error names the record by its index in the batch (from 0) and its id when it had one.

Who sends (R19): a service account in the application role, into every queue (an application's
producer: its token acts for it alone, and it takes no decision, so it cannot fail a message and
send an edited copy in); a person, signed in, only into the queues two administrators let them
send into by hand (console.access.IngestRight). Operators do not by default: one who failed a
message and sent an edited copy in would walk around R17. A person's call is in the audit trail
(who, which queues, how many, which ids), and their messages' TBDL events name them as
"person:<name>" (the message page says so).
"""

import json

from django.core.exceptions import PermissionDenied
from rest_framework import status
from rest_framework.exceptions import UnsupportedMediaType
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from console.access.selectors import ingest_queue_names
from console.access.service_accounts import is_service_account
from console.ingest import api_schema, serializers
from console.ingest.by_hand import BY_HAND_ONLY, messages_send_by_hand
from console.ingest.files import record_max_bytes
from console.ingest.services import messages_ingest
from console.permissions import INGEST_MESSAGES, needs_text


class MaySendMessages(BasePermission):
    """A service account holding INGEST_MESSAGES (the application role): into every queue. A
    person: into the queues of their rights to send by hand (read now), when they hold one;
    each message's queue is checked by the view. `view.by_hand` is None for a service account,
    the person's queues otherwise."""

    _user = None
    _person = False

    @property
    def message(self):
        if self._user is None:
            return "sign in first"
        return BY_HAND_ONLY if self._person else needs_text([INGEST_MESSAGES], user=self._user)

    def has_permission(self, request, view):
        user = request.user
        if not (user and user.is_authenticated):
            return False
        self._user = user
        if is_service_account(user):
            view.by_hand = None
            return user.has_perm(INGEST_MESSAGES)
        self._person = True
        view.by_hand = ingest_queue_names(user)
        return bool(view.by_hand)


class _BadRequest(Exception):
    def __init__(self, detail, code=status.HTTP_400_BAD_REQUEST):
        super().__init__(detail)
        self.detail = detail
        self.code = code


class MessagesIngestApi(APIView):
    """Sending messages in: POST of /api/v1/messages (console.browse.apis.MessagesApi, whose GET
    lists them)."""

    permission_classes = [MaySendMessages]
    by_hand = None

    @api_schema.messages_ingest
    def post(self, request):
        try:
            records = _records(_payload(request))
        except _BadRequest as exc:
            return Response({"detail": exc.detail}, status=exc.code)

        name = request.user.get_username()
        if self.by_hand is not None:
            try:
                result = messages_send_by_hand(actor=request.user, records=records)
            except PermissionDenied as exc:
                return Response({"detail": str(exc)}, status=status.HTTP_403_FORBIDDEN)
        else:
            result = messages_ingest(records=records, source=f"api:{name}", errors_kept=None)

        if not result.refused:
            code = status.HTTP_201_CREATED
        elif result.accepted:
            code = status.HTTP_200_OK
        else:
            code = status.HTTP_400_BAD_REQUEST
        return Response(serializers.ResultSerializer(result).data, status=code)


def _payload(request):
    media_type = (request.content_type or "").split(";")[0].strip().lower()
    if media_type != "application/json" and not media_type.endswith("+json"):
        raise UnsupportedMediaType(
            media_type or "(none)", detail="send Content-Type: application/json"
        )
    limit = record_max_bytes()
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared > limit:
        raise _BadRequest(serializers.too_large(limit), status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    # Read here, with our own limit: Django's DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MB) is right for
    # forms but smaller than one message at MAX_BODY_BYTES.
    stream = request.stream
    raw = stream.read(limit + 1) if stream is not None else b""
    if len(raw) > limit:
        raise _BadRequest(serializers.too_large(limit), status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    if not raw.strip():
        raise _BadRequest(serializers.EXPECTED)
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise _BadRequest("malformed JSON: the body is not valid UTF-8") from None
    except json.JSONDecodeError as exc:
        raise _BadRequest(f"malformed JSON: {exc}") from None
    except RecursionError:
        # Deeper than Python's parser goes: malformed for us too, not a server error.
        raise _BadRequest("malformed JSON: nested too deeply") from None


def _records(payload):
    if isinstance(payload, dict) and "messages" in payload:
        if len(payload) != 1 or not isinstance(payload["messages"], list):
            raise _BadRequest(
                f'"messages" must be a list, alone in the object: {serializers.EXPECTED}'
            )
        payload = payload["messages"]
    if isinstance(payload, dict):
        return [payload]
    if not isinstance(payload, list):
        raise _BadRequest(f"{serializers.EXPECTED}, not a JSON {type(payload).__name__}")
    if not payload:
        raise _BadRequest(f"the request holds no message: {serializers.EXPECTED}")
    return payload
