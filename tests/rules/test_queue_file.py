"""Standing rules as code: a queue file's `rules:` beside its `queues:` (manage.py load_queues
FILE --proposer NAME), each proposed in the proposer's name for a second person to approve on
screen; loading it again changes nothing; all or nothing with the queues."""

import io

import pytest
from django.core.exceptions import PermissionDenied
from django.core.management import CommandError, call_command

from console.queues.models import Queue
from console.rules.models import StandingRule
from console.rules.services import rule_approve
from tests.rules.conftest import rule_audit

FILE = """
queues:
  - name: orders
    handler: workers.demo.handlers.noop
  - name: orders-v2
    handler: workers.demo.handlers.noop
rules:
  - name: orders-to-v2
    kind: redirect
    queue: orders
    to_queue: orders-v2
    comment: the new order service takes the reprocesses (SHOP-240)
  - name: old-timeouts
    kind: archive
    queue: orders
    exception_type: TimeoutError
    days: 30
    comment: a month-old timeout is never retried
"""


def load(tmp_path, text, *args):
    path = tmp_path / "queues.yaml"
    path.write_text(text)
    out = io.StringIO()
    call_command("load_queues", str(path), *args, stdout=out)
    return out.getvalue()


def test_a_queue_file_proposes_its_rules_in_the_proposers_name(db, personas, tmp_path):
    said = load(tmp_path, FILE, "--proposer", "admin")

    rules = {r.name: r for r in StandingRule.objects.all()}
    assert set(rules) == {"orders-to-v2", "old-timeouts"}
    assert all(r.status == "proposed" and r.from_file for r in rules.values())
    assert rules["orders-to-v2"].proposed_by == personas["admin"]
    assert (rules["orders-to-v2"].queue, rules["orders-to-v2"].to_queue) == ("orders", "orders-v2")
    assert "rule orders-to-v2  proposed" in said
    (action, actor) = rule_audit(rules["old-timeouts"])[0]
    assert action == "rule.proposed" and actor.startswith("cli:")
    # Still four eyes: the proposer named in the file cannot approve it.
    with pytest.raises(PermissionDenied, match="four eyes"):
        rule_approve(actor=personas["admin"], rule=rules["old-timeouts"])


def test_loading_it_again_changes_nothing_whether_waiting_or_active(db, personas, tmp_path):
    load(tmp_path, FILE, "--proposer", "admin")
    rule_approve(actor=personas["approver"], rule=StandingRule.objects.get(name="orders-to-v2"))

    said = load(tmp_path, FILE, "--proposer", "admin")

    assert StandingRule.objects.count() == 2
    assert "rule orders-to-v2  unchanged" in said and "rule old-timeouts  unchanged" in said


def test_a_changed_rule_is_proposed_anew_and_replaces_the_active_one_once_approved(
    db, personas, tmp_path
):
    load(tmp_path, FILE, "--proposer", "admin")
    first = StandingRule.objects.get(name="old-timeouts")
    rule_approve(actor=personas["approver"], rule=first)

    load(tmp_path, FILE.replace("days: 30", "days: 60"), "--proposer", "admin")
    second = StandingRule.objects.get(name="old-timeouts", status="proposed")
    rule_approve(actor=personas["approver"], rule=second)

    assert StandingRule.objects.get(name="old-timeouts", status="active").days == 60
    assert StandingRule.objects.get(pk=first.pk).status == "removed"


def test_a_file_with_rules_needs_a_proposer_and_changes_nothing_without_one(db, personas, tmp_path):
    with pytest.raises(CommandError, match="say who proposes them"):
        load(tmp_path, FILE)

    assert not Queue.objects.exists() and not StandingRule.objects.exists()


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (("days: 30", "days: thirty"), "rule 'old-timeouts' (entry 2): days is a whole number"),
        (("to_queue: orders-v2", "to_queue: nowhere"), "there is no queue 'nowhere'"),
        (("kind: archive", "kind: expire"), "the kind is one of archive"),
        (("    days: 30", "    days: 30\n    colour: red"), "unknown key(s) colour"),
    ],
)
def test_a_bad_rule_refuses_the_whole_file_naming_it(db, personas, tmp_path, change, said):
    with pytest.raises(CommandError) as refused:
        load(tmp_path, FILE.replace(*change), "--proposer", "admin")

    assert said in str(refused.value)
    assert not Queue.objects.exists() and not StandingRule.objects.exists()


def test_a_proposer_who_may_not_propose_rules_is_refused(db, personas, tmp_path):
    with pytest.raises(CommandError, match="operator may not propose standing rules"):
        load(tmp_path, FILE, "--proposer", "operator")

    assert not StandingRule.objects.exists()
