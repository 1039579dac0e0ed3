"""How /api/v1/rules stands in the OpenAPI document: each operation's decoration, with the
examples /api/docs/ shows."""

from drf_spectacular.utils import OpenApiParameter, extend_schema

from console.api import BAD_FILTERS, BAD_REQUEST, ERRORS, NOT_FOUND, answer, refused, sent
from console.rules import serializers as s

TAGS = ["standing rules"]
RULE_ID = OpenApiParameter(
    "rule_id", int, OpenApiParameter.PATH, description="The standing rule's id."
)
_GROUP = "0d5b8c0b8f9a4c1e9a3f6c2d7e8b1a4f0d5b8c0b8f9a4c1e9a3f6c2d7e8b1a4f"

# The examples of /api/docs/.
_RULE = {
    "id": 3,
    "name": "old-missing-orders",
    "kind": "archive",
    "status": "active",
    "comment": "orders missing for a month are gone for good (SHOP-231)",
    "queue": "orders",
    "group": _GROUP,
    "exception_type": "",
    "days": 30,
    "to_queue": "",
    "delay_seconds": None,
    "max_attempts": None,
    "steps": [],
    "refailure_threshold": 0.0,
    "from_file": False,
    "proposed_by": "admin",
    "proposed_at": "2026-11-20T09:12:03Z",
    "decided_by": "approver",
    "decided_at": "2026-11-20T10:01:44Z",
    "decision_comment": "",
    "ended_by": None,
    "ended_at": None,
    "end_comment": "",
    "checked_at": "2026-11-27T03:00:00Z",
}
_PREVIEW = {
    "at": "2026-11-27T07:16:36Z",
    "matching": 14,
    "investigated": 2,
    "touched": 1,
    "exhausted": 0,
    "held": 0,
    "count": 11,
    "more": False,
    "sample": ["demo-orders-000008", "demo-orders-000011"],
    "waiting": 0,
}
_APPLICATION = {
    "request": 41,
    "at": "2026-11-27T03:00:00Z",
    "count": 9,
    "status": "done",
    "left_alone": {"investigated": 2, "touched": 0, "exhausted": 0, "held": 0},
}
_DETAIL = {**_RULE, "preview": _PREVIEW, "applications": [_APPLICATION]}
_PROPOSED = {
    **_RULE,
    "status": "proposed",
    "decided_by": None,
    "decided_at": None,
    "checked_at": None,
}
_DECIDED = refused(
    "It is not waiting for approval any more, or the comment is missing.",
    "standing rule 3 (archive old-missing-orders) is no longer waiting for approval",
)


def _on_rule(answers, **more):
    return extend_schema(
        tags=TAGS, parameters=[RULE_ID], responses={**answers, 404: NOT_FOUND, **ERRORS}, **more
    )


rule_list = extend_schema(
    tags=TAGS,
    operation_id="rules_list",
    description="The standing rules, newest first, of a status and a kind if asked: archive "
    "(FAIL a queue's untouched quarantined messages after N days), redirect (a queue's "
    "reprocesses go to another queue) and auto-retry (a group's new failures reprocessed after a "
    "delay, at most K times a message, in steps).",
    parameters=[s.RuleListFilterSerializer],
    responses={200: answer(s.RuleSerializer(many=True), _RULE), 400: BAD_FILTERS, **ERRORS},
)

rule_propose = extend_schema(
    tags=TAGS,
    operation_id="rules_create",
    description="Propose a standing rule (approvers and administrators). It acts only once "
    "someone else who may approve rules approves it (four eyes, R17); the proposer's own "
    "proposal of the same name still waiting is replaced. Each kind takes its own parameters: "
    "archive queue, group and/or exception_type, days; redirect queue and to_queue; auto-retry "
    "group, delay_seconds, max_attempts, and steps with a refailure_threshold.",
    request=s.RuleProposeSerializer,
    examples=[
        sent(
            {
                "name": "old-missing-orders",
                "kind": "archive",
                "queue": "orders",
                "group": _GROUP,
                "days": 30,
                "comment": _RULE["comment"],
            },
            name="An archive",
        ),
        sent(
            {
                "name": "orders-to-v2",
                "kind": "redirect",
                "queue": "orders",
                "to_queue": "orders-v2",
                "comment": "the new order service takes the reprocesses (SHOP-240)",
            },
            name="A redirect",
        ),
        sent(
            {
                "name": "retry-inventory-timeouts",
                "kind": "auto_retry",
                "group": _GROUP,
                "delay_seconds": 300,
                "max_attempts": 3,
                "steps": [1, 10],
                "refailure_threshold": 5,
                "comment": "the inventory service times out under load, then recovers",
            },
            name="An auto-retry",
        ),
    ],
    responses={201: answer(s.RuleSerializer, _PROPOSED), 400: BAD_REQUEST, **ERRORS},
)

rule_detail = _on_rule(
    {200: answer(s.RuleDetailSerializer, _DETAIL)},
    operation_id="rules_retrieve",
    description="One standing rule: its parameters, who proposed and approved it, what it would "
    "do now (its preview: how many messages, and how many it leaves alone and why) and what it "
    "did (each request it made or redirected).",
)


def _decision(operation_id, description, example, answered):
    return _on_rule(
        {200: answer(s.RuleSerializer, answered), 400: _DECIDED},
        operation_id=operation_id,
        description=description,
        request=s.RuleCommentSerializer,
        examples=[sent(example)],
    )


rule_approve = _decision(
    "rules_approve",
    "Approve a proposed rule: someone other than its proposer, with the right to approve "
    "rules, past the approver cool-down. It acts from now, and replaces the active rule of its "
    "name.",
    {"comment": "checked the preview: 11 messages, all a month old"},
    _RULE,
)
rule_reject = _decision(
    "rules_reject",
    "Reject a proposed rule, saying why: as an approval, someone other than its proposer.",
    {"comment": "these are still being looked into"},
    {**_PROPOSED, "status": "rejected", "decided_by": "approver"},
)
rule_withdraw = _decision(
    "rules_withdraw",
    "Its proposer takes a proposed rule back before anyone decided.",
    {"comment": "wrong queue"},
    {**_PROPOSED, "status": "withdrawn", "ended_by": "admin"},
)
rule_remove = _decision(
    "rules_remove",
    "Remove an active rule, saying why: it acts no more, at once (one person may). Its requests "
    "already made go on as requests do.",
    {"comment": "the old order service is back"},
    {**_RULE, "status": "removed", "ended_by": "admin", "end_comment": "the service is back"},
)
