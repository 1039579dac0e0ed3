"""Sessions that only people keep alive: a page's own polling is not activity."""

from django.contrib.sessions.middleware import SessionMiddleware as DjangoSessionMiddleware
from django.utils.cache import patch_vary_headers

# Sent by the scripts that poll (static/js/live_stats.js, live_regions.js, request_progress.js).
POLL_HEADER = "X-Antidote-Poll"


class SessionMiddleware(DjangoSessionMiddleware):
    """Django's, except for a poll: its session is neither saved nor its cookie renewed. Every
    request renews a session (SESSION_SAVE_EVERY_REQUEST), and sessions end after SESSION_HOURS
    without one; a tab left open on a page that follows by itself would otherwise keep an
    unattended session alive for ever. Once it has ended, the scripts take the page to the
    login screen."""

    def process_response(self, request, response):
        if request.headers.get(POLL_HEADER) == "1":
            patch_vary_headers(response, ("Cookie",))
            return response
        return super().process_response(request, response)
