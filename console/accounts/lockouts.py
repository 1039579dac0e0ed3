"""Failed logins: django-axes locks out a pair (user name, address) after LOGIN_FAILURE_LIMIT
failures, and this module slows down an address that failed LOGIN_ADDRESS_LIMIT times, whatever
the names it tried, without ever locking it out. Here: the client's address both count by, the
backend and handler that refuse an attempt before any password is checked, the lockouts and
throttles in force, and lifting one.

Why pairs and a throttle rather than axes' "either one" lockout: that let anyone lock a user out
from everywhere by failing five times on their name, and everyone behind one address (a whole
office's NAT, administrators included) by failing five times on made-up names, without knowing
any password. A pair lockout stops guessing one account's password from one address and harms no
one else; the throttle stops spraying names from one address, but only slows it down: a person
behind that address who knows their password gets in after a wait of at most
LOGIN_ADDRESS_DELAY_MAX_SECONDS."""

import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from axes.backends import AxesStandaloneBackend
from axes.exceptions import AxesBackendPermissionDenied
from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_cool_off
from axes.models import AccessAttempt
from axes.utils import reset
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import validate_ipv46_address
from django.db import transaction
from django.db.models import Max, Sum
from django.utils import timezone

from console.accounts.models import AddressThrottle
from console.audit.services import audit_record

PAIR = "pair"
ADDRESS = "address"
USER = "user"  # the audit trail's target type for a user name
USERNAME_MAX = 255  # axes' column
# The first wait of a throttled address; each further failure from it doubles the wait, up to
# LOGIN_ADDRESS_DELAY_MAX_SECONDS.
ADDRESS_DELAY_START_SECONDS = 2


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
            _address_throttle_start(request=request)


def address_delay(*, failures, limit, maximum):
    """Seconds an address with `failures` (at least `limit`) waits between two attempts: the
    start, doubled for each failure past the limit, at most `maximum`."""
    doublings = min(failures - limit, 16)  # 2 s * 2**16 is over 36 hours: past any maximum
    return min(ADDRESS_DELAY_START_SECONDS * 2**doublings, maximum)


def _address_failures(*, ip, now):
    """The failed logins from `ip` inside the cool-off before `now`, whatever the names, and the
    time of the latest."""
    totals = AccessAttempt.objects.filter(
        ip_address=ip, attempt_time__gte=now - get_cool_off()
    ).aggregate(failures=Sum("failures_since_start"), last=Max("attempt_time"))
    return totals["failures"] or 0, totals["last"]


def _address_delay(failures):
    return timedelta(
        seconds=address_delay(
            failures=failures,
            limit=settings.LOGIN_ADDRESS_LIMIT,
            maximum=settings.LOGIN_ADDRESS_DELAY_MAX_SECONDS,
        )
    )


def _whole_seconds(delta):
    return max(1, math.ceil(delta.total_seconds()))


def address_throttle_wait(*, ip, now, request=None):
    """How many seconds an attempt from `ip` at `now` must still wait before its password may be
    checked; 0 to check it now.

    Under LOGIN_ADDRESS_LIMIT failures an address never waits. At or over it, an attempt waits
    address_delay() after the address's previous attempt that was checked. The attempt that may
    go on claims the address's turn with a conditional update: of attempts sent together when a
    wait ends, one is checked and the others wait again, however many processes answer them.
    """
    failures, last_failure_at = _address_failures(ip=ip, now=now)
    if failures < settings.LOGIN_ADDRESS_LIMIT:
        return 0
    delay = _address_delay(failures)
    throttle = AddressThrottle.objects.filter(ip_address=ip).first()
    if throttle is None:
        # Its failures reached the limit without starting the throttle (the limit was lowered
        # meanwhile): it starts now, this attempt taking the first turn.
        _, created = AddressThrottle.objects.get_or_create(
            ip_address=ip, defaults={"started_at": now, "last_attempt_at": now}
        )
        if not created:
            return _whole_seconds(delay)
        _address_throttle_audit(ip=ip, now=now, failures=failures, request=request)
        return 0
    ready_at = max(last_failure_at, throttle.last_attempt_at) + delay
    if now < ready_at:
        return _whole_seconds(ready_at - now)
    won = AddressThrottle.objects.filter(ip_address=ip, last_attempt_at__lte=now - delay).update(
        last_attempt_at=now
    )
    if won != 1:
        # Another attempt from the address took this turn.
        return _whole_seconds(delay)
    return 0


