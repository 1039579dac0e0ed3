"""What every module of /api/v1/ shares: the refusals' shape, in words (the exception handler),
and their place in the schema; the JSON parser; the path parameters that name an object by its
text; and how a path that moved says where it went."""

from django.conf import settings
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
from rest_framework.views import exception_handler as drf_exception_handler


class ErrorSerializer(serializers.Serializer):
    """Why the request was refused, in one sentence."""

    # DRF's own shape for its refusals (401, 403, 404, 405, 415...), and ours.
    detail = serializers.CharField()


def _error(name, detail):
    return OpenApiExample(name, value={"detail": detail})


NO_CREDENTIALS = (
    "no credentials: send Authorization: Token <key> (an application: its service account's "
    "token, which an administrator makes under Service tokens), or sign in (a person)"
)


# The refusals every endpoint may answer, in the schema, each with an example of its sentence.
ERRORS = {
    401: OpenApiResponse(
        ErrorSerializer,
        description="No credentials, or bad ones.",
        examples=[_error("No token", NO_CREDENTIALS)],
    ),
    403: OpenApiResponse(
        ErrorSerializer,
        description="The caller lacks a permission it needs: the sentence says which, and "
        "which roles hold it.",
        examples=[
            _error(
                "Missing permission",
                "this needs permission for sending messages "
                "(the application, approver or operator role)",
            )
        ],
    ),
    429: OpenApiResponse(
        ErrorSerializer,
        description="Throttled: the caller made more calls than its rate (API_THROTTLE_RATE "
        "per token, API_ANON_THROTTLE_RATE per address). Retry-After says when to try again.",
        examples=[
            _error(
                "Too many calls",
                "throttled: this token or user made more than 600 calls a min; try again in "
                "12 seconds",
            )
        ],
    ),
}
NOT_FOUND = OpenApiResponse(
    ErrorSerializer,
    description="No such object.",
    examples=[_error("Not found", "no such message")],
)


def invalid(serializer, description, detail, errors, name="Not valid"):
    """A 400 in the schema whose answer says why in one sentence and gives the messages by field,
    with an example of both."""
    return OpenApiResponse(
        serializer,
        description=description,
        examples=[OpenApiExample(name, value={"detail": detail, "errors": errors})],
    )


BAD_FILTERS = invalid(
    inline_serializer(
        "FilterErrors",
        {
            "detail": serializers.CharField(help_text="The messages, in one sentence."),
            "errors": serializers.DictField(
                child=serializers.ListField(child=serializers.CharField())
            ),
        },
    ),
    "Parameters that are not valid: the messages, by parameter.",
    "page_size: Ensure this value is less than or equal to 500.",
    {"page_size": ["Ensure this value is less than or equal to 500."]},
)


class BadRequestSerializer(serializers.Serializer):
    """Why the input was refused, and, when fields were not valid, the messages by field."""

    detail = serializers.CharField(help_text="Why, in one sentence.")
    errors = serializers.JSONField(
        required=False, help_text="The messages by field, when fields were not valid."
    )

    class Meta:
        ref_name = "BadRequest"


BAD_REQUEST = invalid(
    BadRequestSerializer,
    "The input is not valid.",
    "comment: This field may not be blank.",
    {"comment": ["This field may not be blank."]},
)


def answer(serializer, example, description="", name="Example"):
    """A successful answer in the schema, with an example of it (what /api/docs/ shows). For a
    list serializer (many=True), the example is one item: drf-spectacular lists it."""
    return OpenApiResponse(
        serializer, description=description, examples=[OpenApiExample(name, value=example)]
    )


def page_answer(name, results, example, **cursor):
    """A page of a list in the schema, the component `name`: its `results`, then the `cursor`
    that asks for the next page (and what else the page says), with an example of it."""
    return answer(inline_serializer(name, {"results": results, **cursor}), example)


def refused(description, detail, name="Refused"):
    """A refusal in the schema, {"detail": ...}, with an example of its sentence."""
    return OpenApiResponse(
        ErrorSerializer, description=description, examples=[_error(name, detail)]
    )


def optional_comment(max_length, **kwargs):
    """A comment a person may leave out or leave empty, of at most `max_length` characters: on
    an approval, a rejection, a review or a move."""
    return serializers.CharField(required=False, allow_blank=True, max_length=max_length, **kwargs)


