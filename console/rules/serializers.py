"""The shapes of /api/v1/rules: a rule with its parameters, what it would do now (its preview),
what it did (its applications), and what proposing one or deciding on one sends."""

from rest_framework import serializers

from console.api import optional_comment
from console.decisions.services import MAX_CANARY, MAX_STEPS
from console.rules.models import (
    ATTEMPTS_MAX,
    COMMENT_MAX,
    DAYS_MAX,
    DELAY_MAX_SECONDS,
    KINDS,
    NAME_MAX,
    StandingRule,
)


def _username(user):
    return user.get_username() if user is not None else None


class PreviewSerializer(serializers.Serializer):
    at = serializers.DateTimeField(help_text="when it was counted")
    matching = serializers.IntegerField(
        help_text="quarantined messages of its queue or group, old enough (archive) or past the "
        "delay (auto-retry), before what it leaves alone"
    )
    investigated = serializers.IntegerField(
        help_text="left alone: someone investigates them or their failure group"
    )
    touched = serializers.IntegerField(help_text="left alone (archive): a note since quarantined")
    exhausted = serializers.IntegerField(
        help_text="left alone (auto-retry): reprocessed its most times already"
    )
    held = serializers.IntegerField(help_text="left alone: an open request holds them")
    count = serializers.IntegerField(help_text="what it would act on now")
    more = serializers.BooleanField(help_text="count is a lower bound: it stopped counting")
    sample = serializers.ListField(child=serializers.CharField(), help_text="the first ids")
    waiting = serializers.IntegerField(help_text="auto-retry: new failures still within the delay")

    class Meta:
        ref_name = "RulePreview"


class ApplicationSerializer(serializers.Serializer):
    request = serializers.IntegerField(source="request_id", help_text="the request it made")
    at = serializers.DateTimeField()
    count = serializers.IntegerField(help_text="messages the request holds")
    status = serializers.CharField(source="request.status", help_text="the request's status")
    left_alone = serializers.DictField(
        child=serializers.IntegerField(), help_text="messages left alone then, by reason"
    )

    class Meta:
        ref_name = "RuleApplication"


class RuleSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    kind = serializers.ChoiceField(KINDS)
    status = serializers.ChoiceField(StandingRule.STATUSES)
    comment = serializers.CharField(help_text="why")
    queue = serializers.CharField(
        help_text="archive: its queue; redirect: the queue whose reprocesses go elsewhere; "
        "auto-retry: its group's queue, when known"
    )
    group = serializers.CharField(help_text="a failure group's fingerprint, or empty")
    exception_type = serializers.CharField(help_text="archive: an exception type, or empty")
    days = serializers.IntegerField(allow_null=True)
    to_queue = serializers.CharField(help_text="redirect: where the reprocesses go")
    delay_seconds = serializers.IntegerField(allow_null=True)
    max_attempts = serializers.IntegerField(allow_null=True)
    steps = serializers.ListField(child=serializers.IntegerField())
    refailure_threshold = serializers.FloatField()
    from_file = serializers.BooleanField(help_text="proposed by loading a queue file")
    proposed_by = serializers.SerializerMethodField()
    proposed_at = serializers.DateTimeField()
    decided_by = serializers.SerializerMethodField()
    decided_at = serializers.DateTimeField(allow_null=True)
    decision_comment = serializers.CharField()
    ended_by = serializers.SerializerMethodField()
    ended_at = serializers.DateTimeField(allow_null=True)
    end_comment = serializers.CharField()
    checked_at = serializers.DateTimeField(
        allow_null=True, help_text="when its application last looked"
    )

    class Meta:
        ref_name = "StandingRule"

    def get_proposed_by(self, rule) -> str:
        return _username(rule.proposed_by)

    def get_decided_by(self, rule) -> str | None:
        return _username(rule.decided_by)

    def get_ended_by(self, rule) -> str | None:
        return _username(rule.ended_by)


class RuleDetailSerializer(RuleSerializer):
    preview = PreviewSerializer(
        allow_null=True, help_text="what it would do now; null once it ended"
    )
    applications = ApplicationSerializer(many=True, help_text="what it did, newest first")

    class Meta:
        ref_name = "StandingRuleDetail"


class RuleListFilterSerializer(serializers.Serializer):
    status = serializers.ChoiceField(StandingRule.STATUSES, required=False)
    kind = serializers.ChoiceField(KINDS, required=False)


class RuleProposeSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=NAME_MAX)
    kind = serializers.ChoiceField(KINDS)
    comment = serializers.CharField(max_length=COMMENT_MAX, help_text="why")
    queue = serializers.CharField(max_length=100, required=False)
    group = serializers.CharField(max_length=64, required=False)
    exception_type = serializers.CharField(max_length=200, required=False)
    days = serializers.IntegerField(min_value=1, max_value=DAYS_MAX, required=False)
    to_queue = serializers.CharField(max_length=100, required=False)
    delay_seconds = serializers.IntegerField(
        min_value=0, max_value=DELAY_MAX_SECONDS, required=False
    )
    max_attempts = serializers.IntegerField(min_value=1, max_value=ATTEMPTS_MAX, required=False)
    steps = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_CANARY),
        max_length=MAX_STEPS,
        required=False,
    )
    refailure_threshold = serializers.FloatField(min_value=0, max_value=100, required=False)

    class Meta:
        ref_name = "StandingRulePropose"


class RuleCommentSerializer(serializers.Serializer):
    comment = optional_comment(COMMENT_MAX, help_text="required for a rejection and a removal")

    class Meta:
        ref_name = "StandingRuleComment"
