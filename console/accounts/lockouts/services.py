"""Writes of the login lockouts (selectors.py reads them): an address's turn after its wait, the
start of its throttle (audited once), lifting a lockout, and forgetting one's own typos."""

from axes.helpers import get_cool_off
from axes.models import AccessAttempt
from axes.utils import reset
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import validate_ipv46_address
from django.db import transaction
from django.utils import timezone

from console.accounts.lockouts.selectors import (
    ADDRESS,
    USER,
    USERNAME_MAX,
    address_failures,
    address_wait,
    whole_seconds,
)
from console.accounts.models import AddressThrottle
from console.audit.services import audit_record


def address_throttle_wait(*, ip, now, request=None):
    """How many seconds an attempt from `ip` at `now` must still wait before its password may be
    checked; 0 to check it now.

    Under LOGIN_ADDRESS_LIMIT failures an address never waits. At or over it, an attempt waits
    address_delay() after the address's previous attempt that was checked. The attempt that may
    go on claims the address's turn with a conditional update: of attempts sent together when a
    wait ends, one is checked and the others wait again, however many processes answer them.
    """
    failures, last_failure_at = address_failures(ip=ip, now=now)
    if failures < settings.LOGIN_ADDRESS_LIMIT:
        return 0
    delay = address_wait(failures)
    throttle = AddressThrottle.objects.filter(ip_address=ip).first()
    if throttle is None:
        # Its failures reached the limit without starting the throttle (the limit was lowered
        # meanwhile): it starts now, this attempt taking the first turn.
        _, created = AddressThrottle.objects.get_or_create(
            ip_address=ip, defaults={"started_at": now, "last_attempt_at": now}
        )
        if not created:
            return whole_seconds(delay)
        _address_throttle_audit(ip=ip, now=now, failures=failures, request=request)
        return 0
    ready_at = max(last_failure_at, throttle.last_attempt_at) + delay
    if now < ready_at:
        return whole_seconds(ready_at - now)
    won = AddressThrottle.objects.filter(ip_address=ip, last_attempt_at__lte=now - delay).update(
        last_attempt_at=now
    )
    if won != 1:
        # Another attempt from the address took this turn.
        return whole_seconds(delay)
    return 0


def address_throttle_start(*, request):
    """After a failure was counted: if it took its address to LOGIN_ADDRESS_LIMIT, the address's
    throttle starts (audited once). Throttles over for a whole cool-off are forgotten, as axes
    forgets old failures."""
    ip, now = request.axes_ip_address, request.axes_attempt_time or timezone.now()
    limit = settings.LOGIN_ADDRESS_LIMIT
    AddressThrottle.objects.filter(last_attempt_at__lte=now - get_cool_off()).delete()
    failures, _ = address_failures(ip=ip, now=now)
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
            "delay_seconds": int(address_wait(failures).total_seconds()),
            "user_agent": request.META.get("HTTP_USER_AGENT", "")[:300] if request else "",
        },
    )


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
