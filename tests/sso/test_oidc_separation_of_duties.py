"""Issue 34, item 4, and issue 43 (R19), with OpenID Connect: a group that gives a role which
grows the person's rights waits, the first time, for an administrator's confirmation (a role
grant asked for by the provider: the provider asks, an administrator confirms); the approver
cool-down counts from that confirmation; SSO_TRUST_PRIVILEGED_GROUPS gives it at sign-in instead,
and the cool-down counts from the sign-in."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.utils import timezone

from console.access.models import ProviderRole, RoleGrant
from console.access.rights import approver_cooldown_check, approver_cooldown_until
from console.access.services import role_grant_confirm, role_grant_withdraw
from console.audit.models import AuditEntry

pytestmark = [pytest.mark.django_db]


@pytest.fixture(autouse=True)
def untrusted(group_roles, settings):
    """The default: the provider's groups are not trusted to give a role alone."""
    settings.SSO_TRUST_PRIVILEGED_GROUPS = False


def _roles(username):
    return sorted(User.objects.get(username=username).groups.values_list("name", flat=True))


def _grant(role, **status):
    return RoleGrant.objects.get(user__username="lead", role__name=role, **status)


def test_the_ops_group_asks_for_the_operator_role_and_an_administrator_confirms_it(
    personas, person
):
    person.op.person("dana", groups=["ops"])

    refused = person.sign_in("dana")

    assert refused.status_code == 403
    assert "operator waits for an administrator" in refused.content.decode()
    assert _roles("dana") == []
    grant = RoleGrant.objects.get(user__username="dana")
    assert (grant.status, grant.role.name, grant.asked_by) == (
        "pending",
        "operator",
        "provider:oidc",
    )

    role_grant_confirm(actor=personas["admin"], grant=grant)
    person.client.post("/logout/")
    answer = person.sign_in("dana")

    assert answer.status_code == 302
    assert _roles("dana") == ["operator"]
    given = ProviderRole.objects.get(user__username="dana")
    assert (given.provider, given.confirmed_by) == ("oidc", personas["admin"])


def test_the_leads_group_asks_for_the_approver_role_and_an_administrator_confirms_it(
    personas, person, settings
):
    person.op.person("lead", groups=["ops", "leads"])

    person.sign_in("lead")

    assert _roles("lead") == []  # operating and approving both wait
    grant = _grant("approver")
    assert (grant.status, grant.source, grant.source_groups) == ("pending", "oidc", ["leads"])
    assert grant.requested_by is None and grant.asked_by == "provider:oidc"
    asked = AuditEntry.objects.filter(action="role_grant.requested")
    assert {e.actor for e in asked} == {"provider:oidc"}
    # Nobody withdraws the provider's grant but the provider (at the sign-in without the group).
    with pytest.raises(PermissionDenied):
        role_grant_withdraw(actor=personas["admin"], grant=grant)

    confirmed_at = timezone.now()
    role_grant_confirm(actor=personas["admin"], grant=grant)

    lead = User.objects.get(username="lead")
    assert _roles("lead") == ["approver"]
    given = ProviderRole.objects.get(user=lead, role__name="approver")
    assert (given.provider, given.confirmed_by) == ("oidc", personas["admin"])
    # The cool-down counts from the confirmation, and holds.
    until = approver_cooldown_until(lead)
    cooldown = timedelta(hours=settings.APPROVER_COOLDOWN_HOURS)
    assert confirmed_at + cooldown <= until <= timezone.now() + cooldown
    with pytest.raises(PermissionDenied, match="may approve from"):
        approver_cooldown_check(lead)


def test_a_confirmed_role_is_kept_at_later_sign_ins_and_goes_with_the_group(personas, person):
    person.op.person("lead", groups=["ops", "leads"])
    person.sign_in("lead")
    role_grant_confirm(actor=personas["admin"], grant=_grant("approver"))
    person.client.post("/logout/")

    person.sign_in("lead")
    # The operator's role adds nothing to an approver's: given, and its grant withdrawn.
    assert _roles("lead") == ["approver", "operator"]
    assert _grant("operator").status == "withdrawn"
    assert RoleGrant.objects.filter(status="pending").count() == 0  # no confirmation asked again
    person.client.post("/logout/")

    person.op.person("lead", groups=["ops"])
    person.sign_in("lead")
    assert _roles("lead") == ["operator"]
    person.client.post("/logout/")

    # Back in the group: a new grant waits; the confirmation was for that time in the group.
    person.op.person("lead", groups=["ops", "leads"])
    person.sign_in("lead")
    assert _roles("lead") == ["operator"]
    assert RoleGrant.objects.filter(status="pending").count() == 1


def test_a_waiting_grant_is_withdrawn_when_the_group_goes_before_anyone_confirms_it(
    personas, person
):
    person.op.person("lead", groups=["ops", "leads"])
    person.sign_in("lead")
    person.client.post("/logout/")

    person.op.person("lead", groups=["ops"])
    person.sign_in("lead")

    assert _grant("approver").status == "withdrawn"
    assert _grant("operator").status == "pending"
    withdrawn = AuditEntry.objects.get(action="role_grant.withdrawn")
    assert withdrawn.actor == "provider:oidc"


def test_a_person_whose_only_role_waits_is_told_so(personas, person):
    person.op.person("lead", groups=["leads"])

    answer = person.sign_in("lead")

    assert answer.status_code == 403
    assert "approver waits for an administrator" in answer.content.decode()


def test_trusting_the_provider_gives_the_approver_role_at_sign_in_and_the_cool_down_from_it(
    personas, person, settings
):
    settings.SSO_TRUST_PRIVILEGED_GROUPS = True
    person.op.person("lead", groups=["leads"])
    signed_in_at = timezone.now()

    person.sign_in("lead")

    lead = User.objects.get(username="lead")
    assert _roles("lead") == ["approver"]
    assert not RoleGrant.objects.exists()
    assert ProviderRole.objects.get(user=lead).confirmed_by is None
    cooldown = timedelta(hours=settings.APPROVER_COOLDOWN_HOURS)
    assert approver_cooldown_until(lead) >= signed_in_at + cooldown
    with pytest.raises(PermissionDenied, match="may approve from"):
        approver_cooldown_check(lead)
    roles = AuditEntry.objects.get(action="user.roles_changed", target_id="lead")
    assert roles.actor == "provider:oidc" and roles.details["added"] == ["approver"]
