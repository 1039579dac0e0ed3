"""An archive rule's preview (console.rules.candidates): what it would fail now, with a count,
and what it leaves alone and why, read from the index at a moment the test chooses (the `now`
the services take, and the clock itself under time-machine)."""

from datetime import timedelta

import time_machine
from django.urls import reverse

from console.decisions.services import Action, action_request_create
from console.notes.models import Note
from console.rules.applying import archive_apply
from console.rules.candidates import rule_preview
from console.rules.models import RuleApplication
from console.rules.tasks import rules_archive_task
from tests.browse.conftest import login
from tests.rules.conftest import GROUP_ID, reloaded


def test_the_preview_counts_what_it_would_fail_and_what_it_leaves_alone_and_why(
    quarantine, rules, personas
):
    q = quarantine
    for name in ("old-1", "old-2", "old-3"):
        q.quarantined(name, days_ago=40)
    q.quarantined("young", days_ago=10)
    q.quarantined("other-queue", days_ago=40, queue="payments", group="p" * 64)
    q.quarantined("other-group", days_ago=40, group="h" * 64)
    q.quarantined("delivered", days_ago=40, state="DLVD")
    q.quarantined("investigated", days_ago=40)
    q.investigate("investigated")
    q.quarantined("noted", days_ago=40)
    q.note("noted")
    q.quarantined("noted-before", days_ago=40)
    q.note("noted-before")
    Note.objects.filter(target_id="noted-before").update(created_at=q.now - timedelta(days=41))
    q.quarantined("held", days_ago=40)
    action_request_create(
        actor=personas["operator"],
        scope={"kind": "message", "id": "held"},
        action=Action(kind="reprocess"),
        comment="trying it",
    )
    rule = rules.active(queue="orders", group=GROUP_ID, days=30)

    preview = rule_preview(rule=rule, now=q.now)

    assert (preview.matching, preview.investigated, preview.touched, preview.held) == (7, 1, 1, 1)
    assert (preview.count, preview.more) == (4, False)
    assert preview.sample == ["noted-before", "old-1", "old-2", "old-3"]


def test_a_group_under_investigation_keeps_all_its_messages_from_the_archive(quarantine, rules):
    q = quarantine
    q.quarantined("old-1", days_ago=40)
    q.quarantined("old-2", days_ago=40)
    q.investigate_group()
    rule = rules.active(queue="orders", group=GROUP_ID, days=30)

    preview = rule_preview(rule=rule, now=q.now)

    assert (preview.matching, preview.investigated, preview.count) == (2, 2, 0)
    assert archive_apply(rule=rule, now=q.now) is None
    assert not RuleApplication.objects.exists()
    assert reloaded(rule).last_check["investigated"] == 2


def test_an_archive_by_exception_type_takes_every_group_of_its_queue_with_that_exception(
    quarantine, rules
):
    q = quarantine
    q.quarantined("timeout-1", days_ago=40, group="a" * 64, exception_type="TimeoutError")
    q.quarantined("timeout-2", days_ago=40, group="b" * 64, exception_type="TimeoutError")
    q.quarantined("key-error", days_ago=40, exception_type="KeyError")
    rule = rules.active(queue="orders", exception_type="TimeoutError", days=30)

    assert rule_preview(rule=rule, now=q.now).sample == ["timeout-1", "timeout-2"]


def test_the_injected_clock_decides_what_is_old_enough(quarantine, rules):
    q = quarantine
    q.quarantined("m-1", days_ago=0)
    rule = rules.active(queue="orders", group=GROUP_ID, days=30)

    assert rule_preview(rule=rule, now=q.now + timedelta(days=29, hours=23)).count == 0
    assert rule_preview(rule=rule, now=q.now + timedelta(days=30)).count == 1


def test_the_daily_task_reads_the_clock_it_runs_at(quarantine, rules):
    q = quarantine
    q.quarantined("m-1", days_ago=0)
    rule = rules.active(queue="orders", group=GROUP_ID, days=30)

    with time_machine.travel(q.now + timedelta(days=29), tick=False):
        assert rules_archive_task() == {rule.id: None}
    assert reloaded(rule).last_check["matching"] == 0
    with time_machine.travel(q.now + timedelta(days=31), tick=False):
        done = rules_archive_task()

    application = RuleApplication.objects.get()
    assert done == {rule.id: application.request_id}
    assert application.at == q.now + timedelta(days=31)
    assert application.request.action == "fail" and application.request.count == 1


def test_a_proposed_archive_previews_what_it_would_fail_if_it_were_approved_now(
    quarantine, rules, personas
):
    q = quarantine
    q.quarantined("old-1", days_ago=40)
    rule = rules.propose(queue="orders", group=GROUP_ID, days=30)

    page = login(personas["approver"]).get(reverse("rule-detail", args=[rule.id])).content.decode()

    assert "Approved now, it would fail <strong>1</strong> quarantined message." in page
    assert 'href="/messages/old-1/"' in page
    assert archive_apply(rule=rule, now=q.now) is None  # not active: it does nothing
