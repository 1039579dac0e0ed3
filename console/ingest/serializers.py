"""The shapes of POST /api/v1/messages: a message, a batch, and the answer that counts what
became of each; and the refusals' words, which the schema's examples quote."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from console.ingest.records import ID_MAX_LENGTH

EXPECTED = 'send a message object, a list of them, or {"messages": [...]}'


def too_large(limit):
    return (
        f"the request is over {limit} bytes; send one message of up to MAX_BODY_BYTES per request, "
        "or larger batches through the inbox folder"
    )


# For the schema only: console.ingest.services checks the messages (and says why it refuses one).
class MessageSerializer(serializers.Serializer):
    """A message to send in."""

    id = serializers.CharField(min_length=1, max_length=ID_MAX_LENGTH)
    queue = serializers.CharField(help_text="The name of an existing queue.")
    body = serializers.CharField(allow_blank=True, trim_whitespace=False)
    body_encoding = serializers.ChoiceField(
        ["text", "base64"], required=False, allow_null=True, help_text='"text" by default.'
    )
    content_type = serializers.CharField(
        required=False,
        allow_null=True,
        help_text="text/plain for a text body, application/octet-stream for base64 by default.",
    )
    headers = serializers.DictField(
        child=serializers.CharField(allow_blank=True),
        required=False,
        allow_null=True,
        help_text=(
            "Text to text. A name beginning with antidote-, amqp-, nats- or redis- is the "
            "product's own (R18): it is kept under x-foreign-<name>, and never says where a "
            "message goes. Limited by MAX_HEADER_COUNT headers, MAX_HEADER_NAME_BYTES a name, "
            "MAX_HEADER_VALUE_BYTES a value and MAX_HEADERS_TOTAL_BYTES in all (UTF-8): a "
            "message over one is refused, its error naming the setting."
        ),
    )
    conversation_id = serializers.CharField(required=False, allow_null=True, allow_blank=True)
    sender = serializers.CharField(required=False, allow_null=True, allow_blank=True)

    class Meta:
        ref_name = "IngestMessage"


class BatchSerializer(serializers.Serializer):
    messages = MessageSerializer(many=True)

    class Meta:
        ref_name = "IngestBatch"


class RefusalSerializer(serializers.Serializer):
    index = serializers.IntegerField(allow_null=True, help_text="Its place in the batch, from 0.")
    id = serializers.CharField(allow_null=True)
    error = serializers.CharField()

    class Meta:
        ref_name = "IngestRefusal"


class ResultSerializer(serializers.Serializer):
    accepted = serializers.IntegerField()
    duplicates = serializers.IntegerField()
    refused = serializers.IntegerField()
    errors = serializers.SerializerMethodField()

    class Meta:
        ref_name = "IngestResult"

    @extend_schema_field(RefusalSerializer(many=True))
    def get_errors(self, result):
        return [e.as_dict() for e in result.errors]