def sent(example, name="Example"):
    """An example of a request's body, for extend_schema(examples=[...]); one item for a list
    serializer, as for `answer`."""
    return OpenApiExample(name, value=example, request_only=True)


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
    """The answer BAD_FILTERS describes: the messages in one sentence, and by parameter,
    {parameter: [message, ...]}."""
    return Response(
        {"detail": errors_text(errors) or "the parameters are not valid", "errors": errors},
        status=status.HTTP_400_BAD_REQUEST,
    )


class BadFilters(exceptions.APIException):
    """Query parameters that are not valid, answered as BAD_FILTERS describes."""

    status_code = status.HTTP_400_BAD_REQUEST

    def __init__(self, errors):
        super().__init__(
            {"detail": errors_text(errors) or "the parameters are not valid", "errors": errors}
        )


def valid_filters(serializer_class, request):
    """The request's query parameters as `serializer_class` validates them; BadFilters (a 400,
    BAD_FILTERS) when they are not valid."""
    params = serializer_class(data=request.query_params)
    if not params.is_valid():
        raise BadFilters(params.errors)
    return params.validated_data


def valid_input(serializer_class, data, **kwargs):
    """`data` as `serializer_class` validates it; DRF's ValidationError (a 400, BAD_REQUEST)
    when it is not valid."""
    serializer = serializer_class(data=data, **kwargs)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


# --- Refusals in words (REST_FRAMEWORK's EXCEPTION_HANDLER) -----------------------------------


def exception_handler(exc, context):
    """DRF's answers to its exceptions, each saying what is wrong in words, in the shape the
    schema documents: {"detail": sentence}, and for a 400 the messages by field as well
    ({"detail", "errors"}), malformed JSON included."""
    request, view = context.get("request"), context.get("view")
    if isinstance(exc, exceptions.ValidationError):
        return invalid_input(exc)
    if isinstance(exc, exceptions.ParseError):
        return Response(
            {"detail": str(exc.detail), "errors": {"non_field_errors": [str(exc.detail)]}},
            status=status.HTTP_400_BAD_REQUEST,
        )
    # The sentence changes; the exception stays (DRF set its status and challenge header).
    if isinstance(exc, exceptions.NotAuthenticated):
        exc.detail = exceptions.ErrorDetail(NO_CREDENTIALS, code=exc.default_code)
    elif isinstance(exc, exceptions.MethodNotAllowed) and request is not None and view:
        exc.detail = exceptions.ErrorDetail(
            f"{request.method} is not allowed on {request.path}; it takes "
            f"{', '.join(view.allowed_methods)}",
            code=exc.default_code,
        )
    elif isinstance(exc, exceptions.Throttled):
        exc.detail = exceptions.ErrorDetail(
            _throttled_text(request, exc.wait), code=exc.default_code
        )
    return drf_exception_handler(exc, context)


def _throttled_text(request, wait):
    user = getattr(request, "user", None)
    signed_in = bool(user and user.is_authenticated)
    rate = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["caller" if signed_in else "anonymous"]
    number, _, period = rate.partition("/")
    again = f"try again in {int(wait)} seconds" if wait is not None else "try again later"
    who = "this token or user" if signed_in else "this address"
    return f"throttled: {who} made more than {number} calls a {period}; {again}"


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


# --- A path that moved --------------------------------------------------------------------------


class Moved:
    """For an APIView whose path moved: it keeps answering, and every answer says where to go,
    with RFC 9745's Deprecation header (the date it moved, "@<epoch seconds>") and a Link to the
    new path (rel="successor-version", RFC 5829). No Sunset (RFC 8594): no date is set for the
    old path to stop answering."""

    moved_to = ""  # the new path
    moved_on = None  # when it moved: an aware datetime

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        response["Deprecation"] = f"@{int(self.moved_on.timestamp())}"
        response["Link"] = f'<{self.moved_to}>; rel="successor-version"'
        return response


def moved_headers():
    """A Moved view's headers, as the schema documents them on its answers."""
    return [
        OpenApiParameter(
            "Deprecation",
            OpenApiTypes.STR,
            OpenApiParameter.HEADER,
            response=True,
            description="When this path was deprecated, as @<seconds since 1970> (RFC 9745).",
        ),
        OpenApiParameter(
            "Link",
            OpenApiTypes.STR,
            OpenApiParameter.HEADER,
            response=True,
            description='The new path: `</api/v1/...>; rel="successor-version"`.',
        ),
    ]
