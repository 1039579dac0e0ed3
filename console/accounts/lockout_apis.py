"""/api/v1/lockouts: the login lockouts in force, and lifting one. For administrators."""

from django.core.exceptions import ValidationError
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiResponse,
    extend_schema,
    extend_schema_serializer,
)
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from console.accounts import lockouts
from console.api import ERRORS, ErrorSerializer, answer, sent
from console.permissions import MANAGE_USERS, has_perms

TAGS = ["lockouts"]


@extend_schema_serializer(component_name="Lockout")
class LockoutSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(
        choices=[lockouts.PAIR, lockouts.ADDRESS],
        help_text="pair: a user name locked out from one address (from other addresses it logs "
        "in, and so do other names from that address); address: an address slowed down, "
        "whatever names it tries, each attempt waiting `delay_seconds` after the previous one",
    )
    username = serializers.CharField(help_text="the pair's user name; empty for an address")
    ip = serializers.CharField(help_text="the address")
    failures = serializers.IntegerField(help_text="failed logins counted inside the cool-off")
    last_failure_at = serializers.DateTimeField()
    until = serializers.DateTimeField(
        help_text="when the pair's lockout, or the address's throttle, ends unless lifted, or "
        "failures go on"
    )
    delay_seconds = serializers.IntegerField(
        allow_null=True, help_text="an address: the wait between two attempts; null for a pair"
    )
    next_attempt_at = serializers.DateTimeField(
        allow_null=True, help_text="an address: when it may try again; null for a pair"
    )
    seen_with = serializers.ListField(
        child=serializers.CharField(),
        help_text="an address: the user names it tried; empty for a pair",
    )


class LockoutListApi(APIView):
    """The pair lockouts and address throttles in force."""

    permission_classes = [has_perms(MANAGE_USERS)]

    @extend_schema_serializer(component_name="LockoutList")
    class OutputSerializer(serializers.Serializer):
        results = LockoutSerializer(many=True)

    @extend_schema(
        operation_id="lockouts_list",
        summary="The login lockouts and address throttles in force",
        tags=TAGS,
        responses={
            200: answer(
                OutputSerializer,
                {
                    "results": [
                        {
                            "kind": "pair",
                            "username": "dana",
                            "ip": "203.0.113.7",
                            "failures": 5,
                            "last_failure_at": "2026-11-27T07:40:00Z",
                            "until": "2026-11-27T08:10:00Z",
                            "delay_seconds": None,
                            "next_attempt_at": None,
                            "seen_with": [],
                        }
                    ]
                },
            ),
            **ERRORS,
        },
    )
    def get(self, request):
        return Response(self.OutputSerializer({"results": lockouts.lockout_list()}).data)


class LockoutLiftApi(APIView):
    """Lift the lockout of a pair (a user name and an address), the throttle of an address, or
    the lockouts of a user name from every address."""

    permission_classes = [has_perms(MANAGE_USERS)]

    @extend_schema_serializer(component_name="LockoutLiftRequest")
    class InputSerializer(serializers.Serializer):
        username = serializers.CharField(
            required=False, allow_blank=True, default="", max_length=lockouts.USERNAME_MAX
        )
        ip = serializers.IPAddressField(required=False, allow_blank=True, default="")

        def validate(self, data):
            if not data["username"] and not data["ip"]:
                raise serializers.ValidationError("name a user name or an address")
            return data

    @extend_schema_serializer(component_name="LockoutLifted")
    class OutputSerializer(serializers.Serializer):
        username = serializers.CharField()
        ip = serializers.CharField()
        attempts_removed = serializers.IntegerField(
            help_text="failed-login records forgotten; 0 if nothing was locked out"
        )

    @extend_schema(
        operation_id="lockouts_lift",
        summary="Lift a login lockout",
        description="Forgets failed logins so that they may log in again at once. A user name "
        "and an address: that pair's failures. An address alone: every failure from it, whatever "
        "the name (its throttle and its pairs' lockouts). A user name alone: its failures from "
        "every address. Audited.",
        tags=TAGS,
        request=InputSerializer,
        examples=[sent({"username": "dana", "ip": "203.0.113.7"})],
        responses={
            200: answer(
                OutputSerializer, {"username": "dana", "ip": "203.0.113.7", "attempts_removed": 5}
            ),
            400: OpenApiResponse(
                ErrorSerializer,
                description="The input is not valid.",
                examples=[
                    OpenApiExample("Neither", value={"detail": "name a user name or an address"})
                ],
            ),
            **ERRORS,
        },
    )
    def post(self, request):
        serializer = self.InputSerializer(data=request.data)
        if not serializer.is_valid():
            field, problems = next(iter(serializer.errors.items()))
            return Response(
                {"detail": f"{field}: {problems[0]}"}, status=status.HTTP_400_BAD_REQUEST
            )
        username, ip = serializer.validated_data["username"], serializer.validated_data["ip"]
        try:
            removed = lockouts.lockout_lift(actor=request.user, username=username, ip=ip)
        except ValidationError as exc:
            return Response({"detail": exc.messages[0]}, status=status.HTTP_400_BAD_REQUEST)
        return Response(
            self.OutputSerializer(
                {"username": username, "ip": ip, "attempts_removed": removed}
            ).data
        )
