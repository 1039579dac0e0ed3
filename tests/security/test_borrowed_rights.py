"""Issue 43, point 2 (R19, "rights are never borrowed"): an administrator who wants an
approver's power (or an operator's view of bodies) tries every way the issue found and a few
more, against the running console (its pages, its API, the Django admin, its commands, its
sign-in routes), and fails with a clear error or an audit entry.

The rule: a token acts only for a service account (the application role alone, no way to sign
in), with that account's rights at each call; a person's rights grow only through a role grant a
second administrator confirms; taking a right or an account away takes effect on every session
and token at once."""

import importlib
import io
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone
from knox.models import get_digest_token
from knox.settings import CONSTANTS
from rest_framework.test import APIClient

from console.access.models import RoleGrant
from console.access.service_accounts import is_service_account
from console.accounts.models import ApiToken
from console.accounts.tokens.services import token_create
from console.audit.models import AuditEntry
from tests.admin_forms import admin_user_form
from tests.browse.conftest import Index
from tests.conftest import settled

pytestmark = pytest.mark.django_db

BODY = '{"card": "4111 1111 1111 1111"}'


@pytest.fixture
def admins(personas):
    """The administrator who wants more, and a second one, both long in post and staff (the
    Django admin is theirs too)."""
    admin2 = User.objects.create_user("admin2", password="pw-admin2-1234")
    admin2.groups.add(Group.objects.get(name="admin"))
    User.objects.filter(pk__in=[personas["admin"].pk, admin2.pk]).update(is_staff=True)
    return User.objects.get(username="admin"), settled(admin2)


def _signed_in(user):
    client = Client()
    client.force_login(user)
    return client


def _token_client(token):
    return APIClient(headers={"Authorization": f"Token {token}"})


def _roles(user):
    return sorted(User.objects.get(pk=user.pk).groups.values_list("name", flat=True))


def _old_personal_token(user, days=90):
    """A token of a person's own account as the old "API tokens" page made them (before R19):
    written straight to the table, as no route makes one any more."""
    digest, clear = get_digest_token()
    ApiToken(
        digest=digest,
        token_key=clear[: CONSTANTS.TOKEN_KEY_LENGTH],
        user=user,
        expiry=timezone.now() + timedelta(days=days),
        name="my laptop",
    ).save(force_insert=True)
    return clear


# --- The path the issue found: the application role given to an approver, then a token ----------


def test_an_administrator_cannot_give_the_application_role_to_an_approver_by_any_route(admins):
    admin, _ = admins
    approver = User.objects.get(username="approver")
    application = Group.objects.get(name="application")
    client = _signed_in(admin)

    console = client.post("/role-grants/", {"user": "approver", "role": "application"})
    api = client.post(
        "/api/v1/role-grants",
        {"user": "approver", "role": "application"},
        content_type="application/json",
    )
    django_admin = client.post(
        f"/admin/auth/user/{approver.pk}/change/",
        admin_user_form(
            approver, groups=[str(g.pk) for g in approver.groups.all()] + [str(application.pk)]
        ),
        follow=True,
    )

    said = "approver holds the role approver: the application role is for service accounts only"
    assert console.status_code == 400 and said in console.content.decode()
    assert api.status_code == 400 and said in api.json()["detail"]
    assert said in django_admin.content.decode()
    assert _roles(approver) == ["approver"]
    assert not RoleGrant.objects.exists()


def test_the_application_role_is_refused_to_a_person_who_can_sign_in_even_with_no_role(
    admins, personas
):
    client = _signed_in(admins[0])

    response = client.post("/role-grants/", {"user": "outsider", "role": "application"})

    assert response.status_code == 400
    assert "outsider has a password" in response.content.decode()
    assert _roles(personas["outsider"]) == []


