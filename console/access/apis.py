"""/api/v1/role-grants: the role grants of the console's screens, for administrators. The
services check every rule again (four eyes, nobody for themselves, the cool-down)."""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from console.access import selectors, services
from console.api import BAD_REQUEST, ERRORS, NOT_FOUND, ServiceRefusals, path_key, path_parameter
from console.permissions import MANAGE_USERS, has_perms


class GrantSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    user = serializers.CharField(source="user.username")
    role = serializers.CharField(source="role.name")
    status = serializers.CharField()
    requested_by = serializers.CharField(source="requested_by.username")
    requested_at = serializers.DateTimeField()
    comment = serializers.CharField()
    expires_at = serializers.DateTimeField()
    decided_by = serializers.CharField(source="decided_by.username", allow_null=True)
    decided_at = serializers.DateTimeField(allow_null=True)
    decision_comment = serializers.CharField()


class GrantAskSerializer(serializers.Serializer):
    user = serializers.CharField(max_length=150)
    role = serializers.CharField(max_length=150)
    comment = serializers.CharField(required=False, allow_blank=True, max_length=2000)


class CommentSerializer(serializers.Serializer):
    comment = serializers.CharField(required=False, allow_blank=True, max_length=2000, default="")


GRANT_ID = path_parameter("grant_id", "The role grant's id.", "1")


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
        responses={200: GrantSerializer(many=True), **ERRORS},
    )
    def get(self, request):
        services.role_grants_expire()
        return Response(GrantSerializer(selectors.grants()[:200], many=True).data)

    @extend_schema(
        operation_id="role_grants_create",
        summary="Ask for a role for a user. A role that gives the right to approve or to grant "
        "roles waits for a second administrator (201, the grant); any other is given at once "
        "(200, no grant).",
        request=GrantAskSerializer,
        responses={201: GrantSerializer, 200: None, 400: BAD_REQUEST, **ERRORS},
    )
    def post(self, request):
        serializer = GrantAskSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        user = get_user_model().objects.filter(username=data["user"]).first()
        role = Group.objects.filter(name=data["role"]).first()
        if user is None or role is None:
            raise DjangoValidationError("no such user" if user is None else "no such role")
        grant = services.role_grant_request(
            actor=request.user, user=user, role=role, comment=data.get("comment", "")
        )
        if grant is None:
            return Response({"detail": f"{user.username} now holds the role {role.name}"})
        return Response(GrantSerializer(grant).data, status=status.HTTP_201_CREATED)


class GrantDetailApi(_GrantsApi):
    @extend_schema(
        operation_id="role_grants_retrieve",
        parameters=[GRANT_ID],
        responses={200: GrantSerializer, 404: NOT_FOUND, **ERRORS},
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
        parameters=[GRANT_ID],
        request=CommentSerializer,
        responses={200: GrantSerializer, 400: BAD_REQUEST, 404: NOT_FOUND, **ERRORS},
    )
    def post(self, request, grant_id):
        return super().post(request, grant_id)


class GrantRejectApi(_GrantDecisionApi):
    service = services.role_grant_reject

    @extend_schema(
        operation_id="role_grants_reject",
        summary="Reject a pending role grant; the comment (why) is required.",
        parameters=[GRANT_ID],
        request=CommentSerializer,
        responses={200: GrantSerializer, 400: BAD_REQUEST, 404: NOT_FOUND, **ERRORS},
    )
    def post(self, request, grant_id):
        return super().post(request, grant_id)
