"""Failed logins: django-axes locks out a pair (user name, address) after LOGIN_FAILURE_LIMIT
failures, and this package slows down an address that failed LOGIN_ADDRESS_LIMIT times, whatever
the names it tried, without ever locking it out. Here: reading them (the failures an address
counts, its wait, the lockouts and throttles in force); services.py writes them, backends.py is
what axes calls.

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

from axes.helpers import get_cool_off
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Max, Sum
from django.utils import timezone

from console.accounts.models import AddressThrottle

PAIR = "pair"
ADDRESS = "address"
USER = "user"  # the audit trail's target type for a user name
USERNAME_MAX = 255  # axes' column
# The first wait of a throttled address; each further failure from it doubles the wait, up to
# LOGIN_ADDRESS_DELAY_MAX_SECONDS.
ADDRESS_DELAY_START_SECONDS = 2


def address_delay(*, failures, limit, maximum):
    """Seconds an address with `failures` (at least `limit`) waits between two attempts: the
    start, doubled for each failure past the limit, at most `maximum`."""
    doublings = min(failures - limit, 16)  # 2 s * 2**16 is over 36 hours: past any maximum
    return min(ADDRESS_DELAY_START_SECONDS * 2**doublings, maximum)


def address_failures(*, ip, now):
    """The failed logins from `ip` inside the cool-off before `now`, whatever the names, and the
    time of the latest."""
    totals = AccessAttempt.objects.filter(
        ip_address=ip, attempt_time__gte=now - get_cool_off()
    ).aggregate(failures=Sum("failures_since_start"), last=Max("attempt_time"))
    return totals["failures"] or 0, totals["last"]


def address_wait(failures):
    """The wait between two attempts of an address with `failures`, in the settings' terms."""
    return timedelta(
        seconds=address_delay(
            failures=failures,
            limit=settings.LOGIN_ADDRESS_LIMIT,
            maximum=settings.LOGIN_ADDRESS_DELAY_MAX_SECONDS,
        )
    )


def whole_seconds(delta):
    return max(1, math.ceil(delta.total_seconds()))


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
        delay = address_wait(failures)
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
