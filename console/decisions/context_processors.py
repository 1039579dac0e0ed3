"""What every page may show of decisions: the requests waiting for the signed-in user's approval
(the dashboard's banner). Counted only if a page shows it, once per page."""

import functools

from console.decisions.selectors import request_waiting_count


def requests_waiting(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"requests_waiting": functools.cache(lambda: request_waiting_count(user=user))}
