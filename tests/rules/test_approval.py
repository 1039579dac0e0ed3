"""Four eyes on standing rules (R17): a rule acts only once someone other than its proposer, who
may approve rules and is past the approver cool-down, approved it; every step is audited."""

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError

from console.access.rights import rights_changed
from console.rules.applying import archive_apply
from console.rules.models import RuleApplication, StandingRule
from console.rules.services import rule_approve, rule_reject, rule_remove, rule_withdraw
from tests.rules.conftest import GROUP_ID, reloaded, rule_audit

ARCHIVE = {"queue": "orders", "group": GROUP_ID, "days": 30}


def test_a_proposed_rule_does_nothing_until_a_second_person_approves_it(
    quarantine, rules, personas
):
    quarantine.quarantined("old-1", days_ago=40)
    rule = rules.propose(**ARCHIVE)

    assert rule.status == "proposed"
    assert archive_apply(rule=rule, now=quarantine.now) is None

    rule = rule_approve(actor=personas["approver"], rule=rule, comment="the preview is right")

    assert (rule.status, rule.decided_by, rule.decision_comment) == (
        "active",
        personas["approver"],
        "the preview is right",
    )
    assert archive_apply(rule=rule, now=quarantine.now).count == 1


def test_its_proposer_cannot_approve_it_though_they_may_approve_rules(quarantine, rules, personas):
    rule = rules.propose(by="approver", **ARCHIVE)

    with pytest.raises(PermissionDenied, match="four eyes"):
        rule_approve(actor=personas["approver"], rule=rule)
    with pytest.raises(PermissionDenied, match="four eyes"):
        rule_reject(actor=personas["approver"], rule=rule, comment="never mind")

    assert reloaded(rule).status == "proposed"
    assert rule_approve(actor=personas["admin"], rule=rule).status == "active"


@pytest.mark.parametrize("role", ["viewer", "operator", "auditor"])
def test_who_may_not_approve_rules_cannot_approve_one(quarantine, rules, personas, role):
    rule = rules.propose(**ARCHIVE)

    with pytest.raises(PermissionDenied, match="may not approve"):
        rule_approve(actor=personas[role], rule=rule)

    assert reloaded(rule).status == "proposed"


def test_an_account_whose_rights_just_changed_cannot_approve_a_rule_yet(
    quarantine, rules, personas
):
    rule = rules.propose(**ARCHIVE)
    rights_changed(personas["approver"].pk)

    with pytest.raises(PermissionDenied, match="may approve from"):
        rule_approve(actor=personas["approver"], rule=rule)


def test_a_rejection_says_why_and_the_rule_never_acts(quarantine, rules, personas):
    quarantine.quarantined("old-1", days_ago=40)
    rule = rules.propose(**ARCHIVE)

    with pytest.raises(ValidationError, match="says why"):
        rule_reject(actor=personas["approver"], rule=rule, comment=" ")
    rule = rule_reject(actor=personas["approver"], rule=rule, comment="they are still looked at")

    assert rule.status == "rejected"
    with pytest.raises(ValidationError, match="no longer waiting"):
        rule_approve(actor=personas["approver"], rule=rule)
    assert archive_apply(rule=rule, now=quarantine.now) is None


def test_only_its_proposer_withdraws_a_proposal(quarantine, rules, personas):
    rule = rules.propose(**ARCHIVE)

    with pytest.raises(PermissionDenied, match="only the proposer"):
        rule_withdraw(actor=personas["approver"], rule=rule)
    rule = rule_withdraw(actor=personas["admin"], rule=rule, comment="wrong group")

    assert (rule.status, rule.ended_by, rule.end_comment) == (
        "withdrawn",
        personas["admin"],
        "wrong group",
    )


def test_a_removed_rule_acts_no_more(quarantine, rules, personas):
    quarantine.quarantined("old-1", days_ago=40)
    rule = rules.active(**ARCHIVE)

    with pytest.raises(PermissionDenied):
        rule_remove(actor=personas["operator"], rule=rule, comment="mine now")
    rule = rule_remove(actor=personas["admin"], rule=rule, comment="the service is back")

    assert rule.status == "removed"
    assert archive_apply(rule=rule, now=quarantine.now) is None
    assert not RuleApplication.objects.exists()