def test_an_administrator_cannot_make_a_token_for_an_approver_by_any_route(admins, personas):
    admin, _ = admins
    client = _signed_in(admin)

    page = client.post(
        "/account/service-tokens/", {"account": "approver", "name": "borrowed", "days": "90"}
    )
    api = client.post(
        "/api/v1/tokens?user=approver", {"name": "borrowed"}, content_type="application/json"
    )
    own = client.post("/api/v1/tokens", {"name": "mine"}, content_type="application/json")
    with pytest.raises(CommandError, match="approver is not a service account"):
        call_command(
            "token_create", "approver", "--name", "x", stdout=io.StringIO(), stderr=io.StringIO()
        )

    assert page.status_code == 400  # not among the service accounts it may choose
    assert api.status_code == 403
    assert "approver is not a service account" in api.json()["detail"]
    assert own.status_code == 403  # nor for the administrator's own account
    assert not ApiToken.objects.exists()
    assert not AuditEntry.objects.filter(action="token.created").exists()


def test_a_90_day_token_an_approver_made_before_the_rule_approves_nothing(
    admins, personas, quarantine
):
    from console.decisions import services as decisions

    request = decisions.action_request_create(
        actor=personas["operator"],
        scope={"kind": "group", "group": "g-missing"},
        action=decisions.Action(kind="reprocess"),
        comment="the inventory service is back",
    )
    token = _old_personal_token(personas["approver"])

    approve = _token_client(token).post(
        f"/api/v1/requests/{request.id}/approve", {"comment": "ok"}, format="json"
    )
    listed = _token_client(token).get("/api/v1/requests")

    assert approve.status_code == 401 and listed.status_code == 401
    assert "not a service account" in approve.json()["detail"]
    request.refresh_from_db()
    assert request.status == "pending"


def test_a_token_of_an_operator_made_before_the_rule_reads_no_body(personas, lake_root):
    Index().message("card-1", BODY)
    token = _old_personal_token(personas["operator"])

    body = _token_client(token).get("/api/v1/messages/card-1/body")

    assert body.status_code == 401
    assert BODY.encode() not in body.content


def test_the_upgrade_revokes_every_persons_token_and_keeps_the_producers_each_audited(personas):
    """Migration accounts 0006 on an install as the old rules left it."""
    application = Group.objects.get(name="application")
    operator, admin = personas["operator"], personas["admin"]
    producer = User.objects.create_user("shop-producer", password="it-could-sign-in")
    producer.groups.add(application)
    mixed = User.objects.create_user("borrowed", password="pw-borrowed-1234")
    mixed.groups.add(application, Group.objects.get(name="approver"))
    personal = _old_personal_token(operator)
    borrowed = _old_personal_token(mixed)
    _, producers = token_create(actor=admin, user=personas["application"], name="feed")
    # The old rules let an account with a password hold the role and its tokens.
    old_producer = _old_personal_token(producer)
    send = Permission.objects.get(content_type__app_label="ingest", codename="add_messagekey")
    Group.objects.get(name="operator").permissions.add(send)  # as the old roles had it
    migration = importlib.import_module(
        "console.accounts.migrations.0006_tokens_for_service_accounts_only"
    )

    migration._to_the_rule(apps=None, schema_editor=None)

    producer.refresh_from_db()
    assert is_service_account(producer) and not producer.has_usable_password()
    assert _roles(mixed) == ["approver"]
    probe = "/api/v1/poison-list"
    assert _token_client(personal).get(probe).status_code == 401
    assert _token_client(borrowed).get(probe).status_code == 401
    assert _token_client(producers).get(probe).status_code == 200
    assert _token_client(old_producer).get(probe).status_code == 200
    revoked = AuditEntry.objects.filter(action="token.revoked")
    assert sorted(e.target_id for e in revoked) == ["borrowed", "operator"]
    assert all(e.details["reason"] for e in revoked)
    assert set(
        AuditEntry.objects.filter(action="user.service_account_rule").values_list(
            "target_id", flat=True
        )
    ) == {"shop-producer", "borrowed"}
    # Operators and approvers no longer send messages in (issue 43, point 9).
    assert (
        not Group.objects.get(name="operator")
        .permissions.filter(codename="add_messagekey")
        .exists()
    )


# --- A service account stays one: no person's role, no password, no sign-in ----------------------


@pytest.mark.parametrize("role", ["approver", "operator", "viewer"])
def test_a_service_account_is_given_no_persons_role(admins, personas, role):
    client = _signed_in(admins[0])

    response = client.post(
        "/api/v1/role-grants",
        {"user": "application", "role": role},
        content_type="application/json",
    )

    assert response.status_code == 400
    assert "application is a service account" in response.json()["detail"]
    assert _roles(personas["application"]) == ["application"]


