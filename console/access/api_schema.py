"""How /api/v1/role-grants stands in the OpenAPI document: each operation's decoration, with the
examples /api/docs/ shows."""

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers

from console.access import serializers as s
from console.api import BAD_REQUEST, ERRORS, NOT_FOUND, answer, path_parameter, sent

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


grant_list = extend_schema(
    operation_id="role_grants_list",
    summary="Role grants, newest first (pending ones wait for a second administrator).",
    description="The newest 200 role grants, pending, confirmed, rejected, withdrawn or "
    "expired, newest first; a pending one waits for a second administrator.",
    responses={200: answer(s.GrantSerializer(many=True), _GRANT), **ERRORS},
)

grant_create = extend_schema(
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
    request=s.GrantAskSerializer,
    examples=[sent(_ASK)],
    responses={
        201: answer(s.GrantSerializer, _GRANT, "The grant, waiting for a second administrator."),
        200: answer(_GIVEN, {"detail": "dana now holds the role operator"}, "The role is given."),
        400: BAD_REQUEST,
        **ERRORS,
    },
)

grant = extend_schema(
    operation_id="role_grants_retrieve",
    description="One role grant: who asked for which role for whom, why, and what became of it.",
    parameters=[GRANT_ID],
    responses={200: answer(s.GrantSerializer, _GRANT), 404: NOT_FOUND, **ERRORS},
)


def _decision(operation_id, summary, description, comment, decided):
    """Confirming or rejecting a grant: it takes a comment and answers the grant."""
    return extend_schema(
        operation_id=operation_id,
        summary=summary,
        description=description,
        parameters=[GRANT_ID],
        request=s.CommentSerializer,
        examples=[sent({"comment": comment})],
        responses={
            200: answer(s.GrantSerializer, decided),
            400: BAD_REQUEST,
            404: NOT_FOUND,
            **ERRORS,
        },
    )


grant_confirm = _decision(
    "role_grants_confirm",
    "Confirm someone else's role grant: the role is given. Four eyes: the "
    "administrator who asked, and the user who receives it, get 403.",
    "Confirm a pending role grant that another administrator asked for: the "
    "user holds the role from now on. Refused (403) to the administrator who asked and to "
    "the user who receives it, and during the approver cool-down.",
    "agreed with the team lead",
    _CONFIRMED,
)

_REJECTED_BECAUSE = "the night shift has two approvers already"
grant_reject = _decision(
    "role_grants_reject",
    "Reject a pending role grant; the comment (why) is required.",
    "Reject a pending role grant, saying why (the comment is required): the "
    "user does not get the role.",
    _REJECTED_BECAUSE,
    {**_CONFIRMED, "status": "rejected", "decision_comment": _REJECTED_BECAUSE},
)