def test_a_newer_rule_of_the_same_name_replaces_the_active_one_once_approved(
    quarantine, rules, personas
):
    first = rules.active(name="old-orders", **ARCHIVE)
    second = rules.propose(name="old-orders", **{**ARCHIVE, "days": 60})

    assert reloaded(first).status == "active"
    rule_approve(actor=personas["approver"], rule=second)

    first = reloaded(first)
    assert (first.status, first.end_comment) == ("removed", f"replaced by rule {second.id}")
    assert reloaded(second).status == "active"
    assert StandingRule.objects.filter(name="old-orders", status="active").count() == 1


def test_every_step_is_in_the_audit_trail_with_who_took_it(quarantine, rules, personas):
    rule = rules.active(**ARCHIVE)
    rule_remove(actor=personas["admin"], rule=rule, comment="done")

    assert rule_audit(rule) == [
        ("rule.proposed", "admin"),
        ("rule.approved", "approver"),
        ("rule.removed", "admin"),
    ]


def test_a_second_redirect_of_a_queue_waits_until_the_first_is_removed(quarantine, rules, personas):
    quarantine.queue("orders-v2")
    quarantine.queue("orders-v3")
    first = rules.active("redirect", name="to-v2", queue="orders", to_queue="orders-v2")
    second = rules.propose("redirect", name="to-v3", queue="orders", to_queue="orders-v3")

    with pytest.raises(ValidationError, match="redirects orders already"):
        rule_approve(actor=personas["approver"], rule=second)
    rule_remove(actor=personas["admin"], rule=first, comment="v3 takes over")

    assert rule_approve(actor=personas["approver"], rule=second).status == "active"


@pytest.mark.parametrize(
    ("kind", "params", "said"),
    [
        ("archive", {"queue": "orders", "days": 30}, "names a failure group, an exception type"),
        ("archive", {**ARCHIVE, "days": 0}, "days is a whole number from 1"),
        ("archive", {**ARCHIVE, "to_queue": "payments"}, "does not take to_queue"),
        ("archive", {**ARCHIVE, "queue": "nowhere"}, "there is no queue 'nowhere'"),
        ("archive", {**ARCHIVE, "queue": "payments"}, "is a group of the queue orders"),
        ("redirect", {"queue": "orders", "to_queue": "orders"}, "not to itself"),
        ("auto_retry", {"group": GROUP_ID, "max_attempts": 3}, "delay_seconds is a whole"),
        (
            "auto_retry",
            {"group": GROUP_ID, "delay_seconds": 60, "max_attempts": 3, "steps": [0]},
            "each step is a whole number",
        ),
        ("expire", {}, "the kind is one of archive, redirect, auto_retry"),
    ],
)
def test_parameters_that_do_not_fit_the_kind_are_refused_in_words(
    quarantine, rules, kind, params, said
):
    with pytest.raises(ValidationError, match=said):
        rules.propose(kind, **params)

    assert not StandingRule.objects.exists()


@pytest.mark.parametrize("lapse", ["proposer deactivated", "approver lost the role"])
def test_a_rule_whose_proposer_or_approver_lost_the_right_stops_at_its_next_look(
    quarantine, rules, personas, lapse
):
    quarantine.quarantined("old-1", days_ago=40)
    rule = rules.active(**ARCHIVE)
    if lapse == "proposer deactivated":
        User.objects.filter(pk=personas["admin"].pk).update(is_active=False)
        said = "its proposer, admin, was deactivated"
    else:
        personas["approver"].groups.clear()
        said = "its approver, approver, no longer holds the right to it"

    as_read = StandingRule.objects.get(pk=rule.pk)  # by another worker, still active

    assert archive_apply(rule=rule, now=quarantine.now) is None
    assert archive_apply(rule=as_read, now=quarantine.now) is None  # it is stopped once

    rule = reloaded(rule)
    assert (rule.status, rule.end_comment) == ("stopped", said)
    assert [action for action, _ in rule_audit(rule)].count("rule.stopped") == 1
    assert rule_audit(rule)[-1] == ("rule.stopped", "system")
    assert not RuleApplication.objects.exists()
