import json

from django.http import Http404
from rest_framework import serializers
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from console.browse.selectors import message_detail


class CanViewMessages(BasePermission):
    def has_permission(self, request, view):
        return bool(request.user and request.user.has_perm("browse.view_messageindex"))


class MessageDetailApi(APIView):
    """A message's state, delivery count, candidate flag, next attempt time, reason and history.
    Reading changes nothing (R12)."""

    permission_classes = [CanViewMessages]

    class EventSerializer(serializers.Serializer):
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
        body_sha256 = serializers.CharField()
        body_size = serializers.IntegerField(allow_null=True)
        content_type = serializers.CharField(allow_null=True)
        headers = serializers.SerializerMethodField()
        conversation_id = serializers.CharField(allow_null=True)
        sender = serializers.CharField(allow_null=True)
        enqueued_at = serializers.DateTimeField(allow_null=True)
        history = serializers.ListField(child=serializers.DictField())

        def get_headers(self, obj):
            return json.loads(obj["headers"]) if obj.get("headers") else {}

    def get(self, request, message_id):
        detail = message_detail(message_id=message_id)
        if detail is None:
            raise Http404("no such message")
        detail["history"] = self.EventSerializer(detail["history"], many=True).data
        return Response(self.OutputSerializer(detail).data)
