"""The shapes of /api/v1/poison-list: its entries, its changes, and what a check or a report
sends."""

import re

from rest_framework import serializers

from console.delivery.models import PoisonChange, PoisonEntry
from console.ingest.records import ID_MAX_LENGTH

PAGE = 500
PAGE_MAX = 1000
# Most ids, and most body hashes, that one check may ask about.
CHECK_MAX = 1000
REASON_MAX = 2000
QUEUE_MAX = PoisonEntry._meta.get_field("queue").max_length
_SHA256 = re.compile(r"^[0-9a-fA-F]{64}$")


# --- Input ---------------------------------------------------------------------------------------


class MessageIdField(serializers.CharField):
    """A message id as ingest takes them: 1 to 200 printable characters."""

    def __init__(self, **kwargs):
        kwargs.setdefault("min_length", 1)
        super().__init__(max_length=ID_MAX_LENGTH, trim_whitespace=False, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not value.isprintable():
            raise serializers.ValidationError("must be printable text")
        return value


class Sha256Field(serializers.CharField):
    """A SHA-256 in hex: 64 hex digits, upper or lower case, answered in lower case."""

    def __init__(self, **kwargs):
        super().__init__(max_length=64, trim_whitespace=False, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if value and not _SHA256.match(value):
            raise serializers.ValidationError("must be a SHA-256: 64 hexadecimal digits")
        return value.lower()


def _limit():
    return serializers.IntegerField(
        required=False, min_value=1, max_value=PAGE_MAX, help_text=f"{PAGE} by default."
    )


class PoisonListFilterSerializer(serializers.Serializer):
    after = MessageIdField(required=False, help_text="The previous page's `next`.")
    limit = _limit()


class PoisonChangesFilterSerializer(serializers.Serializer):
    since = serializers.IntegerField(
        min_value=0,
        max_value=2**63 - 1,
        help_text="A cursor from the list or a previous answer; 0 for every change.",
    )
    limit = _limit()


class PoisonCheckSerializer(serializers.Serializer):
    ids = serializers.ListField(
        child=MessageIdField(), required=False, max_length=CHECK_MAX, default=list
    )
    body_sha256 = serializers.ListField(
        child=Sha256Field(min_length=64),
        required=False,
        max_length=CHECK_MAX,
        default=list,
    )

    class Meta:
        ref_name = "PoisonCheck"


class PoisonReportSerializer(serializers.Serializer):
    message_id = MessageIdField()
    reason = serializers.CharField(max_length=REASON_MAX, help_text="Why it failed.")
    queue = serializers.CharField(
        required=False, allow_blank=True, max_length=QUEUE_MAX, default=""
    )
    body_sha256 = Sha256Field(
        required=False,
        allow_blank=True,
        default="",
        help_text="SHA-256 of the body's bytes, in hex: the body poisons too on queues that "
        "match by body.",
    )

    class Meta:
        ref_name = "PoisonReport"


# --- Output --------------------------------------------------------------------------------------


class EntrySerializer(serializers.Serializer):
    message_id = serializers.CharField()
    body_sha256 = serializers.CharField(help_text="Empty when no body hash is listed with it.")
    queue = serializers.CharField()
    reason = serializers.CharField()
    source = serializers.CharField(help_text='"engine", or the user name that reported it.')
    added_at = serializers.DateTimeField()

    class Meta:
        ref_name = "PoisonEntry"


class ChangeSerializer(serializers.Serializer):
    cursor = serializers.IntegerField(source="id")
    kind = serializers.ChoiceField(choices=PoisonChange.KINDS)
    message_id = serializers.CharField()
    body_sha256 = serializers.CharField(
        help_text="added: the entry's hash (may be empty); removed: the hash that went with it; "
        "body_cleared: the hash that no longer poisons."
    )
    queue = serializers.CharField()
    reason = serializers.CharField(help_text="added: the entry's reason; otherwise why.")
    source = serializers.CharField(help_text="Who made the change.")
    at = serializers.DateTimeField()

    class Meta:
        ref_name = "PoisonChange"
