"""Refused requests in the log: one line each, at INFO, saying who (the user, or anonymous, and
the address) and what (method, path, status and why). A refusal is the product working, not
failing: no traceback, and no second copy.

Django logs them itself, on `django.request` (and a CSRF failure on `django.security.csrf`), at
WARNING, with a traceback for every PermissionDenied a screen raises. `DjangoRefusals` drops those
records (settings' LOGGING) and hands their text to `RefusalLog`, which writes the one line when
the response goes out; it knows the user the API's token authentication found, and the sentence
the API answered with."""

import json
import logging

from django.core.exceptions import PermissionDenied
from django.http import Http404

log = logging.getLogger("console.refusals")

# Not allowed, not signed in, not found, wrong method, too many calls.
REFUSED = frozenset({401, 403, 404, 405, 429})


def _why(request, response):
    data = getattr(response, "data", None)
    if data is None and response.get("Content-Type") == "application/json":
        try:
            data = json.loads(response.content)  # a JsonResponse (console.views.page_not_found)
        except ValueError:
            data = None
    if isinstance(data, dict) and isinstance(data.get("detail"), str):
        return data["detail"]  # the API's own sentence
    return getattr(request, "_refusal_reason", "") or response.reason_phrase


def _who(request):
    # Here, not at the top: settings' LOGGING loads this module before the apps are ready.
    from console.accounts.lockouts.backends import client_ip

    user = getattr(request, "user", None)
    name = user.get_username() if user is not None and user.is_authenticated else "anonymous"
    return f"{name} from {client_ip(request) or 'an unknown address'}"


class RefusalLog:
    """Middleware: the one line for each refused request."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if response.status_code in REFUSED:
            log.info(
                "refused %s %s %s (%s): %s",
                response.status_code,
                request.method,
                request.path,
                _who(request),
                _why(request, response),
            )
        return response

    def process_exception(self, request, exception):
        # Django turns these into 403 and 404 answers; their sentence is the reason.
        if isinstance(exception, (PermissionDenied, Http404)) and str(exception):
            request._refusal_reason = str(exception)


class DjangoRefusals(logging.Filter):
    """On django.request and django.security.csrf: Django's record of a refusal is not logged;
    its text goes to RefusalLog's line when nothing says more. Server errors (5xx) and other
    records pass."""

    def filter(self, record):
        if getattr(record, "status_code", None) not in REFUSED:
            return True
        request = getattr(record, "request", None)
        if request is not None and not getattr(request, "_refusal_reason", ""):
            # "Forbidden (CSRF cookie not set.): /path": the part before the path.
            text = record.getMessage()
            request._refusal_reason = text.removesuffix(f": {request.path}")
        return False
