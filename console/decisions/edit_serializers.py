"""The API's shapes of an edit (console.decisions.apis): one message's headers and a bulk edit's
JSON Patch as a request is asked with them and as it shows them, and a patch's preview (before
the request, and frozen in it). The request's own shapes are console.decisions.serializers."""

import json

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from console.decisions import selectors
from console.readmodels.models import MessageIndex
from workers.jobs.decisions.body_edits import (
    PATCH_MAX_OPERATIONS,
    PATCH_OPS,
    PatchRefused,
    json_refused,
    patch_parse,
    patch_sha256,
)

_PATCH_SCHEMA = {
    "type": "array",
    "minItems": 1,
    "maxItems": PATCH_MAX_OPERATIONS,
    "items": {
        "type": "object",
        "properties": {
            "op": {"type": "string", "enum": list(PATCH_OPS)},
            "path": {"type": "string", "description": "A JSON Pointer (RFC 6901)."},
            "from": {"type": "string", "description": "move and copy: a JSON Pointer."},
            "value": {"description": "add, replace and test: any JSON value."},
        },
        "required": ["op", "path"],
    },
}


@extend_schema_field(_PATCH_SCHEMA)
class PatchField(serializers.JSONField):
    """A JSON Patch (RFC 6902): its operations, checked as the request form checks them."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if isinstance(value, str):
            raise serializers.ValidationError("the patch is a JSON array of operations, not text")
        try:
            return patch_parse(value)
        except PatchRefused as exc:
            raise serializers.ValidationError(str(exc)) from None


def edited_headers_field():
    return serializers.DictField(
        child=serializers.CharField(allow_blank=True, trim_whitespace=False),
        required=False,
        allow_null=True,
        help_text="Reprocess one message only: its headers as its new version carries them, "
        "names to text values (stored with the body as a new version; the original is kept). "
        "The product's own headers (antidote-, amqp-, nats-, redis-), a broker's dead-letter "
        "record (x-death...) and those its queue locks (locked_headers) are kept as they are: "
        "leave them out, or give them unchanged. A second person always approves it (R17).",
    )


def patch_field(**kwargs):
    return PatchField(
        help_text="Reprocess only, on a selection, a failure group, a filter or one message: "
        "a bulk edit, the JSON Patch (RFC 6902) each message's body gets (each edited body "
        "stored as a new version; the original is kept). Its preview on the first messages is "
        "made and frozen with the request; a request is refused when a previewed result is "
        "not a body its message can have (it does not parse as its JSON content type). A "
        "message it does not apply to is counted failed and stays quarantined. A second "
        "person always approves it (R17).",
        **kwargs,
    )


def json_body_check(data, field):
    """An edited body of a JSON message must parse, as the request form checks it."""
    scope = data.get("scope") or {}
    if data.get("edited_body") is None or scope.get("kind") != "message":
        return
    found = MessageIndex.objects.filter(message_id=scope["id"]).values_list("content_type")
    content_type = next(iter(found), ("",))[0]
    said = json_refused(data["edited_body"], content_type)
    if said:
        raise serializers.ValidationError({field: said})


# --- A preview ------------------------------------------------------------------------------------


class DiffSerializer(serializers.Serializer):
    binary = serializers.BooleanField(help_text="One side is not text: no line diff.")
    identical = serializers.BooleanField()
    lines = serializers.ListField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="[kind, text]: kind added, removed, same or hunk.",
    )
    truncated = serializers.BooleanField(help_text="Cut: it has more lines than are given.")
    partial = serializers.BooleanField(help_text="Only the first 64 KB of each body compared.")

    class Meta:
        ref_name = "BodyDiff"


class PreviewRowSerializer(serializers.Serializer):
    message_id = serializers.CharField()
    queue = serializers.CharField()
    content_type = serializers.CharField()
    body_version = serializers.IntegerField(help_text="The version the patch was applied to.")
    applies = serializers.BooleanField(help_text="The patch makes a new body.")
    refused = serializers.BooleanField(
        help_text="The patched body cannot be this message's body (it does not parse as its "
        "content type, or it is too large): the request is refused."
    )
    reason = serializers.CharField(help_text="Why not, when it does not apply; no body quoted.")
    size_before = serializers.IntegerField(allow_null=True)
    size_after = serializers.IntegerField(allow_null=True)
    diff = serializers.SerializerMethodField()

    class Meta:
        ref_name = "PatchPreviewRow"

    @extend_schema_field(DiffSerializer(allow_null=True))
    def get_diff(self, row):
        """The body's diff: only to a caller who may read bodies, who asked for them."""
        if not self.context.get("with_body") or not row.get("diff"):
            return None
        return DiffSerializer(row["diff"]).data


class PatchPreviewSerializer(serializers.Serializer):
    patch_sha256 = serializers.CharField(help_text="The patch's fingerprint.")
    rows = PreviewRowSerializer(many=True, help_text="The first messages of the scope, by id.")
    failing = serializers.IntegerField(help_text="How many of them the patch does not apply to.")
    refused = serializers.CharField(
        help_text="Why a request with this patch would be refused; empty when it would not."
    )

    class Meta:
        ref_name = "PatchPreview"


# --- A request's edits, as it shows them ----------------------------------------------------------


class EditsSerializer(serializers.Serializer):
    """What a request edits, as its page shows it: headers to a caller who may read messages,
    bodies (the preview's diffs) to one who may read bodies and asked for them."""

    edited_headers = serializers.SerializerMethodField()
    header_changes = serializers.SerializerMethodField()
    patch = serializers.SerializerMethodField()
    patch_sha256 = serializers.SerializerMethodField()
    patch_preview = serializers.SerializerMethodField()
    edit_failures = serializers.SerializerMethodField()

    class Meta:
        ref_name = "ActionRequestEdits"

    @extend_schema_field(
        {
            "type": "object",
            "nullable": True,
            "additionalProperties": {"type": "string"},
            "description": "One message's headers as its new version carries them; null when "
            "they are kept, or for a caller who may not read messages.",
        }
    )
    def get_edited_headers(self, r):
        if r.edited_headers is None or not self.context.get("with_messages"):
            return None
        return json.loads(r.edited_headers)

    @extend_schema_field(
        {
            "type": "array",
            "nullable": True,
            "items": {"type": "array", "items": {"type": "string", "nullable": True}},
            "description": "[added|removed|changed, name, before, after] of the edited headers, "
            "against those the message had when the request was made; null for a caller who "
            "may not read messages.",
        }
    )
    def get_header_changes(self, r):
        return r.header_changes if self.context.get("with_messages") else None

    @extend_schema_field({**_PATCH_SCHEMA, "nullable": True, "description": "A bulk edit's."})
    def get_patch(self, r):
        return None if r.patch is None else json.loads(r.patch)

    @extend_schema_field({"type": "string", "nullable": True})
    def get_patch_sha256(self, r):
        return None if r.patch is None else patch_sha256(json.loads(r.patch))

    @extend_schema_field(
        PreviewRowSerializer(
            many=True,
            help_text="A bulk edit's preview as frozen with the request: the diffs with "
            "`body=true`, for a caller who may read bodies.",
        )
    )
    def get_patch_preview(self, r):
        return PreviewRowSerializer(r.patch_preview or [], many=True, context=self.context).data

    @extend_schema_field(
        {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"message_id": {"type": "string"}, "reason": {"type": "string"}},
            },
            "description": "The first messages a bulk edit could not edit, and why: counted "
            "in `progress.failed`, left quarantined.",
        }
    )
    def get_edit_failures(self, r):
        return selectors.request_edit_failures(request_id=r.id)
