"""The standing rules' screens and /api/v1/rules, for every role: who sees them, who proposes,
who approves (never the proposer, on the server), and where a new rule starts from (a "why do
these fail" finding of a failure group)."""

import pytest
from django.urls import reverse

from console.lakequery.models import LakeQuery
from console.rules.models import StandingRule
from tests.browse.conftest import api, login
from tests.lakequery.test_findings_said import _finding
from tests.roles import ROLES, assert_page_answers, who
from tests.rules.conftest import GROUP_ID, reloaded

SEE = {"viewer": 200, "operator": 200, "approver": 200, "admin": 200, "auditor": 200}
PROPOSE = {"approver": 200, "admin": 200}
ARCHIVE = {"kind": "archive", "queue": "orders", "group": GROUP_ID, "days": 30}


@pytest.fixture
def proposed(quarantine, rules):
    quarantine.quarantined("old-1", days_ago=40)
    return rules.propose(**{k: v for k, v in ARCHIVE.items() if k != "kind"})


@pytest.mark.parametrize("role", ROLES, ids=who)
@pytest.mark.parametrize(
    ("page", "allowed"),
    [("rule-list", SEE), ("rule-detail", SEE), ("rule-new", PROPOSE)],
)
def test_each_page_answers_each_role_as_its_rights_say(proposed, personas, role, page, allowed):
    args = [proposed.id] if page == "rule-detail" else []

    response = login(personas[role] if role else None).get(reverse(page, args=args))

    assert_page_answers(response, role, allowed.get(role, 403))


@pytest.mark.parametrize("role", ROLES, ids=who)
def test_only_a_second_person_who_may_approve_rules_approves_on_screen(proposed, personas, role):
    response = login(personas[role] if role else None).post(
        reverse("rule-approve", args=[proposed.id]), {"comment": "fine"}
    )

    # The admin proposed it: four eyes refuse them as they refuse those without the right.
    assert_page_answers(response, role, {"approver": 302}.get(role, 403))
    assert reloaded(proposed).status == ("active" if role == "approver" else "proposed")


@pytest.mark.parametrize("role", ROLES, ids=who)
def test_the_api_lists_the_rules_to_who_may_see_them(proposed, personas, role):
    response = api(personas[role] if role else None).get("/api/v1/rules")

    assert response.status_code == (401 if role is None else SEE.get(role, 403))
    if response.status_code == 200:
        assert [r["name"] for r in response.json()] == ["archive-rule"]


@pytest.mark.parametrize("role", ROLES, ids=who)
def test_the_api_proposes_for_approvers_and_administrators_only(quarantine, personas, role):
    response = api(personas[role] if role else None).post(
        "/api/v1/rules", {**ARCHIVE, "name": "old", "comment": "gone"}, format="json"
    )

    expected = 401 if role is None else {"approver": 201, "admin": 201}.get(role, 403)
    assert response.status_code == expected, response.content
    assert StandingRule.objects.filter(name="old").exists() == (expected == 201)


def test_through_the_api_the_proposer_is_refused_and_someone_else_approves(proposed, personas):
    own = api(personas["admin"]).post(f"/api/v1/rules/{proposed.id}/approve", {}, format="json")
    other = api(personas["approver"]).post(
        f"/api/v1/rules/{proposed.id}/approve", {"comment": "checked"}, format="json"
    )
    detail = api(personas["viewer"]).get(f"/api/v1/rules/{proposed.id}").json()

    assert own.status_code == 403 and "four eyes" in own.json()["detail"]
    assert other.status_code == 200 and other.json()["status"] == "active"
    assert (detail["decided_by"], detail["preview"]["count"], detail["applications"]) == (
        "approver",
        1,
        [],
    )


def test_the_api_refuses_a_rule_that_does_not_fit_its_kind_in_words(quarantine, personas):
    response = api(personas["admin"]).post(
        "/api/v1/rules",
        {"kind": "redirect", "name": "r", "comment": "x", "queue": "orders", "days": 3},
        format="json",
    )

    assert response.status_code == 400
    assert "a redirect rule does not take days" in response.json()["detail"]


def test_a_rule_proposed_on_screen_waits_for_a_second_person(quarantine, personas):
    response = login(personas["admin"]).post(
        reverse("rule-new"), {**ARCHIVE, "name": "old-orders", "comment": "a month is enough"}
    )

    rule = StandingRule.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse(
        "rule-detail", args=[rule.id]
    )
    assert (rule.status, rule.days, rule.proposed_by) == ("proposed", 30, personas["admin"])
    page = login(personas["admin"]).get(response["Location"]).content.decode()
    assert "You proposed this rule: someone else approves or rejects it." in page
    assert 'id="approve-form"' not in page


def test_a_refused_proposal_says_why_on_the_form(quarantine, personas):
    response = login(personas["admin"]).post(
        reverse("rule-new"), {"kind": "archive", "name": "old", "comment": "x", "queue": "orders"}
    )

    assert response.status_code == 400
    assert "an archive rule names a failure group, an exception type, or both" in (
        response.content.decode()
    )
    assert not StandingRule.objects.exists()


def test_a_why_finding_offers_a_standing_rule_of_its_group(quarantine, personas):
    finding = _finding(lift=97.0)  # the field currency, absent in 97 % of the failures
    LakeQuery.objects.create(
        kind=LakeQuery.WHY,
        requester=personas["approver"],
        status=LakeQuery.DONE,
        criteria={"group": GROUP_ID},
        analysis={"findings": [finding], "failures_read": 200, "failures_in_group": 200},
    )
    group_page = reverse("group-detail", args=[GROUP_ID])

    page = login(personas["approver"]).get(group_page).content.decode()
    operator_page = login(personas["operator"]).get(group_page).content.decode()

    link = f"/rules/new?group={GROUP_ID}&amp;comment=the%20field%20currency%20is%20absent"
    assert link in page
    assert "make a standing rule" not in operator_page  # operators do not propose rules
    form = login(personas["approver"]).get(
        f"/rules/new?group={GROUP_ID}&comment=the%20field%20currency%20is%20absent"
    )
    said = form.content.decode()
    assert '<option value="orders" selected>orders</option>' in said
    assert f'value="{GROUP_ID}"' in said and "the field currency is absent</textarea>" in said
