import json

from django.http import Http404
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from console.browse.apis import ERRORS, MESSAGE_ID_TEXT, NOT_FOUND, path_key, path_parameter
from console.browse.selectors import message_detail


class CanViewMessages(BasePermission):
    def has_permission(self, request, view):
        return bool(request.user and request.user.has_perm("readmodels.view_messageindex"))


class _EventSerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    from_state = serializers.CharField(allow_null=True)
    to_state = serializers.CharField()
    queue = serializers.CharField()
    attempt = serializers.IntegerField()
    delivery_count = serializers.IntegerField()
    candidate = serializers.BooleanField()
    next_attempt_at = serializers.DateTimeField(allow_null=True)
    actor = serializers.CharField(allow_null=True)
    run_id = serializers.CharField(allow_null=True)
    reason = serializers.CharField(allow_null=True)
    exception_type = serializers.CharField(allow_null=True)
    stack = serializers.CharField(allow_null=True)

    class Meta:
        ref_name = "MessageEvent"


class MessageDetailApi(APIView):
    """A message's state, delivery count, candidate flag, next attempt time, reason and history.
    Reading changes nothing (R12)."""

    permission_classes = [CanViewMessages]

    class OutputSerializer(serializers.Serializer):
        id = serializers.CharField()
        queue = serializers.CharField()
        original_queue = serializers.CharField()
        state = serializers.CharField(allow_null=True)
        delivery_count = serializers.IntegerField()
        blacklist_candidate = serializers.BooleanField()
        batch_limit = serializers.IntegerField(allow_null=True)
        next_attempt_at = serializers.DateTimeField(allow_null=True)
        reason = serializers.CharField(allow_null=True)
        exception_type = serializers.CharField(allow_null=True)
        on_poison_list = serializers.BooleanField()
        # Null once the body is purged (R15) or compacted away before the next refresh.
        body_sha256 = serializers.CharField(allow_null=True)
        body_size = serializers.IntegerField(allow_null=True)
        content_type = serializers.CharField(allow_null=True)
        headers = serializers.SerializerMethodField()
        conversation_id = serializers.CharField(allow_null=True)
        sender = serializers.CharField(allow_null=True)
        enqueued_at = serializers.DateTimeField(allow_null=True)
        history = _EventSerializer(many=True)

        class Meta:
            ref_name = "MessageDetail"

        @extend_schema_field({"type": "object", "additionalProperties": {"type": "string"}})
        def get_headers(self, obj):
            return json.loads(obj["headers"]) if obj.get("headers") else {}

    @extend_schema(
        operation_id="messages_retrieve",
        parameters=[
            path_parameter(
                "message_id",
                f"{MESSAGE_ID_TEXT} (An id that ends in '/body' reads as the body of the "
                "message before it.)",
                "order-1",
            )
        ],
        responses={200: OutputSerializer, 404: NOT_FOUND, **ERRORS},
    )
    def get(self, request, message_id):
        detail = message_detail(message_id=path_key(message_id, not_found="no such message"))
        if detail is None:
            raise Http404("no such message")
        return Response(self.OutputSerializer(detail).data)
