"""What every page may show of decisions: the requests waiting for the signed-in user's approval
(the dashboard's banner), counted only if a page shows it, once per page; and how many messages
a selection may hold (the message list's selection bar)."""

import functools

from console.decisions.scope import MAX_SELECTION
from console.decisions.selectors import request_waiting_count


def requests_waiting(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {
        "requests_waiting": functools.cache(lambda: request_waiting_count(user=user)),
        "max_selection": MAX_SELECTION,
    }
