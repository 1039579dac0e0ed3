"""API tokens: how a token opens the API (console.accounts.tokens.authentication), the rules of the
services that make and revoke them (console.accounts.tokens), and /api/v1/tokens. A token acts
only for a service account (R19): the application persona is one; tests/security has the
attacks."""

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from console.accounts.models import ApiToken
from console.accounts.tokens.services import token_create, token_revoke
from console.audit.models import AuditEntry

URL = "/api/v1/tokens"
# An endpoint a service account (the application role) may call: the tokens are tried on it.
PROBE = "/api/v1/poison-list"


def _with_token(token):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client


def _signed_in(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def _service_token(personas, **options):
    """A token an administrator made for the service account."""
    return token_create(
        actor=personas["admin"],
        user=personas["application"],
        name=options.pop("name", "tests"),
        **options,
    )


# --- A token at work -----------------------------------------------------------------------------


def test_a_token_opens_the_api_as_its_service_account(personas):
    _, token = _service_token(personas)

    response = _with_token(token).get(PROBE)

    assert response.status_code == 200


def test_an_anonymous_call_is_a_401_with_the_token_challenge(db):
    response = APIClient().get(PROBE)

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"


@pytest.mark.parametrize("header", ["Token nope", "Token a\x00b", "Token \xe9t\xe9"])
def test_a_token_that_is_no_token_is_a_401_not_a_server_error(db, header):
    client = APIClient(raise_request_exception=False)

    response = client.get(PROBE, HTTP_AUTHORIZATION=header)

    assert response.status_code == 401
    assert response.json() == {"detail": "Invalid token."}


def test_the_token_is_stored_nowhere_only_its_digest(personas):
    row, token = _service_token(personas)
    _with_token(token).get(PROBE)

    assert row.digest != token
    assert token.startswith(row.token_key)
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")  # noqa: S608
            for found in cursor.fetchall():
                assert token not in repr(found), table


def test_an_expired_token_is_refused_deleted_and_its_expiry_audited_once(personas):
    row, token = _service_token(personas, name="nightly export")
    ApiToken.objects.filter(pk=row.pk).update(expiry=timezone.now() - timedelta(seconds=1))

    first = _with_token(token).get(PROBE)
    second = _with_token(token).get(PROBE)

    assert first.status_code == 401
    assert first.json() == {"detail": "Token expired."}
    assert second.status_code == 401
    assert not ApiToken.objects.filter(pk=row.pk).exists()
    expired = AuditEntry.objects.filter(action="token.expired")
    assert [(e.actor, e.target_type, e.target_id, e.details) for e in expired] == [
        ("system", "user", "application", {"name": "nightly export", "token_key": row.token_key})
    ]


def test_a_wrong_token_with_an_expired_tokens_key_leaves_that_token_alone(personas):
    row, token = _service_token(personas)
    ApiToken.objects.filter(pk=row.pk).update(expiry=timezone.now() - timedelta(seconds=1))

    response = _with_token(row.token_key + "0" * (len(token) - len(row.token_key))).get(PROBE)

    assert response.status_code == 401
    assert ApiToken.objects.filter(pk=row.pk).exists()
    assert not AuditEntry.objects.filter(action="token.expired").exists()


def test_a_revoked_token_is_refused(personas):
    row, token = _service_token(personas)

    assert token_revoke(actor=personas["admin"], token=row)
    response = _with_token(token).get(PROBE)

    assert response.status_code == 401
    assert not ApiToken.objects.filter(pk=row.pk).exists()


def test_the_token_of_a_disabled_account_is_refused(personas):
    application = personas["application"]
    _, token = _service_token(personas)
    application.is_active = False
    application.save()

    response = _with_token(token).get(PROBE)

    assert response.status_code == 401
    assert response.json() == {"detail": "User inactive or deleted."}


def test_the_last_use_is_recorded_at_most_once_a_minute(personas):
    row, token = _service_token(personas)
    client = _with_token(token)

    client.get(PROBE)
    first_use = ApiToken.objects.get(pk=row.pk).last_used_at
    with CaptureQueriesContext(connection) as queries:
        client.get(PROBE)
    updates = [q["sql"] for q in queries if q["sql"].startswith("UPDATE")]

    assert first_use is not None
    assert updates == []
    assert ApiToken.objects.get(pk=row.pk).last_used_at == first_use

    a_while_ago = timezone.now() - timedelta(minutes=2)
    ApiToken.objects.filter(pk=row.pk).update(last_used_at=a_while_ago)
    client.get(PROBE)

    assert ApiToken.objects.get(pk=row.pk).last_used_at > a_while_ago


# --- Who makes and revokes which -----------------------------------------------------------------


def test_a_token_lasts_the_days_asked_or_api_token_days(personas, settings):
    settings.REST_KNOX = {**settings.REST_KNOX, "TOKEN_TTL": timedelta(days=30)}

    default, _ = _service_token(personas)
    short, _ = _service_token(personas, days=7)

    assert abs(default.expiry - (timezone.now() + timedelta(days=30))) < timedelta(minutes=1)
    assert abs(short.expiry - (timezone.now() + timedelta(days=7))) < timedelta(minutes=1)


@pytest.mark.parametrize("days", [0, 366, -1, "30", True])
def test_days_outside_1_to_365_are_refused(personas, days):
    with pytest.raises(ValidationError, match="from 1 to 365 days"):
        _service_token(personas, days=days)

    assert not ApiToken.objects.exists()


def test_a_token_needs_a_name(personas):
    with pytest.raises(ValidationError, match="needs a name"):
        _service_token(personas, name="  ")


def test_an_admin_makes_and_revokes_a_service_accounts_token(personas):
    admin, application = personas["admin"], personas["application"]

    row, token = token_create(actor=admin, user=application, name="billing")
    assert _with_token(token).get("/api/v1/poison-list").status_code == 200
    assert token_revoke(actor=admin, token=row)

    assert row.user == application
    assert row.created_by == admin
    entries = AuditEntry.objects.filter(action__startswith="token.").order_by("seq")
    assert [(e.actor, e.action, e.target_id) for e in entries] == [
        ("admin", "token.created", "application"),
        ("admin", "token.revoked", "application"),
    ]
    assert entries[0].details == {
        "name": "billing",
        "token_key": row.token_key,
        "expires_at": row.expiry.isoformat(),
    }


@pytest.mark.parametrize("person", ["operator", "viewer", "auditor", "outsider", "admin"])
def test_nobody_makes_a_token_for_a_persons_account_not_even_their_own(personas, person):
    with pytest.raises(PermissionDenied, match="not a service account"):
        token_create(actor=personas["admin"], user=personas[person], name="side door")
    with pytest.raises(PermissionDenied, match="not a service account"):
        token_create(actor=personas[person], user=personas[person], name="my own")
    with pytest.raises(PermissionDenied, match="only an administrator"):
        token_create(actor=personas["operator"], user=personas["application"], name="x")

    assert not ApiToken.objects.exists()


def test_a_person_cannot_revoke_a_service_accounts_token_and_an_admin_can(personas):
    row, _ = _service_token(personas)

    with pytest.raises(PermissionDenied):
        token_revoke(actor=personas["viewer"], token=row)
    assert ApiToken.objects.filter(pk=row.pk).exists()
    assert token_revoke(actor=personas["admin"], token=row)


# --- /api/v1/tokens ------------------------------------------------------------------------------


def test_post_answers_the_token_once_and_the_list_never_does(personas):
    client = _signed_in(personas["admin"])

    made = client.post(f"{URL}?user=application", {"name": "billing", "days": 10}, format="json")
    listed = client.get(URL, {"user": "application"})

    assert made.status_code == 201
    body = made.json()
    assert set(body) == {
        "key",
        "name",
        "user",
        "created",
        "expires_at",
        "last_used_at",
        "created_by",
        "token",
    }
    assert body["token"].startswith(body["key"])
    assert _with_token(body["token"]).get(PROBE).status_code == 200
    assert listed.status_code == 200
    assert [t["key"] for t in listed.json()] == [body["key"]]
    assert "token" not in listed.json()[0]
    assert body["token"] not in listed.content.decode()


def test_a_service_account_sees_and_revokes_only_its_own_tokens_and_makes_none(
    personas, django_user_model
):
    other = django_user_model.objects.create_user("other-app")
    other.groups.add(personas["application"].groups.get())
    mine, token = _service_token(personas, name="mine")
    theirs, _ = token_create(actor=personas["admin"], user=other, name="theirs")
    client = _with_token(token)

    listed = client.get(URL).json()
    refused = client.delete(f"{URL}/{theirs.token_key}")
    nul = client.delete(f"{URL}/a%00b")
    minted = client.post(URL, {"name": "a successor", "days": 365}, format="json")
    revoked = client.delete(f"{URL}/{mine.token_key}")

    assert [t["name"] for t in listed] == ["mine"]
    assert refused.status_code == 404
    assert nul.status_code == 404
    assert ApiToken.objects.filter(pk=theirs.pk).exists()
    # A leaked token cannot mint itself a successor that outlives its revocation.
    assert minted.status_code == 403
    assert "made by an administrator" in minted.json()["detail"]
    assert revoked.status_code == 204
    assert not ApiToken.objects.filter(pk=mine.pk).exists()
    assert AuditEntry.objects.get(action="token.revoked").actor == "application"


@pytest.mark.parametrize("person", ["viewer", "operator", "admin"])
def test_a_person_signed_in_has_no_tokens_of_their_own_to_list_or_make(personas, person):
    client = _signed_in(personas[person])

    listed = client.get(URL)
    made = client.post(URL, {"name": "laptop"}, format="json")

    assert listed.status_code == 403 and made.status_code == 403
    assert "not a service account" in made.json()["detail"]
    assert not ApiToken.objects.exists()


def test_a_non_admin_cannot_reach_another_accounts_tokens(personas):
    client = _signed_in(personas["operator"])

    for username in ("application", "viewer", "nobody-at-all"):
        assert client.get(URL, {"user": username}).status_code == 403, username
        assert client.post(f"{URL}?user={username}", {"name": "x"}, format="json").status_code == (
            403
        )

    assert not ApiToken.objects.exists()


def test_an_admin_makes_a_token_for_a_service_account_but_not_for_a_person(personas):
    client = _signed_in(personas["admin"])

    made = client.post(f"{URL}?user=application", {"name": "billing"}, format="json")
    refused = client.post(f"{URL}?user=operator", {"name": "side door"}, format="json")
    unknown = client.get(URL, {"user": "nobody-at-all"})
    listed = client.get(URL, {"user": "application"})

    assert made.status_code == 201
    assert made.json()["user"] == "application"
    assert made.json()["created_by"] == "admin"
    assert refused.status_code == 403
    assert "operator is not a service account" in refused.json()["detail"]
    assert unknown.status_code == 404
    assert [t["key"] for t in listed.json()] == [made.json()["key"]]
    assert client.delete(f"{URL}/{made.json()['key']}").status_code == 204
    created = AuditEntry.objects.get(action="token.created")
    assert (created.actor, created.target_id) == ("admin", "application")


@pytest.mark.parametrize("days", [0, 366])
def test_the_api_refuses_days_outside_1_to_365(personas, days):
    response = _signed_in(personas["admin"]).post(
        f"{URL}?user=application", {"name": "x", "days": days}, format="json"
    )

    assert response.status_code == 400
    assert "days" in response.json()["errors"]
