"""/api/v1/lockouts: the login lockouts in force, and lifting one. For administrators."""

from django.core.exceptions import ValidationError
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from console.accounts.lockouts import api_schema
from console.accounts.lockouts.selectors import lockout_list
from console.accounts.lockouts.serializers import (
    LockoutLiftedSerializer,
    LockoutLiftSerializer,
    LockoutListSerializer,
)
from console.accounts.lockouts.services import lockout_lift
from console.permissions import MANAGE_USERS, has_perms


class LockoutListApi(APIView):
    """The pair lockouts and address throttles in force."""

    permission_classes = [has_perms(MANAGE_USERS)]

    @api_schema.lockouts_list
    def get(self, request):
        return Response(LockoutListSerializer({"results": lockout_list()}).data)


class LockoutLiftApi(APIView):
    """Lift the lockout of a pair (a user name and an address), the throttle of an address, or
    the lockouts of a user name from every address."""

    permission_classes = [has_perms(MANAGE_USERS)]

    @api_schema.lockouts_lift
    def post(self, request):
        serializer = LockoutLiftSerializer(data=request.data)
        if not serializer.is_valid():
            field, problems = next(iter(serializer.errors.items()))
            return Response(
                {"detail": f"{field}: {problems[0]}"}, status=status.HTTP_400_BAD_REQUEST
            )
        username, ip = serializer.validated_data["username"], serializer.validated_data["ip"]
        try:
            removed = lockout_lift(actor=request.user, username=username, ip=ip)
        except ValidationError as exc:
            return Response({"detail": exc.messages[0]}, status=status.HTTP_400_BAD_REQUEST)
        return Response(
            LockoutLiftedSerializer(
                {"username": username, "ip": ip, "attempts_removed": removed}
            ).data
        )
