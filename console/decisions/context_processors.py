"""What every page may show of decisions: the requests waiting for the signed-in user's approval
(the dashboard's banner) and the break-glass decisions waiting for their review (the dashboard's
panel), each read only if a page shows it, once per page; and how many messages a selection may
hold (the message list's selection bar)."""

import functools

from console.decisions.scope import MAX_SELECTION
from console.decisions.selectors import break_glass_unreviewed, request_waiting_count
from console.permissions import VIEW_REQUESTS


def requests_waiting(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {
        "requests_waiting": functools.cache(lambda: request_waiting_count(user=user)),
        "break_glass_unreviewed": functools.cache(
            lambda: break_glass_unreviewed() if user.has_perm(VIEW_REQUESTS) else []
        ),
        "max_selection": MAX_SELECTION,
    }
