"""The OpenAPI side of /api/v1/lockouts: examples and the decorations apis.py applies."""

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema

from console.accounts.lockouts.serializers import (
    LockoutLiftedSerializer,
    LockoutLiftSerializer,
    LockoutListSerializer,
)
from console.api import ERRORS, ErrorSerializer, answer, sent

TAGS = ["lockouts"]

lockouts_list = extend_schema(
    operation_id="lockouts_list",
    summary="The login lockouts and address throttles in force",
    tags=TAGS,
    responses={
        200: answer(
            LockoutListSerializer,
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

lockouts_lift = extend_schema(
    operation_id="lockouts_lift",
    summary="Lift a login lockout",
    description="Forgets failed logins so that they may log in again at once. A user name "
    "and an address: that pair's failures. An address alone: every failure from it, whatever "
    "the name (its throttle and its pairs' lockouts). A user name alone: its failures from "
    "every address. Audited.",
    tags=TAGS,
    request=LockoutLiftSerializer,
    examples=[sent({"username": "dana", "ip": "203.0.113.7"})],
    responses={
        200: answer(
            LockoutLiftedSerializer,
            {"username": "dana", "ip": "203.0.113.7", "attempts_removed": 5},
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
