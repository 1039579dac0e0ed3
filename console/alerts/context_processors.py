"""The bell on every page: the signed-in user's unread console alerts, counted only if the page
shows it, once per page."""

import functools

from console.alerts.selectors import unread_count


def bell(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"alerts_unread": functools.cache(lambda: unread_count(user=user))}
