"""Issue 34: signing in with OpenID Connect against a real provider (oidc-provider under Node.js,
started by the test): the person's account made from the ID token's claims, roles from their
groups, a group taken away taking effect at the next sign-in, and every change recorded with the
provider as its actor."""

import pytest
from django.contrib.auth.models import User

from console.access.models import ProviderRole
from console.audit.models import AuditEntry
from console.sso.models import ProviderAccount

pytestmark = [pytest.mark.django_db]


def _roles(username):
    return sorted(User.objects.get(username=username).groups.values_list("name", flat=True))


def test_a_person_in_the_ops_group_signs_in_as_an_operator_with_the_providers_name_and_email(
    personas, person
):
    person.op.person(
        "dana", groups=["ops", "unrelated"], name="Dana Scully", email="dana@corp.example"
    )

    answer = person.sign_in("dana")

    assert answer.status_code == 302 and answer["Location"] == "/"
    dana = User.objects.get(username="dana")
    assert (dana.email, dana.first_name, dana.last_name) == ("dana@corp.example", "Dana", "Scully")
    assert not dana.has_usable_password()
    assert _roles("dana") == ["operator"]
    assert ProviderAccount.objects.get(user=dana).subject == "dana"
    assert ProviderRole.objects.get(user=dana).groups == ["ops"]
    assert person.client.get("/").status_code == 200
    signed_in = AuditEntry.objects.get(action="sso.signed_in")
    assert signed_in.actor == "provider:oidc"
    assert signed_in.details["added"] == ["operator"]
    roles = AuditEntry.objects.get(action="user.roles_changed", target_id="dana")
    assert roles.actor == "provider:oidc" and roles.details["added"] == ["operator"]


def test_a_person_taken_out_of_a_group_loses_its_role_at_the_next_sign_in(personas, person):
    person.op.person("dana", groups=["ops", "auditors"])
    person.sign_in("dana")
    assert _roles("dana") == ["auditor", "operator"]
    person.client.post("/logout/")

    person.op.person("dana", groups=["ops"])
    person.sign_in("dana")

    assert _roles("dana") == ["operator"]
    removed = AuditEntry.objects.filter(action="user.roles_changed", target_id="dana").last()
    assert removed.actor == "provider:oidc" and removed.details["removed"] == ["auditor"]


def test_a_role_an_administrator_granted_here_is_not_taken_away_by_the_provider(personas, person):
    person.op.person("dana", groups=["ops"])
    person.sign_in("dana")
    person.client.post("/logout/")
    dana = User.objects.get(username="dana")
    dana.groups.add(personas["auditor"].groups.get())  # by an administrator, outside any group

    person.sign_in("dana")

    assert _roles("dana") == ["auditor", "operator"]


def test_a_person_whose_groups_give_no_role_is_refused_and_told_why(personas, person):
    person.op.person("eve", groups=["marketing"])

    answer = person.sign_in("eve")

    assert answer.status_code == 403
    assert "your groups give you no role here" in answer.content.decode()
    assert "_auth_user_id" not in person.client.session
    refused = AuditEntry.objects.get(action="sso.sign_in_refused")
    assert refused.actor == "provider:oidc" and refused.target_id == "eve"


def test_a_local_account_of_the_same_name_is_never_taken_over(personas, person):
    person.op.person("admin", groups=["platform"])

    answer = person.sign_in("admin")

    assert answer.status_code == 403
    assert "exists here already and is not linked" in answer.content.decode()
    assert not ProviderAccount.objects.exists()
    assert "_auth_user_id" not in person.client.session


def test_sign_in_returns_to_the_page_asked_for(personas, person):
    person.op.person("dana", groups=["ops"])

    answer = person.sign_in("dana", next_url="/queues/")

    assert answer["Location"] == "/queues/"


def test_sign_in_never_returns_to_another_site(personas, person):
    person.op.person("dana", groups=["ops"])

    answer = person.sign_in("dana", next_url="https://evil.example/")

    assert answer["Location"] == "/"


def test_sign_out_ends_the_providers_session_too(personas, person):
    person.op.person("dana", groups=["ops"])
    person.sign_in("dana")

    back = person.sign_out()

    assert back.startswith("http://testserver/login/?")
    assert "_auth_user_id" not in person.client.session
    # At the provider too: the next sign-in shows its sign-in page again.
    start = person.client.get("/sso/oidc/login/")
    page = person._follow(start["Location"])
    assert 'name="login"' in page.text


def test_a_callback_with_a_state_not_ours_is_refused(personas, person):
    person.op.person("dana", groups=["ops"])
    person.client.get("/sso/oidc/login/")

    answer = person.client.get("/sso/oidc/callback/?code=forged&state=forged")

    assert answer.status_code == 403
    assert "The sign-in did not complete" in answer.content.decode()
    assert "_auth_user_id" not in person.client.session
    assert AuditEntry.objects.filter(action="sso.sign_in_refused").exists()


def test_the_provider_refusing_the_sign_in_signs_nobody_in(personas, person):
    # The person is not at the provider: it refuses once they give a login it does not know.
    answer = person.sign_in("mallory")

    assert "_auth_user_id" not in person.client.session
    assert not User.objects.filter(username="mallory").exists()
    assert answer.url.startswith(person.op.issuer)  # still at the provider, which refused


def test_my_account_says_which_group_at_the_provider_gave_each_role(personas, person):
    person.op.person("dana", groups=["ops"], email="dana@corp.example")
    person.sign_in("dana")

    page = person.client.get("/account/").content.decode()
    account = person.client.get("/api/v1/account").json()

    assert "From your groups at your OpenID provider (ops)" in page
    assert "dana@corp.example" in page
    assert account["roles"][0]["provider"] == "oidc"
    assert account["roles"][0]["groups"] == ["ops"]


def test_what_the_provider_says_is_shown_as_inert_text(personas, person, tmp_path, settings):
    hostile = "<script>alert(1)</script>\u202egroup"
    settings.SSO_GROUP_ROLES = str(tmp_path / "hostile.yaml")
    (tmp_path / "hostile.yaml").write_text(f'oidc:\n  "{hostile}": operator\n')
    person.op.person("dana", groups=[hostile], name="<b>Dana</b> Scully")
    person.sign_in("dana")

    page = person.client.get("/account/").content.decode()

    assert "<script>alert(1)" not in page and "<b>Dana</b>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "\u202e" not in page  # the override is shown as its marker, not obeyed
