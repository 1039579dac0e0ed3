"""What every screen may need from the settings: how often the parts of a page that follow by
themselves are brought up to date (static/js/live_regions.js, templates/_live.html)."""

from django.conf import settings


def live(request):
    return {"live_poll_seconds": settings.DASHBOARD_POLL_SECONDS}
