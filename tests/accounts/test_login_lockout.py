"""Failed logins lock out the pair (user name, address) they came from (django-axes, for real),
and only that pair: the lockout page, the audit trail, and an administrator lifting a lockout on
the screen or by the API. An address failing on many names is slowed down instead:
test_login_throttle."""

from functools import partial

import pytest
from axes.models import AccessAttempt
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from console.audit.models import AuditEntry
from tests.accounts.conftest import password_login, signed_in
from tests.browse.conftest import api as api_as
from tests.browse.conftest import login as signed_in_as

ATTACKER = "203.0.113.7"
ELSEWHERE = "198.51.100.20"


@pytest.fixture
def limit(settings):
    settings.AXES_FAILURE_LIMIT = 3
    return 3


_login = partial(password_login, ip=ATTACKER)


def _fail(username, times, *, ip=ATTACKER):
    for _ in range(times):
        _login(username, "not-the-password", ip=ip)


def _actions(action):
    return list(AuditEntry.objects.filter(action=action).order_by("seq"))


# (name, address, failures) each, then who logs in with the right password, and from where; the
# limit is 3.
@pytest.mark.parametrize(
    ("failures", "user", "ip"),
    [
        pytest.param(
            [("viewer", ATTACKER, 2)],
            "viewer",
            ATTACKER,
            id="failures_short_of_the_limit_leave_the_login_page_as_it_was",
        ),
        pytest.param(
            [("viewer", f"192.0.2.{n}", 2) for n in (1, 2, 3)],
            "viewer",
            ELSEWHERE,
            id="failures_on_a_name_from_different_addresses_do_not_add_up",
        ),
        # Under the old lockout by address, these locked everyone behind it out for 30 minutes.
        pytest.param(
            [(name, ATTACKER, 1) for name in ("alice", "bob", "carol", "dave", "erin", "frank")],
            "admin",
            ATTACKER,
            id="six_failures_on_six_made_up_names_leave_the_admin_able_to_log_in_from_there",
        ),
    ],
)
def test_failures_that_do_not_add_up_to_a_lockout_leave_the_login_open(
    personas, limit, failures, user, ip
):
    for name, address, times in failures:
        _fail(name, times, ip=address)

    client, response = _login(user, f"pw-{user}-1234", ip=ip)

    assert response.status_code == 302
    assert signed_in(client)


def test_after_the_limit_the_right_password_is_refused_with_the_lockout_page(personas, limit):
    _fail("viewer", limit)

    client, response = _login("viewer", "pw-viewer-1234")

    assert response.status_code == 429
    assert int(response["Retry-After"]) == 30 * 60
    page = response.content.decode()
    assert "Login locked" in page
    assert "30 minutes" in page
    assert "ask an administrator" in page
    assert not signed_in(client)


def test_the_failure_that_reaches_the_limit_already_gets_the_lockout_page(personas, limit):
    _fail("viewer", limit - 1)

    _, response = _login("viewer", "wrong")

    assert response.status_code == 429
    assert "Login locked" in response.content.decode()


def test_five_failures_on_operator_lock_operator_out_from_that_address_only(personas):
    # The default LOGIN_FAILURE_LIMIT, 5.
    _fail("operator", 5)

    locked, refused = _login("operator", "pw-operator-1234")
    elsewhere, from_elsewhere = _login("operator", "pw-operator-1234", ip=ELSEWHERE)
    colleague, from_here = _login("viewer", "pw-viewer-1234")

    assert refused.status_code == 429
    assert not signed_in(locked)
    assert from_elsewhere.status_code == 302
    assert signed_in(elsewhere)
    assert from_here.status_code == 302
    assert signed_in(colleague)


