"""Login lockouts: django-axes counts failed logins by user name and by address (settings), and
refuses a login for one over the limit. Here: the client's address it counts by, its backend, the
lockouts in force and lifting one."""

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from axes.backends import AxesStandaloneBackend
from axes.helpers import get_cool_off
from axes.models import AccessAttempt
from axes.utils import reset
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import validate_ipv46_address
from django.db import transaction
from django.utils import timezone

from console.audit.services import audit_record

USER = "user"
ADDRESS = "address"
USERNAME_MAX = 255  # axes' column


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
    """Axes' backend, refusing a locked-out login before any password is checked; first in
    AUTHENTICATION_BACKENDS.

    A password checked outside a web request (manage.py, Django's test client `login()`) has no
    address to count by, and axes would raise ValueError on it: it passes on to the next backend
    unchecked. Every login form and the API pass their request (the login page, the Django
    admin, DRF's authentication), so every login from outside is counted.
    """

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username, password, **kwargs)


@dataclass
class Lockout:
    """A user name (kind USER) or an address (kind ADDRESS) over the failure limit."""

    kind: str
    username: str
    ip: str
    failures: int
    last_failure_at: datetime
    until: datetime
    # The other side of its failures: the addresses a name was tried from, the names an address
    # tried. Typed by whoever failed to log in: plain text, to escape.
    seen_with: list = field(default_factory=list)


def lockout_list(*, now=None):
    """The lockouts in force at `now`, user names first, the latest failure first within each."""
    now = now or timezone.now()
    cool_off = get_cool_off()
    limit = settings.AXES_FAILURE_LIMIT
    attempts = AccessAttempt.objects.filter(attempt_time__gte=now - cool_off).order_by(
        "-attempt_time"
    )
    by_user, by_address = defaultdict(list), defaultdict(list)
    for attempt in attempts.only("username", "ip_address", "failures_since_start", "attempt_time"):
        if attempt.username:
            by_user[attempt.username].append(attempt)
        if attempt.ip_address:
            by_address[attempt.ip_address].append(attempt)

    lockouts = []
    for kind, groups in ((USER, by_user), (ADDRESS, by_address)):
        for key, group in groups.items():
            until = _locked_until(group, limit=limit, cool_off=cool_off)
            if until is None:
                continue
            if kind == USER:
                username, ip, others = key, "", [a.ip_address or "" for a in group]
            else:
                username, ip, others = "", key, [a.username or "" for a in group]
            lockouts.append(
                Lockout(
                    kind=kind,
                    username=username,
                    ip=ip,
                    failures=sum(a.failures_since_start for a in group),
                    last_failure_at=group[0].attempt_time,
                    until=until,
                    seen_with=sorted(set(others) - {""}),
                )
            )
    return lockouts


def _locked_until(group, *, limit, cool_off):
    """When a group of attempts (newest first) stops holding `limit` failures inside the cool-off,
    or None if it does not now. Axes counts the attempts newer than the cool-off: the lockout ends
    when the attempt that takes the newest ones to the limit grows older than that."""
    running = 0
    for attempt in group:
        running += attempt.failures_since_start
        if running >= limit:
            return attempt.attempt_time + cool_off
    return None


def lockout_lift(*, actor, username=None, ip=None):
    """Forget the failed logins of a user name, of an address, or of either, so that they may log
    in again at once; audited with `actor`. Returns how many of axes' attempt rows went.

    Lifting a name forgets its failures from every address, and those count towards the
    addresses' own lockouts too (and the same the other way round).
    """
    username = (username or "").strip()
    ip = (ip or "").strip()
    if not username and not ip:
        # Axes' reset with neither forgets every failure of everyone.
        raise ValidationError("name a user name, an address, or both")
    if "\x00" in username:
        raise ValidationError("a user name has no NUL character")
    if len(username) > USERNAME_MAX:
        raise ValidationError(f"a user name has at most {USERNAME_MAX} characters")
    if ip:
        validate_ipv46_address(ip)
    with transaction.atomic():
        removed = reset(
            ip=ip or None, username=username or None, ip_or_username=bool(ip and username)
        )
        audit_record(
            actor=actor,
            action="login.lockout_lifted",
            target_type=USER if username else ADDRESS,
            target_id=username or ip,
            details={"username": username, "ip": ip, "attempts_removed": removed},
        )
    return removed


def lockout_forget_own_failures(*, username, ip):
    """After a successful login: forget the failures of this name from this address (the user's
    own typos), and no others. Returns how many attempt rows went."""
    if not username or not ip:
        return 0
    return reset(ip=ip, username=username)
