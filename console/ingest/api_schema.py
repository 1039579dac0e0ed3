"""How POST /api/v1/messages stands in the OpenAPI document: its decoration, with the examples
/api/docs/ shows."""

from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
)

from console.api import ERRORS, ErrorSerializer, refused
from console.ingest import serializers as s
from console.ingest.records import ID_MAX_LENGTH

_JSON_EXAMPLE = "Expecting ',' delimiter: line 1 column 31 (char 30)"
_TOO_LONG = (1, None, f"id is at most {ID_MAX_LENGTH} characters; this one has 10,000")


def _result(name, accepted, duplicates, errors):
    return OpenApiExample(
        name,
        value={
            "accepted": accepted,
            "duplicates": duplicates,
            "refused": len(errors),
            "errors": [{"index": i, "id": id_, "error": text} for i, id_, text in errors],
        },
    )


messages_ingest = extend_schema(
    operation_id="messages_ingest",
    description="Send messages in: one message object, a list of them, or "
    '`{"messages": [...]}`. Each is checked, deduplicated (the same id and body again is '
    "a duplicate, not an error: resending a batch is safe) and appended to its queue, "
    "where the next delivery run picks it up. 201 when every message was accepted or a "
    "duplicate; 200 when some were refused (`errors` names each by its index in the "
    "batch: resend only those, fixed); 400 when nothing was accepted. A service account "
    "in the application role sends into every queue; a person (signed in) only into the "
    "queues an administrator let them send into by hand, confirmed by a second one (403 "
    "names the others), and each such call is in the audit trail.",
    # JSON only: anything else is a 415.
    request={
        "application/json": PolymorphicProxySerializer(
            component_name="IngestBody",
            serializers=[s.MessageSerializer, s.MessageSerializer(many=True), s.BatchSerializer],
            resource_type_field_name=None,
            many=False,
        )
    },
    examples=[
        OpenApiExample(
            "One message",
            value={
                "id": "order-2",
                "queue": "orders",
                "body": '{"order": 2}',
                "content_type": "application/json",
            },
            request_only=True,
        ),
        OpenApiExample(
            "A batch",
            value={
                "messages": [
                    {
                        "id": "order-3",
                        "queue": "orders",
                        "body": "b3JkZXIgMw==",
                        "body_encoding": "base64",
                    },
                    {
                        "id": "order-4",
                        "queue": "orders",
                        "body": "order 4",
                        "headers": {"trace": "abc"},
                        "conversation_id": "c-4",
                    },
                ]
            },
            request_only=True,
        ),
    ],
    responses={
        201: OpenApiResponse(
            s.ResultSerializer,
            description="Every message accepted, or a duplicate.",
            examples=[_result("Accepted", 1, 0, [])],
        ),
        200: OpenApiResponse(
            s.ResultSerializer,
            description="Some accepted, some refused (see errors).",
            examples=[_result("Some refused", 1, 0, [_TOO_LONG])],
        ),
        400: OpenApiResponse(
            PolymorphicProxySerializer(
                component_name="IngestRefused",
                serializers=[s.ResultSerializer, ErrorSerializer],
                resource_type_field_name=None,
            ),
            description="Nothing accepted: every message refused (a result), or the request "
            "was not a batch of messages (a detail).",
            examples=[
                _result(
                    "All refused",
                    0,
                    0,
                    [(0, "order-2", "unknown queue 'ordres': no queue of that name exists")],
                ),
                OpenApiExample("Not a batch", value={"detail": f"malformed JSON: {_JSON_EXAMPLE}"}),
            ],
        ),
        413: refused("The request is too large.", s.too_large(11534336), "Too large"),
        415: refused("The request is not JSON.", "send Content-Type: application/json", "Not JSON"),
        **ERRORS,
    },
)
