"""Issue 34, item 3, with OpenID Connect: a session asks the provider again every
OIDC_RECHECK_MINUTES. A person the provider no longer knows is signed out and deactivated at that
check (the refused sign-in), recorded with the provider as actor; a later sign-in the provider
accepts makes the account active again. A group removed takes effect at the check too."""

import pytest
from django.contrib.auth.models import User

from console.audit.models import AuditEntry
from console.sso.models import ProviderAccount

pytestmark = [pytest.mark.django_db]


def _due(client):
    session = client.session
    session["sso_checked_at"] = 0
    session.save()


def test_a_person_who_left_the_company_is_signed_out_and_deactivated_at_the_next_check(
    personas, person
):
    person.op.person("dana", groups=["ops"])
    person.sign_in("dana")
    assert person.client.get("/").status_code == 200

    person.op.forget("dana")
    assert person.client.get("/").status_code == 200  # not due yet: no call to the provider
    _due(person.client)
    answer = person.client.get("/queues/")

    assert answer.status_code == 302 and answer["Location"].startswith("/login/")
    dana = User.objects.get(username="dana")
    assert not dana.is_active
    assert ProviderAccount.objects.get(user=dana).deactivated_by_provider
    refused = AuditEntry.objects.get(action="sso.refused")
    assert refused.actor == "provider:oidc" and refused.target_id == "dana"
    deactivated = AuditEntry.objects.get(action="user.deactivated", target_id="dana")
    assert deactivated.actor == "provider:oidc"
    assert "no longer lets you in" in person.client.get("/login/").content.decode()


def test_the_account_comes_back_when_the_provider_vouches_again(personas, person):
    person.op.person("dana", groups=["ops"])
    person.sign_in("dana")
    person.op.forget("dana")
    _due(person.client)
    person.client.get("/")

    person.op.person("dana", groups=["ops"])
    answer = person.sign_in("dana")

    assert answer.status_code == 302 and answer["Location"] == "/"
    assert User.objects.get(username="dana").is_active
    assert AuditEntry.objects.filter(action="user.activated", actor="provider:oidc").exists()


def test_an_account_an_administrator_deactivated_stays_so(personas, person):
    person.op.person("dana", groups=["ops"])
    person.sign_in("dana")
    person.client.post("/logout/")
    User.objects.filter(username="dana").update(is_active=False)

    answer = person.sign_in("dana")

    assert answer.status_code == 403
    assert "deactivated by an administrator" in answer.content.decode()


def test_a_group_removed_takes_effect_at_the_check(personas, person):
    person.op.person("dana", groups=["ops", "auditors"])
    person.sign_in("dana")

    person.op.person("dana", groups=["ops"])
    _due(person.client)
    assert person.client.get("/").status_code == 200

    dana = User.objects.get(username="dana")
    assert sorted(dana.groups.values_list("name", flat=True)) == ["operator"]


def test_a_provider_that_does_not_answer_leaves_the_session_be(personas, person):
    person.op.person("dana", groups=["ops"])
    person.sign_in("dana")
    person.op.stop()

    _due(person.client)
    assert person.client.get("/").status_code == 200

    assert User.objects.get(username="dana").is_active
