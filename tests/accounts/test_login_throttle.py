"""An address that fails many logins, whatever the names, is slowed down and never locked out
(console.accounts.lockouts, with django-axes for real): each attempt from it waits a delay after
the previous one, answered 429 with Retry-After and its password unchecked; after the wait it is
checked as usual. The audit trail, and an administrator lifting a throttle.

Time passes by moving the recorded failures and throttles back (_time_passes): axes stamps its
rows with its own clock, so the rows are what a test moves, and nobody waits."""

from datetime import timedelta
from functools import partial

import pytest
from axes.models import AccessAttempt
from django.db.models import F
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from console.accounts.lockouts.selectors import address_delay
from console.accounts.lockouts.services import address_throttle_wait
from console.accounts.models import AddressThrottle
from console.audit.models import AuditEntry
from tests.accounts.conftest import password_login, signed_in
from tests.browse.conftest import api as api_as

SPRAYER = "203.0.113.9"
ELSEWHERE = "198.51.100.20"
ADDRESS_LIMIT = 8


@pytest.fixture
def address_limit(settings):
    settings.AXES_FAILURE_LIMIT = 3
    settings.LOGIN_ADDRESS_LIMIT = ADDRESS_LIMIT
    settings.LOGIN_ADDRESS_DELAY_MAX_SECONDS = 60
    return ADDRESS_LIMIT


_login = partial(password_login, ip=SPRAYER)


def _time_passes(seconds):
    """As if `seconds` went by: every recorded failure and throttle is that much older."""
    delta = timedelta(seconds=seconds)
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - delta)
    AddressThrottle.objects.update(
        started_at=F("started_at") - delta, last_attempt_at=F("last_attempt_at") - delta
    )


def _spray(count, *, ip=SPRAYER, every_seconds=60, start=0):
    """`count` failed logins from `ip`, each on a made-up name of its own, `every_seconds` apart:
    a slow guesser that no rate limit per second would notice."""
    for n in range(start, start + count):
        _login(f"made-up-{n}", "Summer2024!", ip=ip)
        _time_passes(every_seconds)


def _failures(ip=SPRAYER):
    return sum(
        AccessAttempt.objects.filter(ip_address=ip).values_list("failures_since_start", flat=True)
    )


def _actions(action):
    return list(AuditEntry.objects.filter(action=action).order_by("seq"))


def test_the_wait_starts_at_two_seconds_doubles_with_each_failure_and_stops_at_the_maximum():
    delays = [address_delay(failures=n, limit=20, maximum=60) for n in range(20, 27)]

    assert delays == [2, 4, 8, 16, 32, 60, 60]
    assert address_delay(failures=10**6, limit=20, maximum=60) == 60


def test_an_address_under_the_limit_is_not_slowed_down(personas, address_limit):
    _spray(address_limit - 1)

    client, response = _login("admin", "pw-admin-1234")

    assert response.status_code == 302
    assert signed_in(client)


def test_a_slow_guesser_of_many_names_is_made_to_wait_without_its_password_checked(
    personas, address_limit
):
    _spray(address_limit, every_seconds=60)
    # Straight after its last failure.
    _time_passes(-60)

    client, response = _login("admin", "pw-admin-1234")

    assert response.status_code == 429
    assert response["Retry-After"] == "2"
    page = response.content.decode()
    assert "Wait before logging in" in page
    assert "Your password was not checked" in page
    assert not signed_in(client)
    # Refused unchecked, it is no failure: neither counted nor charged to anyone.
    assert _failures() == address_limit
    assert not AccessAttempt.objects.filter(username="admin").exists()


def test_after_the_wait_an_attempt_is_checked_again_and_a_failure_doubles_the_wait(
    personas, address_limit
):
    _spray(address_limit, every_seconds=1)
    _time_passes(2)

    _, checked = _login("made-up-again", "Summer2024!")
    _, refused = _login("admin", "pw-admin-1234")

    assert checked.status_code == 200  # the login page, its password checked and wrong
    assert "did not match" in checked.content.decode()
    assert _failures() == address_limit + 1
    assert refused.status_code == 429
    assert refused["Retry-After"] == "4"


def test_the_admins_right_password_after_the_wait_logs_in(personas, address_limit):
    _spray(address_limit + 3, every_seconds=60)
    _time_passes(-60)
    _, refused = _login("admin", "pw-admin-1234")
    wait = int(refused["Retry-After"])

    _time_passes(wait)
    client, response = _login("admin", "pw-admin-1234")

    assert refused.status_code == 429
    assert wait == 16
    assert response.status_code == 302
    assert signed_in(client)


def test_the_wait_never_grows_past_the_maximum(personas, address_limit, settings):
    settings.LOGIN_ADDRESS_DELAY_MAX_SECONDS = 30
    _spray(address_limit + 10, every_seconds=60)
    _time_passes(-60)

    _, refused = _login("admin", "pw-admin-1234")
    _time_passes(30)
    client, response = _login("admin", "pw-admin-1234")

    assert refused["Retry-After"] == "30"
    assert response.status_code == 302
    assert signed_in(client)


def test_knocking_during_the_wait_does_not_make_it_longer(personas, address_limit):
    _spray(address_limit, every_seconds=1)
    # The last failure half a minute ahead: the knocks fall inside its two-second wait however
    # long a busy machine takes over them.
    _time_passes(-30)

    knocks = [_login(f"knock-{n}", "x")[1] for n in range(5)]
    _time_passes(32)
    client, response = _login("admin", "pw-admin-1234")

    assert {knock.status_code for knock in knocks} == {429}
    assert _failures() == address_limit
    assert response.status_code == 302
    assert signed_in(client)


