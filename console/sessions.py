"""Sessions that only people keep alive: a page's own polling is not activity."""

from django.utils.cache import patch_vary_headers

# Sent by the scripts that poll (static/js/live_stats.js, live_regions.js, request_progress.js).
POLL_HEADER = "X-Antidote-Poll"


class PollsAreNotActivity:
    """A poll's session is neither saved nor its cookie renewed. Every request renews a session
    (SESSION_SAVE_EVERY_REQUEST), and sessions end after SESSION_HOURS without one; a tab left
    open on a page that follows by itself would otherwise keep an unattended session alive for
    ever. Once it has ended, the scripts take the page to the login screen.

    Placed just inside Django's SessionMiddleware (which stays in MIDDLEWARE by its own name, so
    that `check --deploy` still checks the session cookie): that middleware saves the session of
    a response whose request has one, and leaves the response alone when it has none."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if request.headers.get(POLL_HEADER) == "1" and hasattr(request, "session"):
            del request.session
            patch_vary_headers(response, ("Cookie",))
        return response