@pytest.mark.parametrize(
    ("user", "how"),
    [
        pytest.param(
            "viewer",
            {"HTTP_X_FORWARDED_FOR": "10.9.9.9"},
            id="a_client_cannot_slip_out_of_its_lockout_by_writing_x_forwarded_for",
        ),
        pytest.param(
            "admin", {"url": "/admin/login/"}, id="the_django_admin_login_is_locked_out_too"
        ),
    ],
)
def test_a_locked_out_name_stays_locked_out_whatever_the_login_says(personas, limit, user, how):
    _fail(user, limit)

    client, response = _login(user, f"pw-{user}-1234", **how)

    assert response.status_code == 429
    assert not signed_in(client)


def test_behind_a_trusted_proxy_the_address_is_the_one_it_forwarded(personas, limit, settings):
    settings.TRUSTED_PROXY_COUNT = 1
    proxy = "10.0.0.2"
    for _ in range(limit):
        _login("viewer", "wrong", ip=proxy, HTTP_X_FORWARDED_FOR=f"6.6.6.6, {ATTACKER}")

    _, refused = _login("viewer", "pw-viewer-1234", ip=proxy, HTTP_X_FORWARDED_FOR=ATTACKER)
    client, allowed = _login("viewer", "pw-viewer-1234", ip=proxy, HTTP_X_FORWARDED_FOR=ELSEWHERE)

    assert refused.status_code == 429
    assert allowed.status_code == 302
    assert signed_in(client)


def test_the_lockout_page_shows_a_user_name_as_text(personas, limit):
    name = "<script>alert(1)</script>"
    _fail(name, limit)

    _, response = _login(name, "wrong")

    assert response.status_code == 429
    assert "<script>alert" not in response.content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in response.content.decode()


def test_a_lockout_is_in_the_audit_trail(personas, limit):
    _fail("viewer", limit)
    _login("viewer", "pw-viewer-1234", HTTP_USER_AGENT="curl/8")

    entries = _actions("login.locked_out")

    assert [(e.actor, e.target_type, e.target_id) for e in entries] == [
        ("anonymous", "user", "viewer"),
        ("anonymous", "user", "viewer"),
    ]
    assert entries[0].details["ip"] == ATTACKER
    assert [e.details["failures"] for e in entries] == [limit, limit + 1]
    assert entries[1].details["user_agent"] == "curl/8"
    # Each failed attempt is audited once, by console.audit, the refused one too.
    assert len(_actions("login.failed")) == limit + 1
    assert not _actions("login")


def test_a_successful_login_forgets_the_users_own_failures(personas, limit):
    _fail("viewer", limit - 1)
    _login("viewer", "pw-viewer-1234")

    _fail("viewer", limit - 1)
    client, response = _login("viewer", "pw-viewer-1234")

    assert response.status_code == 302
    assert signed_in(client)


def test_logging_in_from_an_address_does_not_forget_the_guesses_it_made_at_another_name(
    personas, limit
):
    # One valid account must not reset the count of guesses at someone else's password.
    for _ in range(limit - 1):
        _fail("admin", 1)
        _login("viewer", "pw-viewer-1234")

    _fail("admin", 1)
    client, response = _login("admin", "pw-admin-1234")

    assert response.status_code == 429
    assert not signed_in(client)


def test_an_administrator_sees_the_lockouts_in_force(personas, limit):
    _fail("viewer", limit)

    response = signed_in_as(personas["admin"]).get(reverse("lockout-list"))

    assert response.status_code == 200
    page = response.content.decode()
    assert page.count('class="lockout-row lockout-pair"') == 1
    assert 'class="lockout-row lockout-address"' not in page
    assert 'name="username" value="viewer"' in page
    assert f'name="ip" value="{ATTACKER}"' in page
    assert 'id="no-throttles"' in page


def test_an_administrator_lifts_a_pair_lockout_on_the_screen_and_the_user_logs_in(personas, limit):
    _fail("viewer", limit)
    _fail("viewer", limit, ip=ELSEWHERE)

    response = signed_in_as(personas["admin"]).post(
        reverse("lockout-lift"), {"username": "viewer", "ip": ATTACKER}
    )
    client, login = _login("viewer", "pw-viewer-1234")
    _, still_locked = _login("viewer", "pw-viewer-1234", ip=ELSEWHERE)

    assert response.status_code == 302
    assert login.status_code == 302
    assert signed_in(client)
    assert still_locked.status_code == 429
    lifted = _actions("login.lockout_lifted")
    assert [(e.actor, e.target_type, e.target_id) for e in lifted] == [("admin", "user", "viewer")]
    assert lifted[0].details == {"username": "viewer", "ip": ATTACKER, "attempts_removed": 1}