def test_of_two_attempts_when_the_wait_ends_only_one_is_checked(personas, address_limit):
    _spray(address_limit, every_seconds=0)
    later = timezone.now() + timedelta(seconds=3)

    first = address_throttle_wait(ip=SPRAYER, now=later)
    second = address_throttle_wait(ip=SPRAYER, now=later)

    assert first == 0
    assert second == 2


def test_other_addresses_are_not_slowed_down(personas, address_limit):
    _spray(address_limit, every_seconds=0)

    client, response = _login("admin", "pw-admin-1234", ip=ELSEWHERE)

    assert response.status_code == 302
    assert signed_in(client)


def test_a_name_locked_out_from_the_address_stays_locked_out_after_the_wait(
    personas, address_limit
):
    for _ in range(3):
        _login("admin", "guess", ip=SPRAYER)
    _spray(address_limit - 3, every_seconds=0)
    _time_passes(60)

    _, locked = _login("admin", "pw-admin-1234")
    _time_passes(60)
    colleague, from_here = _login("viewer", "pw-viewer-1234")

    assert locked.status_code == 429
    assert "Login locked" in locked.content.decode()
    assert from_here.status_code == 302
    assert signed_in(colleague)


def test_the_django_admin_login_is_slowed_down_too(personas, address_limit):
    _spray(address_limit, every_seconds=0)

    client, response = _login("admin", "pw-admin-1234", url="/admin/login/")

    assert response.status_code == 429
    assert not signed_in(client)


def test_a_client_asking_for_json_gets_the_wait_as_json(personas, address_limit):
    _spray(address_limit, every_seconds=0)

    _, response = _login("admin", "pw-admin-1234", HTTP_ACCEPT="application/json")

    assert response.status_code == 429
    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert body["retry_after"] == int(response["Retry-After"]) == 2
    assert "password was not checked" in body["detail"]


def test_the_start_of_a_throttle_is_in_the_audit_trail_once(personas, address_limit):
    _spray(address_limit, every_seconds=0, start=0)
    _login("knock", "x", HTTP_USER_AGENT="curl/8")
    _time_passes(2)
    _login("made-up-again", "x", HTTP_USER_AGENT="curl/8")

    entries = _actions("login.address_throttled")

    assert [(e.actor, e.target_type, e.target_id) for e in entries] == [
        ("anonymous", "address", SPRAYER)
    ]
    assert entries[0].details["failures"] == address_limit
    assert entries[0].details["names"] == address_limit
    assert entries[0].details["delay_seconds"] == 2
    # Every attempt is a failed login in the trail, the one refused unchecked too.
    assert len(_actions("login.failed")) == address_limit + 2
    assert not _actions("login.locked_out")


def test_a_throttle_that_ended_and_starts_again_is_audited_again(personas, address_limit):
    _spray(address_limit, every_seconds=0)
    _time_passes(31 * 60)  # past LOGIN_LOCKOUT_MINUTES: its failures are forgotten

    _spray(address_limit, every_seconds=0, start=100)

    assert len(_actions("login.address_throttled")) == 2


def test_an_administrator_sees_a_throttled_address_with_the_names_it_tried(personas, address_limit):
    _spray(3, every_seconds=0)
    for _ in range(3):
        _login("operator", "guess")
    _spray(address_limit - 6, every_seconds=0, start=3)
    admin = Client()
    admin.force_login(personas["admin"])

    page = admin.get(reverse("lockout-list")).content.decode()
    listed = api_as(personas["admin"]).get("/api/v1/lockouts").json()["results"]

    assert page.count('class="lockout-row lockout-address"') == 1
    assert page.count('class="lockout-row lockout-pair"') == 1
    assert [(r["kind"], r["username"], r["ip"]) for r in listed] == [
        ("pair", "operator", SPRAYER),
        ("address", "", SPRAYER),
    ]
    throttled = listed[1]
    assert throttled["failures"] == address_limit
    assert throttled["delay_seconds"] == 2
    assert throttled["next_attempt_at"] is not None
    assert "operator" in throttled["seen_with"]
    assert "made-up-0" in throttled["seen_with"]


def test_an_administrator_lifts_an_address_throttle_on_the_screen(personas, address_limit):
    _spray(address_limit, every_seconds=0)
    admin = Client()
    admin.force_login(personas["admin"])

    response = admin.post(reverse("lockout-lift"), {"ip": SPRAYER})
    client, login = _login("admin", "pw-admin-1234")

    assert response.status_code == 302
    assert login.status_code == 302
    assert signed_in(client)
    assert not AddressThrottle.objects.exists()
    lifted = _actions("login.lockout_lifted")
    assert [(e.actor, e.target_type, e.target_id) for e in lifted] == [
        ("admin", "address", SPRAYER)
    ]
    assert lifted[0].details == {"username": "", "ip": SPRAYER, "attempts_removed": address_limit}


def test_an_administrator_lifts_an_address_throttle_by_the_api(personas, address_limit):
    _spray(address_limit, every_seconds=0)
    _spray(address_limit, ip=ELSEWHERE, every_seconds=0)
    api = api_as(personas["admin"])

    response = api.post("/api/v1/lockouts/lift", {"ip": SPRAYER}, format="json")
    _, here = _login("admin", "pw-admin-1234")
    _, there = _login("admin", "pw-admin-1234", ip=ELSEWHERE)

    assert response.status_code == 200
    assert response.json() == {"username": "", "ip": SPRAYER, "attempts_removed": address_limit}
    assert here.status_code == 302
    assert there.status_code == 429
    assert [r["ip"] for r in api.get("/api/v1/lockouts").json()["results"]] == [ELSEWHERE]
