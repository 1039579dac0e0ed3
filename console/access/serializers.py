"""The shapes of /api/v1/role-grants: a grant, what asking for one sends, and a decision's
comment."""

from rest_framework import serializers

from console.api import optional_comment


class GrantSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    user = serializers.CharField(source="user.username")
    role = serializers.CharField(
        source="role.name", allow_null=True, help_text="The role it gives; null for a queue's."
    )
    queue = serializers.CharField(
        source="queue.name",
        allow_null=True,
        help_text="The queue whose sending by hand it gives; null for a role's.",
    )
    status = serializers.CharField()
    requested_by = serializers.CharField(source="asked_by")
    requested_at = serializers.DateTimeField()
    comment = serializers.CharField()
    expires_at = serializers.DateTimeField()
    decided_by = serializers.CharField(source="decided_by.username", allow_null=True)
    decided_at = serializers.DateTimeField(allow_null=True)
    decision_comment = serializers.CharField()


class GrantAskSerializer(serializers.Serializer):
    user = serializers.CharField(max_length=150)
    role = serializers.CharField(
        max_length=150, required=False, help_text="The role to give; or `queue`."
    )
    queue = serializers.CharField(
        max_length=100,
        required=False,
        help_text="The queue the person may send messages into by hand; or `role`.",
    )
    comment = optional_comment(2000)


class CommentSerializer(serializers.Serializer):
    comment = optional_comment(2000, default="")
