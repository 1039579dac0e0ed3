"""/api/v1/role-grants: the role grants of the console's screens, for administrators: a role, or a
person's right to send messages by hand into a queue. The services check every rule again (four
eyes, nobody for themselves, service accounts apart, the cool-down)."""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from console.access import api_schema, selectors, serializers, services
from console.access.models import RoleGrant
from console.api import ServiceRefusals, path_key, valid_input
from console.permissions import MANAGE_USERS, has_perms

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
    @api_schema.grant_list
    def get(self, request):
        services.role_grants_expire()
        return Response(serializers.GrantSerializer(selectors.grants()[:200], many=True).data)

    @api_schema.grant_create
    def post(self, request):
        data = valid_input(serializers.GrantAskSerializer, request.data)
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
        return Response(serializers.GrantSerializer(grant).data, status=status.HTTP_201_CREATED)


class GrantDetailApi(_GrantsApi):
    @api_schema.grant
    def get(self, request, grant_id):
        services.role_grants_expire()
        return Response(serializers.GrantSerializer(_grant_or_404(grant_id)).data)


class _GrantDecisionApi(_GrantsApi):
    service = None

    def post(self, request, grant_id):
        grant = _grant_or_404(grant_id)
        comment = valid_input(serializers.CommentSerializer, request.data)["comment"]
        grant = type(self).service(actor=request.user, grant=grant, comment=comment)
        return Response(serializers.GrantSerializer(selectors.grants().get(id=grant.id)).data)


class GrantConfirmApi(_GrantDecisionApi):
    service = services.role_grant_confirm

    @api_schema.grant_confirm
    def post(self, request, grant_id):
        return super().post(request, grant_id)


class GrantRejectApi(_GrantDecisionApi):
    service = services.role_grant_reject

    @api_schema.grant_reject
    def post(self, request, grant_id):
        return super().post(request, grant_id)
