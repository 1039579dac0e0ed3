"""What the decision screens and the API answer alike: a service's refusal in words, a request
by its number (or 404), its frozen ids as a text file."""

import os

from django.core.exceptions import ValidationError
from django.http import Http404, StreamingHttpResponse

from console.decisions import selectors
from console.decisions.forms import MAX_ID
from console.decisions.scope import frozen_ids
from console.lake.services import lake


def why(exc):
    """A service's refusal as one readable sentence."""
    if isinstance(exc, ValidationError):
        return "; ".join(exc.messages)
    return str(exc)


def request_or_404(request_id):
    """The request, or 404 for an id that is unknown, not a number, or too big for one."""
    try:
        number = int(request_id)
    except (TypeError, ValueError):
        number = 0
    found = selectors.request_get(request_id=number) if 0 < number <= MAX_ID else None
    if found is None:
        raise Http404("no such request")
    return found


def frozen_ids_response(request):
    """The frozen ids as text, one a line, in order: `sha256sum` of it is the request's
    ids_sha256. Streamed from the lake a batch at a time."""
    if not os.path.exists(lake().path(request.ids_path)):
        raise Http404("the frozen id file is no longer in the lake")

    def lines():
        for ids in frozen_ids(request.ids_path):
            yield "".join(f"{message_id}\n" for message_id in ids).encode()

    response = StreamingHttpResponse(lines(), content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="request-{request.id}-ids.txt"'
    return response
