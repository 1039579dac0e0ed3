"""The shapes of /api/v1/lake-queries: a query, its criteria, its result's rows and pages."""

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from console.lakequery import selectors
from workers.engine.states import STATES


@extend_schema_serializer(component_name="LakeQueryBadInput")
class BadInputSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="Why, in one sentence.")
    errors = serializers.JSONField(
        required=False,
        help_text="The messages by field (`criteria` for the criteria as a whole; a list's by "
        "item), when fields were not valid.",
    )


@extend_schema_serializer(component_name="LakeQuery")
class LakeQuerySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    # Text, not an enum: another "status" enum (action requests') would collide with it.
    status = serializers.CharField(help_text="queued, running, done, failed or cancelled")
    kind = serializers.CharField(
        help_text="search (messages that match the criteria) or why (why a failure group's "
        "messages fail: its criteria name the group, its queue and its period)"
    )
    criteria = serializers.DictField()
    analysis = serializers.JSONField(
        help_text="A why query's answer once done: how many failures and deliveries it found "
        "and read (sampled above WHY_FAIL_SAMPLE), and its findings, best first: each a trait "
        "(kind: field, value, header, header_value, content_type, sender, size, not_json; its "
        "name and value; absent), with its count and share among the failures and among the "
        "deliveries, and its lift. Empty for a search."
    )
    requester = serializers.CharField(source="requester.username")
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    heartbeat_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    progress = serializers.IntegerField(help_text="0 to 100")
    scanned = serializers.IntegerField(help_text="messages looked at: every message in the lake")
    matched = serializers.IntegerField()
    upto = serializers.IntegerField(
        allow_null=True, help_text="the last events commit the query folded"
    )
    error = serializers.CharField()


@extend_schema_serializer(component_name="LakeQueryResultRow")
class ResultRowSerializer(serializers.Serializer):
    message_id = serializers.CharField()
    queue = serializers.CharField()
    state = serializers.CharField()
    delivery_count = serializers.IntegerField()
    sender = serializers.CharField(allow_null=True)
    conversation_id = serializers.CharField(allow_null=True)
    enqueued_at = serializers.DateTimeField(allow_null=True)
    body_size = serializers.IntegerField()
    reason = serializers.CharField(allow_null=True, help_text="of its latest event")
    updated = serializers.DateTimeField(help_text="time of its latest event")


@extend_schema_serializer(component_name="LakeQueryCriteria")
class CriteriaSerializer(serializers.Serializer):
    queues = serializers.ListField(child=serializers.CharField(), required=False)
    states = serializers.ListField(child=serializers.ChoiceField(choices=STATES), required=False)
    sender = serializers.CharField(required=False, allow_blank=True)
    conversation_id = serializers.CharField(required=False, allow_blank=True)
    message_id_prefix = serializers.CharField(required=False, allow_blank=True)
    enqueued_from = serializers.DateTimeField(required=False, allow_null=True)
    enqueued_to = serializers.DateTimeField(required=False, allow_null=True)
    # Whitespace is part of what is searched for: kept as sent.
    body_contains = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
    body_regex = serializers.CharField(
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        help_text="a Java regular expression, found anywhere in the body",
    )
    json_path = serializers.CharField(
        required=False, allow_blank=True, help_text="$.a.b or $.a[0].b"
    )
    json_equals = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
    header_name = serializers.CharField(required=False, allow_blank=True)
    header_value = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)

    def validate(self, data):
        unknown = sorted(set(self.initial_data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError(f"unknown criterion {', '.join(map(repr, unknown))}")
        return data


@extend_schema_serializer(component_name="LakeQueryList")
class LakeQueryListSerializer(serializers.Serializer):
    results = LakeQuerySerializer(many=True)


class ResultFilterSerializer(serializers.Serializer):
    after = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
    limit = serializers.IntegerField(required=False, min_value=1, max_value=selectors.PAGE_SIZE_MAX)


@extend_schema_serializer(component_name="LakeQueryResultPage")
class ResultPageSerializer(serializers.Serializer):
    results = ResultRowSerializer(many=True)
    next = serializers.CharField(
        allow_null=True, help_text="pass as `after` for the next page; null at the end"
    )
