"""What every module of /api/v1/ shares: the refusals' shape and their place in the schema, the
JSON parser, and the path parameters that name an object by its text."""

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    inline_serializer,
)
from rest_framework import exceptions, parsers, serializers, status
from rest_framework.response import Response


class ErrorSerializer(serializers.Serializer):
    """Why the request was refused, in one sentence."""

    # DRF's own shape for its refusals (401, 403, 404, 405, 415...), and ours.
    detail = serializers.CharField()


# The refusals every endpoint may answer, in the schema.
ERRORS = {
    401: OpenApiResponse(ErrorSerializer, description="No credentials, or bad ones."),
    403: OpenApiResponse(ErrorSerializer, description="The caller lacks a permission it needs."),
}
NOT_FOUND = OpenApiResponse(ErrorSerializer, description="No such object.")
BAD_FILTERS = OpenApiResponse(
    inline_serializer(
        "FilterErrors",
        {
            "errors": serializers.DictField(
                child=serializers.ListField(child=serializers.CharField())
            )
        },
    ),
    description="Query parameters that are not valid: the messages, by parameter.",
)


def bad_filters(errors):
    """The answer BAD_FILTERS describes: {parameter: [message, ...]}."""
    return Response({"errors": errors}, status=status.HTTP_400_BAD_REQUEST)


class JSONParser(parsers.JSONParser):
    """DRF's, but JSON nested too deeply for Python's parser is a 400 like any malformed JSON,
    not a RecursionError and a 500. The default parser of every endpoint (settings)."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError("JSON parse error - nested too deeply") from None


def path_parameter(name, description, example):
    """A text path parameter, with the example schemathesis and the docs page start from."""
    return OpenApiParameter(
        name,
        OpenApiTypes.STR,
        OpenApiParameter.PATH,
        description=description,
        examples=[OpenApiExample(name, value=example)],
    )


def path_key(value, *, not_found):
    """A path parameter to look up, or 404 if it holds a NUL character: nothing stored has one
    (ingest refuses such ids; queue names and fingerprints are plain), and PostgreSQL refuses
    the very query."""
    if "\x00" in value:
        raise Http404(not_found)
    return value
