"""What every module of /api/v1/ shares: the refusals' shape and their place in the schema, the
JSON parser, and the path parameters that name an object by its text."""

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
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


class BadRequestSerializer(serializers.Serializer):
    """Why the input was refused, and, when fields were not valid, the messages by field."""

    detail = serializers.CharField(help_text="Why, in one sentence.")
    errors = serializers.JSONField(
        required=False, help_text="The messages by field, when fields were not valid."
    )

    class Meta:
        ref_name = "BadRequest"


BAD_REQUEST = OpenApiResponse(BadRequestSerializer, description="The input is not valid.")


def errors_text(detail, prefix=""):
    """DRF's error detail (nested dicts and lists) as "field: message; ..." text."""
    if isinstance(detail, dict):
        parts = [
            errors_text(v, f"{prefix}{k}." if k != "non_field_errors" else prefix)
            for k, v in detail.items()
        ]
        return "; ".join(p for p in parts if p)
    if isinstance(detail, list):
        return "; ".join(p for p in (errors_text(v, prefix) for v in detail) if p)
    label = prefix.rstrip(".")
    return f"{label}: {detail}" if label else str(detail)


class ServiceRefusals:
    """For an APIView: the refusals of the services it calls as answers, each with the
    service's own sentence: PermissionDenied 403, ValidationError 400 (Django's, and DRF's with
    the messages by field too)."""

    def handle_exception(self, exc):
        if isinstance(exc, DjangoPermissionDenied):
            detail = str(exc) or "you may not do this"
            return Response({"detail": detail}, status=status.HTTP_403_FORBIDDEN)
        if isinstance(exc, DjangoValidationError):
            return Response({"detail": "; ".join(exc.messages)}, status=status.HTTP_400_BAD_REQUEST)
        if isinstance(exc, exceptions.ValidationError):
            return invalid_input(exc)
        return super().handle_exception(exc)


def invalid_input(exc):
    """The BAD_REQUEST answer to DRF's ValidationError `exc`."""
    return Response(
        {"detail": errors_text(exc.detail) or "the input is not valid", "errors": exc.detail},
        status=status.HTTP_400_BAD_REQUEST,
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