def test_a_service_account_gets_no_password_from_the_web_and_never_signs_in(admins, personas):
    application = personas["application"]
    _, token = token_create(actor=admins[0], user=application, name="feed")
    client = _signed_in(admins[0])

    set_from_the_web = client.post(
        f"/admin/auth/user/{application.pk}/password/",
        {"usable_password": "true", "password1": "Zz9-borrowed", "password2": "Zz9-borrowed"},
    )
    # A command on the server is not refused (it is recorded); signing in still is.
    application.set_password("Zz9-from-the-shell")
    application.save()
    browser = Client()
    login = browser.post("/login/", {"username": "application", "password": "Zz9-from-the-shell"})

    assert set_from_the_web.status_code == 403
    assert login.status_code == 200 and "_auth_user_id" not in browser.session
    assert not Client().login(username="application", password="Zz9-from-the-shell")
    # And its tokens stop at once: an account someone can sign in to is no service account.
    assert not is_service_account(User.objects.get(pk=application.pk))
    refused = _token_client(token).get("/api/v1/poison-list")
    assert refused.status_code == 401 and "not a service account" in refused.json()["detail"]


def test_a_sign_in_provider_signs_no_service_account_in(personas, tmp_path, settings):
    from console.sso.models import ProviderAccount
    from console.sso.oidc import Claims
    from console.sso.signin import SignInRefused, provider_sign_in
    from tests.sso.conftest import GROUP_ROLES

    (tmp_path / "roles.yaml").write_text(GROUP_ROLES)
    settings.SSO_GROUP_ROLES = str(tmp_path / "roles.yaml")
    ProviderAccount.objects.create(user=personas["application"], provider="oidc", subject="svc")
    claims = Claims(
        subject="svc", username="application", email="", first_name="", last_name="", groups=()
    )

    with pytest.raises(SignInRefused, match="service account"):
        provider_sign_in("oidc", claims)

    refused = AuditEntry.objects.get(action="sso.sign_in_refused")
    assert refused.target_id == "application"


# --- Every role that grows a person's rights waits for a second administrator --------------------


def test_an_administrator_alone_cannot_give_a_viewer_the_operators_body_view(
    admins, personas, lake_root
):
    admin, admin2 = admins
    Index().message("card-1", BODY)
    viewer = personas["viewer"]
    client = _signed_in(admin)

    client.post("/role-grants/", {"user": "viewer", "role": "operator"})
    client.post(
        f"/admin/auth/user/{viewer.pk}/change/",
        admin_user_form(
            viewer, groups=[str(g.pk) for g in Group.objects.filter(name__in=["viewer", "auditor"])]
        ),
    )
    api = client.post(
        "/api/v1/role-grants",
        {"user": "viewer", "role": "approver"},
        content_type="application/json",
    )
    own_confirm = client.post(
        f"/role-grants/{RoleGrant.objects.get(role__name='operator').id}/confirm"
    )

    assert _roles(viewer) == ["viewer"]
    assert api.status_code == 201 and api.json()["status"] == "pending"
    assert own_confirm.status_code == 403
    assert set(RoleGrant.objects.values_list("role__name", "status")) == {
        ("operator", "pending"),
        ("auditor", "pending"),
        ("approver", "pending"),
    }
    page = _signed_in(viewer).get("/messages/card-1/")
    assert BODY not in page.content.decode()

    # The second administrator confirms the operator's role: only then the body shows.
    _signed_in(admin2).post(
        f"/role-grants/{RoleGrant.objects.get(role__name='operator').id}/confirm"
    )

    assert _roles(viewer) == ["operator", "viewer"]
    assert "4111 1111 1111 1111" in _signed_in(viewer).get("/messages/card-1/").content.decode()
    given = AuditEntry.objects.get(action="user.roles_changed", target_id="viewer")
    assert given.actor == "admin2" and given.details["added"] == ["operator"]


