"""The serializers of /api/v1/lockouts (apis.py)."""

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from console.accounts.lockouts.selectors import ADDRESS, PAIR, USERNAME_MAX


@extend_schema_serializer(component_name="Lockout")
class LockoutSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(
        choices=[PAIR, ADDRESS],
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


@extend_schema_serializer(component_name="LockoutList")
class LockoutListSerializer(serializers.Serializer):
    results = LockoutSerializer(many=True)


@extend_schema_serializer(component_name="LockoutLiftRequest")
class LockoutLiftSerializer(serializers.Serializer):
    username = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=USERNAME_MAX
    )
    ip = serializers.IPAddressField(required=False, allow_blank=True, default="")

    def validate(self, data):
        if not data["username"] and not data["ip"]:
            raise serializers.ValidationError("name a user name or an address")
        return data


@extend_schema_serializer(component_name="LockoutLifted")
class LockoutLiftedSerializer(serializers.Serializer):
    username = serializers.CharField()
    ip = serializers.CharField()
    attempts_removed = serializers.IntegerField(
        help_text="failed-login records forgotten; 0 if nothing was locked out"
    )
