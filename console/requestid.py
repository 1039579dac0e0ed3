"""An id for every HTTP request, in each of its log lines and in its answer's X-Request-ID.

A proxy or a client that sends a sane X-Request-ID keeps its own, so that its logs and ours
name the request alike; anything else (too long, odd characters: it goes into every log line)
is replaced with a new one. A request about one message (its page, its body, its poison-list
entry) logs that message's id too."""

import re
import uuid

from workers.logcontext import log_bind, log_context

HEADER = "X-Request-ID"
_SANE = re.compile(r"[A-Za-z0-9._-]{1,200}")


def request_id_of(request):
    """The request's own X-Request-ID when it is sane, else a new one."""
    given = request.headers.get(HEADER, "")
    return given if _SANE.fullmatch(given) else uuid.uuid4().hex


class RequestId:
    """Middleware, first of all: whatever answers, the answer carries the id."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.request_id = request_id_of(request)
        # Leaving the block drops what process_view added, too.
        with log_context(request_id=request.request_id):
            response = self.get_response(request)
        response[HEADER] = request.request_id
        return response

    def process_view(self, request, view_func, view_args, view_kwargs):
        message_id = view_kwargs.get("message_id")
        if message_id:
            log_bind(message_id=str(message_id))
