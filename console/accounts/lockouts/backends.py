"""What django-axes calls (settings: AUTHENTICATION_BACKENDS, AXES_HANDLER,
AXES_CLIENT_IP_CALLABLE): the client's address failures count by, and the backend and handler
that refuse an attempt before any password is checked (console.accounts.lockouts.selectors tells
why pairs and a throttle)."""

from axes.backends import AxesStandaloneBackend
from axes.exceptions import AxesBackendPermissionDenied
from axes.handlers.database import AxesDatabaseHandler
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import validate_ipv46_address
from django.utils import timezone

from console.accounts.lockouts.services import address_throttle_start, address_throttle_wait


def client_ip(request):
    """The client's address (axes' AXES_CLIENT_IP_CALLABLE, and the API's anonymous rate).

    REMOTE_ADDR, unless TRUSTED_PROXY_COUNT proxies stand in front: then the address the first of
    them appended to X-Forwarded-For, counted from the right. Entries left of it were written by
    the client and prove nothing.
    """
    remote = request.META.get("REMOTE_ADDR") or None
    proxies = settings.TRUSTED_PROXY_COUNT
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if not proxies or not forwarded:
        return remote
    hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
    if not hops:
        return remote
    address = hops[-min(proxies, len(hops))]
    try:
        validate_ipv46_address(address)
    except ValidationError:
        # A proxy passed on garbage: count the proxy's address rather than fail the login.
        return remote
    return address


class LockoutBackend(AxesStandaloneBackend):
    """Axes' backend, refusing a login from a throttled address (address_throttle_wait) or for a
    locked-out pair before any password is checked; first in AUTHENTICATION_BACKENDS.

    A password checked outside a web request (manage.py, Django's test client `login()`) has no
    address to count by, and axes would raise ValueError on it: it passes on to the next backend
    unchecked. Every login form and the API pass their request (the login page, the Django
    admin, DRF's authentication), so every login from outside is counted.
    """

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        ip = client_ip(request)
        if settings.AXES_ENABLED and ip:
            wait = address_throttle_wait(ip=ip, now=timezone.now(), request=request)
            if wait:
                # Read by LockoutHandler (not a failure) and by the lockout page (how long).
                request.login_wait_seconds = wait
                raise AxesBackendPermissionDenied("the address must wait before its next login")
        return super().authenticate(request, username, password, **kwargs)


class LockoutHandler(AxesDatabaseHandler):
    """Axes' database handler (AXES_HANDLER), with the address throttle on top.

    An attempt refused for its address's wait is not a failure: its password was not checked, so
    it guessed nothing, and counting it would let a client that keeps knocking keep the address
    waiting for everyone behind it. It gets the lockout page (AXES_LOCKOUT_CALLABLE) all the same.
    A failure that was checked is counted by axes, then may start the address's throttle.
    """

    def user_login_failed(self, sender, credentials, request=None, **kwargs):
        if request is not None and getattr(request, "login_wait_seconds", 0):
            request.axes_locked_out = True
            request.axes_credentials = credentials
            return
        super().user_login_failed(sender, credentials, request, **kwargs)
        if request is not None and request.axes_ip_address:
            address_throttle_start(request=request)