def test_an_administrator_lifts_a_pair_lockout_by_the_api(personas, limit):
    _fail("viewer", limit)
    api = api_as(personas["admin"])

    listed = api.get("/api/v1/lockouts").json()["results"]
    response = api.post(
        "/api/v1/lockouts/lift", {"username": "viewer", "ip": ATTACKER}, format="json"
    )
    client, login = _login("viewer", "pw-viewer-1234")

    assert [(r["kind"], r["username"], r["ip"], r["failures"]) for r in listed] == [
        ("pair", "viewer", ATTACKER, limit)
    ]
    assert listed[0]["delay_seconds"] is None
    assert listed[0]["next_attempt_at"] is None
    assert response.status_code == 200
    assert response.json() == {"username": "viewer", "ip": ATTACKER, "attempts_removed": 1}
    assert login.status_code == 302
    assert signed_in(client)
    lifted = _actions("login.lockout_lifted")
    assert [(e.actor, e.target_type, e.target_id) for e in lifted] == [("admin", "user", "viewer")]
    assert not api.get("/api/v1/lockouts").json()["results"]


def test_lifting_a_user_name_alone_lifts_its_lockouts_from_every_address(personas, limit):
    _fail("viewer", limit)
    _fail("viewer", limit, ip=ELSEWHERE)

    api_as(personas["admin"]).post("/api/v1/lockouts/lift", {"username": "viewer"}, format="json")

    assert _login("viewer", "pw-viewer-1234")[1].status_code == 302
    assert _login("viewer", "pw-viewer-1234", ip=ELSEWHERE)[1].status_code == 302


def test_lifting_needs_a_user_name_or_an_address(personas):
    api = api_as(personas["admin"])

    response = api.post("/api/v1/lockouts/lift", {}, format="json")
    bad_ip = api.post("/api/v1/lockouts/lift", {"ip": "not-an-address"}, format="json")

    assert response.status_code == 400
    assert bad_ip.status_code == 400
    assert not _actions("login.lockout_lifted")


def test_lifting_one_lockout_leaves_the_others(personas, limit):
    _fail("viewer", limit)
    _fail("operator", limit, ip=ELSEWHERE)

    api_as(personas["admin"]).post("/api/v1/lockouts/lift", {"username": "viewer"}, format="json")

    assert set(AccessAttempt.objects.values_list("username", flat=True)) == {"operator"}
    _, response = _login("operator", "pw-operator-1234", ip=ELSEWHERE)
    assert response.status_code == 429


@pytest.mark.parametrize("role", ["viewer", "operator", "approver", "auditor", "application"])
def test_no_one_but_an_administrator_sees_or_lifts_lockouts(personas, limit, role):
    _fail("viewer", limit)
    screen = Client()
    screen.force_login(personas[role])
    api = APIClient()
    api.force_authenticate(personas[role])

    assert screen.get(reverse("lockout-list")).status_code == 403
    assert screen.post(reverse("lockout-lift"), {"username": "viewer"}).status_code == 403
    assert api.get("/api/v1/lockouts").status_code == 403
    assert api.post("/api/v1/lockouts/lift", {"username": "viewer"}).status_code == 403
    assert AccessAttempt.objects.filter(username="viewer").exists()
    assert not _actions("login.lockout_lifted")


def test_the_lockouts_link_is_in_the_menu_of_administrators_only(personas):
    admin, viewer = signed_in_as(personas["admin"]), Client()
    viewer.force_login(personas["viewer"])
    link = f'href="{reverse("lockout-list")}"'

    assert link in admin.get(reverse("lockout-list")).content.decode()
    assert link not in viewer.get(reverse("dashboard")).content.decode()