def _address_throttle_start(*, request):
    """After a failure was counted: if it took its address to LOGIN_ADDRESS_LIMIT, the address's
    throttle starts (audited once). Throttles over for a whole cool-off are forgotten, as axes
    forgets old failures."""
    ip, now = request.axes_ip_address, request.axes_attempt_time or timezone.now()
    limit = settings.LOGIN_ADDRESS_LIMIT
    AddressThrottle.objects.filter(last_attempt_at__lte=now - get_cool_off()).delete()
    failures, _ = _address_failures(ip=ip, now=now)
    if failures < limit:
        return
    throttle, started = AddressThrottle.objects.get_or_create(
        ip_address=ip, defaults={"started_at": now, "last_attempt_at": now}
    )
    if not started and failures == limit:
        # A row from an earlier throttle that ended (its failures aged or were forgotten) and
        # this failure starts a new one. Conditional: of two failures racing, one audits it.
        started = (
            AddressThrottle.objects.filter(pk=throttle.pk, started_at=throttle.started_at).update(
                started_at=now, last_attempt_at=now
            )
            == 1
        )
    if started:
        _address_throttle_audit(ip=ip, now=now, failures=failures, request=request)


def _address_throttle_audit(*, ip, now, failures, request):
    names = (
        AccessAttempt.objects.filter(ip_address=ip, attempt_time__gte=now - get_cool_off())
        .values("username")
        .distinct()
        .count()
    )
    audit_record(
        actor="anonymous",
        action="login.address_throttled",
        target_type=ADDRESS,
        target_id=ip,
        details={
            "failures": failures,
            "names": names,
            "delay_seconds": int(_address_delay(failures).total_seconds()),
            "user_agent": request.META.get("HTTP_USER_AGENT", "")[:300] if request else "",
        },
    )


@dataclass
class Lockout:
    """A pair (kind PAIR: a user name from an address) locked out, or an address (kind ADDRESS)
    slowed down, whatever the names it tries."""

    kind: str
    username: str  # empty for an address
    ip: str
    failures: int
    last_failure_at: datetime
    # A pair: when its lockout ends. An address: when its failures fall back under the limit
    # and its throttle ends. Either way, unless lifted, or failures go on.
    until: datetime
    # An address: the wait between two attempts from it, and when it may try again.
    delay_seconds: int | None = None
    next_attempt_at: datetime | None = None
    # An address: the names it tried. Typed by whoever failed to log in: plain text, to escape.
    seen_with: list = field(default_factory=list)


def lockout_list(*, now=None):
    """The pair lockouts and the address throttles in force at `now`, pairs first, the latest
    failure first within each."""
    now = now or timezone.now()
    cool_off = get_cool_off()
    attempts = AccessAttempt.objects.filter(attempt_time__gte=now - cool_off).order_by(
        "-attempt_time"
    )
    by_pair, by_address = defaultdict(list), defaultdict(list)
    for attempt in attempts.only("username", "ip_address", "failures_since_start", "attempt_time"):
        by_pair[(attempt.username or "", attempt.ip_address or "")].append(attempt)
        if attempt.ip_address:
            by_address[attempt.ip_address].append(attempt)

    lockouts = []
    for (username, ip), group in by_pair.items():
        until = _locked_until(group, limit=settings.AXES_FAILURE_LIMIT, cool_off=cool_off)
        if until is not None:
            lockouts.append(
                Lockout(
                    kind=PAIR,
                    username=username,
                    ip=ip,
                    failures=sum(a.failures_since_start for a in group),
                    last_failure_at=group[0].attempt_time,
                    until=until,
                )
            )

    throttles = {}
    for ip, group in by_address.items():
        until = _locked_until(group, limit=settings.LOGIN_ADDRESS_LIMIT, cool_off=cool_off)
        if until is not None:
            throttles[ip] = (group, until)
    last_checked = dict(
        AddressThrottle.objects.filter(ip_address__in=throttles).values_list(
            "ip_address", "last_attempt_at"
        )
    )
    for ip, (group, until) in throttles.items():
        failures = sum(a.failures_since_start for a in group)
        delay = _address_delay(failures)
        previous = max(group[0].attempt_time, last_checked.get(ip, group[0].attempt_time))
        lockouts.append(
            Lockout(
                kind=ADDRESS,
                username="",
                ip=ip,
                failures=failures,
                last_failure_at=group[0].attempt_time,
                until=until,
                delay_seconds=int(delay.total_seconds()),
                next_attempt_at=previous + delay,
                seen_with=sorted({a.username for a in group if a.username}),
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
    """Forget failed logins so that they may log in again at once; audited with `actor`. Returns
    how many of axes' attempt rows went.

    - A user name and an address: that pair's lockout, the name's failures from that address.
    - An address alone: its throttle, and every failure from it whatever the name, so the
      lockouts of its pairs go too.
    - A user name alone: its failures from every address, the lockouts of all its pairs.
    Failures forgotten count no more towards anything: lifting a pair also lowers its
    address's count.
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
        removed = reset(ip=ip or None, username=username or None)
        if ip and not username:
            AddressThrottle.objects.filter(ip_address=ip).delete()
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
