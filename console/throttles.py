"""The API's rates (REST_FRAMEWORK's DEFAULT_THROTTLE_CLASSES): API_THROTTLE_RATE calls per token,
or per user on a session, and API_ANON_THROTTLE_RATE per address for anonymous calls. DRF answers
a call over the rate with 429 and Retry-After.

The counts are in Django's default cache. That is each process's own memory unless CACHES names
a shared cache (Redis): with several web processes, each lets a caller have the full rate.

DRF checks the rate after the permissions: a call refused 401 or 403 does not count.
"""

import hashlib

from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle

from console.accounts.lockouts.backends import client_ip


def _key(text):
    # Hashed: a cache key must not hold a token (DRF's own tokens are their key).
    return hashlib.sha256(text.encode()).hexdigest()


class _RateThrottle(SimpleRateThrottle):
    def get_rate(self):
        # From the settings as they are now, not as DRF's class attribute froze them at import:
        # DRF reloads its settings when REST_FRAMEWORK changes (tests), and so the rate follows.
        return api_settings.DEFAULT_THROTTLE_RATES[self.scope]


class CallerRateThrottle(_RateThrottle):
    """A signed-in caller's rate, by the token it called with: two tokens of one user (two
    scripts) have a rate each. A session call is counted by user."""

    scope = "caller"

    def get_cache_key(self, request, view):
        user = request.user
        if not (user and user.is_authenticated):
            return None
        token = request.auth
        # Whatever the token authentication put there: knox's token (its digest, else its key
        # prefix), or DRF's (its key).
        ident = (
            getattr(token, "digest", None)
            or getattr(token, "token_key", None)
            or getattr(token, "key", None)
        )
        ident = f"token:{ident}" if ident else f"user:{user.pk}"
        return self.cache_format % {"scope": self.scope, "ident": _key(ident)}


class AnonymousRateThrottle(_RateThrottle):
    """An anonymous caller's rate, by address (console.accounts.lockouts.backends.client_ip)."""

    scope = "anonymous"

    def get_cache_key(self, request, view):
        if request.user and request.user.is_authenticated:
            return None
        return self.cache_format % {
            "scope": self.scope,
            "ident": _key(f"ip:{client_ip(request) or ''}"),
        }
