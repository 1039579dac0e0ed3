"""/api/v1/role-grants: the role grants of the console's screens, for administrators: a role, or a
person's right to send messages by hand into a queue. The services check every rule again (four
eyes, nobody for themselves, service accounts apart, the cool-down)."""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from console.access import selectors, services
from console.access.models import RoleGrant
from console.api import (
    BAD_REQUEST,
    ERRORS,
    NOT_FOUND,
    ServiceRefusals,
    answer,
    path_key,
    path_parameter,
    sent,
)
from console.permissions import MANAGE_USERS, has_perms


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
    comment = serializers.CharField(required=False, allow_blank=True, max_length=2000)


class CommentSerializer(serializers.Serializer):
    comment = serializers.CharField(required=False, allow_blank=True, max_length=2000, default="")


GRANT_ID = path_parameter("grant_id", "The role grant's id.", "1")

# The examples of /api/docs/.
_ASK = {"user": "dana", "role": "approver", "comment": "Dana leads the night shift from December"}
_GRANT = {
    "id": 1,
    "user": "dana",
    "role": "approver",
    "queue": None,
    "status": "pending",
    "requested_by": "admin",
    "requested_at": "2026-11-27T07:18:00.587277Z",
    "comment": "Dana leads the night shift from December",
    "expires_at": "2026-12-04T07:18:00.587277Z",
    "decided_by": None,
    "decided_at": None,
    "decision_comment": "",
}
_CONFIRMED = {
    **_GRANT,
    "status": "confirmed",
    "decided_by": "admin2",
    "decided_at": "2026-11-27T09:02:11.120000Z",
    "decision_comment": "agreed with the team lead",
}
_GIVEN = inline_serializer("RoleGiven", {"detail": serializers.CharField()})


# The queues, named by the grant's own key to them (console.access sits below the queues app).
_QUEUES = RoleGrant._meta.get_field("queue").related_model.objects


class _GrantsApi(ServiceRefusals, APIView):
    permission_classes = [has_perms(MANAGE_USERS)]


def _grant_or_404(grant_id):
    key = path_key(grant_id, not_found="no such role grant")
    # A number the id column can hold, or no such grant (not a database error).
    grant = (
        selectors.grants().filter(id=int(key)).first() if key.isdigit() and len(key) < 19 else None
    )
    if grant is None:
        raise Http404("no such role grant")
    return grant


class GrantListApi(_GrantsApi):
    @extend_schema(
        operation_id="role_grants_list",
        summary="Role grants, newest first (pending ones wait for a second administrator).",
        description="The newest 200 role grants, pending, confirmed, rejected, withdrawn or "
        "expired, newest first; a pending one waits for a second administrator.",
        responses={200: answer(GrantSerializer(many=True), _GRANT), **ERRORS},
    )
    def get(self, request):
        services.role_grants_expire()
        return Response(GrantSerializer(selectors.grants()[:200], many=True).data)

    @extend_schema(
        operation_id="role_grants_create",
        summary="Ask for a role for a user, or for a person's right to send messages by hand "
        "into a queue. What grows their rights waits for a second administrator (201, the "
        "grant); a role that adds nothing they hold not already is given at once (200).",
        description="Give a user a role (`role`), or a person the right to send messages by "
        "hand into a queue (`queue`): one of the two. Whatever grows what they may do waits "
        "for a second administrator: the answer is the grant (201), which another "
        "administrator confirms. A role that adds nothing they do not hold already is given at "
        "once (200). The application role goes to a service account only (no other role, no "
        "way to sign in), and a service account gets no other role nor sending by hand (400).",
        request=GrantAskSerializer,
        examples=[sent(_ASK)],
        responses={
            201: answer(GrantSerializer, _GRANT, "The grant, waiting for a second administrator."),
            200: answer(
                _GIVEN, {"detail": "dana now holds the role operator"}, "The role is given."
            ),
            400: BAD_REQUEST,
            **ERRORS,
        },
    )
    def post(self, request):
        serializer = GrantAskSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        user = get_user_model().objects.filter(username=data["user"]).first()
        if user is None:
            raise DjangoValidationError("no such user")
        if ("role" in data) == ("queue" in data):
            raise DjangoValidationError("send a role, or a queue to send into by hand: one")
        role = queue = None
        if "role" in data and (role := Group.objects.filter(name=data["role"]).first()) is None:
            raise DjangoValidationError("no such role")
        if "queue" in data and (queue := _QUEUES.filter(name=data["queue"]).first()) is None:
            raise DjangoValidationError("no such queue")
        grant = services.role_grant_request(
            actor=request.user, user=user, role=role, queue=queue, comment=data.get("comment", "")
        )
        if grant is None:
            return Response({"detail": f"{user.username} now holds the role {role.name}"})
        return Response(GrantSerializer(grant).data, status=status.HTTP_201_CREATED)


class GrantDetailApi(_GrantsApi):
    @extend_schema(
        operation_id="role_grants_retrieve",
        description="One role grant: who asked for which role for whom, why, and what became "
        "of it.",
        parameters=[GRANT_ID],
        responses={200: answer(GrantSerializer, _GRANT), 404: NOT_FOUND, **ERRORS},
    )
    def get(self, request, grant_id):
        services.role_grants_expire()
        return Response(GrantSerializer(_grant_or_404(grant_id)).data)


class _GrantDecisionApi(_GrantsApi):
    service = None

    def post(self, request, grant_id):
        grant = _grant_or_404(grant_id)
        serializer = CommentSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        grant = type(self).service(
            actor=request.user, grant=grant, comment=serializer.validated_data["comment"]
        )
        return Response(GrantSerializer(selectors.grants().get(id=grant.id)).data)


class GrantConfirmApi(_GrantDecisionApi):
    service = services.role_grant_confirm

    @extend_schema(
        operation_id="role_grants_confirm",
        summary="Confirm someone else's role grant: the role is given. Four eyes: the "
        "administrator who asked, and the user who receives it, get 403.",
        description="Confirm a pending role grant that another administrator asked for: the "
        "user holds the role from now on. Refused (403) to the administrator who asked and to "
        "the user who receives it, and during the approver cool-down.",
        parameters=[GRANT_ID],
        request=CommentSerializer,
        examples=[sent({"comment": "agreed with the team lead"})],
        responses={
            200: answer(GrantSerializer, _CONFIRMED),
            400: BAD_REQUEST,
            404: NOT_FOUND,
            **ERRORS,
        },
    )
    def post(self, request, grant_id):
        return super().post(request, grant_id)


class GrantRejectApi(_GrantDecisionApi):
    service = services.role_grant_reject

    @extend_schema(
        operation_id="role_grants_reject",
        summary="Reject a pending role grant; the comment (why) is required.",
        description="Reject a pending role grant, saying why (the comment is required): the "
        "user does not get the role.",
        parameters=[GRANT_ID],
        request=CommentSerializer,
        examples=[sent({"comment": "the night shift has two approvers already"})],
        responses={
            200: answer(
                GrantSerializer,
                {
                    **_CONFIRMED,
                    "status": "rejected",
                    "decision_comment": "the night shift has two approvers already",
                },
            ),
            400: BAD_REQUEST,
            404: NOT_FOUND,
            **ERRORS,
        },
    )
    def post(self, request, grant_id):
        return super().post(request, grant_id)