def test_a_sign_in_providers_group_asks_for_the_operators_role_and_gives_it_not(
    personas, tmp_path, settings
):
    from console.sso.oidc import Claims
    from console.sso.signin import SignInRefused, provider_sign_in
    from tests.sso.conftest import GROUP_ROLES

    (tmp_path / "roles.yaml").write_text(GROUP_ROLES)
    settings.SSO_GROUP_ROLES = str(tmp_path / "roles.yaml")
    settings.SSO_TRUST_PRIVILEGED_GROUPS = False
    claims = Claims(
        subject="dana", username="dana", email="", first_name="", last_name="", groups=("ops",)
    )

    with pytest.raises(SignInRefused, match="operator waits for an administrator"):
        provider_sign_in("oidc", claims)

    grant = RoleGrant.objects.get(user__username="dana")
    assert (grant.role.name, grant.status, grant.asked_by) == (
        "operator",
        "pending",
        "provider:oidc",
    )
    assert _roles(User.objects.get(username="dana")) == []


def test_a_permission_is_added_from_the_web_neither_to_a_person_nor_to_a_role_someone_holds(
    personas,
):
    root = User.objects.create_superuser("root", password="pw-root-1234")
    operator_role = Group.objects.get(name="operator")
    approve = Permission.objects.get(codename="approve_actionrequest")
    client = _signed_in(root)

    role = client.post(
        f"/admin/auth/group/{operator_role.pk}/change/",
        {
            "name": "operator",
            "permissions": [*operator_role.permissions.values_list("pk", flat=True), approve.pk],
        },
    )
    own = client.post(
        f"/admin/auth/user/{personas['operator'].pk}/change/",
        admin_user_form(personas["operator"], user_permissions=[str(approve.pk)]),
    )

    assert role.status_code == 403 and own.status_code == 403
    assert not User.objects.get(username="operator").has_perm("decisions.approve_actionrequest")


# --- Taking a right or an account away counts at once, on every session and token --------------


def test_taking_the_application_role_away_stops_and_revokes_its_tokens_at_once(admins, personas):
    admin, _ = admins
    application = personas["application"]
    _, token = token_create(actor=admin, user=application, name="feed")
    assert _token_client(token).get("/api/v1/poison-list").status_code == 200

    _signed_in(admin).post(
        f"/admin/auth/user/{application.pk}/change/", admin_user_form(application, groups=[])
    )

    refused = _token_client(token).get("/api/v1/poison-list")
    assert refused.status_code == 401
    assert not ApiToken.objects.exists()
    revoked = AuditEntry.objects.get(action="token.revoked")
    assert (revoked.actor, revoked.target_id) == ("admin", "application")
    assert revoked.details["reason"] == "the account no longer holds the application role"


def test_taking_a_role_away_counts_at_the_next_call_of_a_session_already_open(
    admins, personas, lake_root
):
    Index().message("card-1", BODY)
    operator = personas["operator"]
    session = Client()
    assert session.login(username="operator", password="pw-operator-1234")
    assert session.get("/api/v1/messages/card-1/body").status_code == 200

    _signed_in(admins[0]).post(
        f"/admin/auth/user/{operator.pk}/change/", admin_user_form(operator, groups=[])
    )

    assert session.get("/api/v1/messages/card-1/body").status_code == 403
    assert session.get("/messages/card-1/").status_code == 403


def test_deactivating_an_account_ends_its_sessions_and_stops_its_tokens_at_once(admins, personas):
    admin, _ = admins
    viewer, application = personas["viewer"], personas["application"]
    session = Client()
    assert session.login(username="viewer", password="pw-viewer-1234")
    _, token = token_create(actor=admin, user=application, name="feed")
    assert session.get("/api/v1/queues").status_code == 200

    client = _signed_in(admin)
    client.post(f"/admin/auth/user/{viewer.pk}/change/", admin_user_form(viewer, is_active=""))
    client.post(
        f"/admin/auth/user/{application.pk}/change/", admin_user_form(application, is_active="")
    )

    page = session.get("/queues/")
    assert page.status_code == 302 and page["Location"].startswith("/login/")
    assert session.get("/api/v1/queues").status_code in (401, 403)
    refused = _token_client(token).get("/api/v1/poison-list")
    assert refused.status_code == 401
    assert refused.json() == {"detail": "User inactive or deleted."}
    assert set(
        AuditEntry.objects.filter(action="user.deactivated").values_list("target_id", flat=True)
    ) == {"viewer", "application"}
