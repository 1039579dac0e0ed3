"""The shapes of /api/v1/audit: an entry of the trail, a page of it, and its filters."""

from rest_framework import serializers

from console.audit import selectors
from console.audit.forms import API_PAGE_SIZE_MAX, filters_error


class FilterSerializer(serializers.Serializer):
    actor = serializers.CharField(
        required=False, allow_blank=True, max_length=150, help_text="The actor, exactly."
    )
    actor_contains = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=150,
        help_text="A part of the actor's name, in any case.",
    )
    action = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=61,
        help_text='The action, exactly; or a prefix when it ends in "." or "*" ("request.").',
    )
    target_type = serializers.CharField(required=False, allow_blank=True, max_length=60)
    target_id = serializers.CharField(required=False, allow_blank=True, max_length=300)
    since = serializers.DateTimeField(required=False, help_text="Entries at or after this time.")
    until = serializers.DateTimeField(required=False, help_text="Entries before this time.")

    def validate(self, data):
        error = filters_error(data)
        if error:
            raise serializers.ValidationError(error)
        return data


class PageFilterSerializer(FilterSerializer):
    after = serializers.IntegerField(
        required=False, min_value=0, help_text="Entries older than this seq."
    )
    before = serializers.IntegerField(
        required=False, min_value=0, help_text="Entries newer than this seq."
    )
    page_size = serializers.IntegerField(
        required=False, min_value=1, max_value=API_PAGE_SIZE_MAX, default=selectors.PAGE_SIZE
    )


class EntrySerializer(serializers.Serializer):
    seq = serializers.IntegerField()
    at = serializers.DateTimeField()
    actor = serializers.CharField()
    action = serializers.CharField()
    target_type = serializers.CharField()
    target_id = serializers.CharField()
    details = serializers.JSONField()
    prev_hash = serializers.CharField()
    hash = serializers.CharField()

    class Meta:
        ref_name = "AuditEntry"


class PageSerializer(serializers.Serializer):
    results = EntrySerializer(many=True, source="rows")
    next = serializers.IntegerField(
        source="next_cursor", allow_null=True, help_text="`after` for the next (older) page."
    )
    previous = serializers.IntegerField(
        source="prev_cursor",
        allow_null=True,
        help_text="`before` for the previous (newer) page.",
    )

    class Meta:
        ref_name = "AuditPage"
