"""/audit/: the auditor's screen. Who may open it, its filters and pages, the chain's status and
"Verify now", and entries whose actor and details others typed, shown as inert text."""

import re

from django.contrib.auth.models import Permission
from django.urls import reverse

from console.audit.models import AuditEntry
from console.audit.services import audit_checkpoint
from tests.browse.conftest import login
from tests.roles import assert_page_answers, role_matrix

SCRIPT = "<script>alert(1)</script>"
ATTR = '" onmouseover="alert(2)'

# (name, method, url, {role: status}); a role not named gets 403.
PAGES = [
    ("audit-list", "get", lambda: reverse("audit-list"), {"auditor": 200}),
    (
        "audit-list filtered",
        "get",
        lambda: reverse("audit-list") + "?action=login",
        {"auditor": 200},
    ),
    ("audit-export", "get", lambda: reverse("audit-export"), {"auditor": 200}),
    ("audit-verify", "post", lambda: reverse("audit-verify"), {"auditor": 302}),
]


def _html(response, status=200):
    assert response.status_code == status, response.content[:300]
    return response.content.decode()


def _table(html):
    return html[html.index('id="audit-table"') : html.index("</table>")]


@role_matrix(("name", "method", "url", "allowed"), PAGES)
def test_each_audit_page_answers_each_role_as_its_permissions_say(
    personas, role, name, method, url, allowed
):
    response = getattr(login(personas[role] if role else None), method)(url())

    assert_page_answers(response, role, allowed.get(role, 403))


def test_it_shows_the_trail_newest_first(personas, record):
    record("login", actor="alice")
    record("request.created", actor="bob", target_type="request", target_id="7", details={"n": 3})

    html = _html(login(personas["auditor"]).get(reverse("audit-list")))

    actors = re.findall(
        r'<td class="audit-actor"><span class="cut" title="[^"]*">([^<]*)</span></td>', _table(html)
    )
    assert actors == ["auditor", "bob", "alice"]  # the auditor's own login is the newest
    assert ">{&quot;n&quot;: 3}</code>" in html


def test_a_request_target_links_to_the_request_page(personas, record):
    record("request.created", target_type="request", target_id="42")
    record("queue.enabled", target_type="queue", target_id="orders")

    html = _html(login(personas["auditor"]).get(reverse("audit-list")))

    assert '<a class="request-link" href="/requests/42/">request 42</a>' in html
    assert '<span class="id-text" title="orders">orders</span>' in html
    assert html.count('class="request-link"') == 1


def test_a_hostile_actor_target_and_details_are_shown_as_inert_text(personas, record):
    record(
        "login.failed",
        actor=f"{SCRIPT}{ATTR}",
        target_type="request",
        target_id=f"1/../../{SCRIPT}",
        details={"comment": f"{SCRIPT}{ATTR}", "reason": "<img src=x onerror=alert(3)>"},
    )

    html = _html(login(personas["auditor"]).get(reverse("audit-list")))
    table = _table(html)

    assert "<script" not in table
    assert "<img" not in table
    assert 'onmouseover="alert' not in table
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in table
    assert "&lt;img src=x onerror=alert(3)&gt;" in table
    # The id stays inside the link's path: its slashes and quotes are percent-encoded.
    assert 'href="/requests/1%2F..%2F..%2F%3Cscript%3Ealert%281%29%3C%2Fscript%3E/"' in table


def test_filters_narrow_the_table_and_are_kept_by_the_export_link(personas, record):
    record("login", actor="alice")
    record("request.created", actor="bob")
    record("request.approved", actor="carol")

    html = _html(login(personas["auditor"]).get(reverse("audit-list") + "?action=request."))

    actions = re.findall(r'<td class="audit-action" data-action="([^"]*)">', _table(html))
    assert actions == ["request.approved", "request.created"]
    assert 'id="audit-export" href="/audit/export.csv?action=request."' in html


def test_invalid_filters_are_refused_with_a_message(personas, record):
    record()
    url = reverse("audit-list") + "?since=2026-03-02T00:00&until=2026-03-01T00:00"

    html = _html(login(personas["auditor"]).get(url), status=400)

    assert 'id="filter-errors"' in html
    assert 'id="audit-table"' not in html


def test_page_links_walk_the_trail_by_seq_and_keep_the_filters(personas, record, monkeypatch):
    from console.audit import selectors

    monkeypatch.setattr(selectors, "PAGE_SIZE", 2)
    for _ in range(5):
        record("login", actor="alice")
    client = login(personas["auditor"])

    first = _html(client.get(reverse("audit-list") + "?actor=alice"))
    assert 'id="page-prev"' not in first
    assert 'id="page-next" rel="next" href="?actor=alice&amp;after=4"' in first

    second = _html(client.get(reverse("audit-list") + "?actor=alice&after=4"))
    assert re.findall(r'<td class="num">(\d+)</td>', second) == ["3", "2"]
    assert 'id="page-prev" rel="prev" href="?actor=alice&amp;before=3"' in second
    assert 'id="page-next" rel="next" href="?actor=alice&amp;after=2"' in second

    back = _html(client.get(reverse("audit-list") + "?actor=alice&before=3"))
    assert re.findall(r'<td class="num">(\d+)</td>', back) == ["5", "4"]


def test_the_export_link_is_shown_only_to_those_who_may_export(personas, record):
    reader = personas["outsider"]
    reader.user_permissions.add(
        Permission.objects.get(content_type__app_label="audit", codename="view_auditentry")
    )

    html = _html(login(reader).get(reverse("audit-list")))

    assert 'id="audit-export"' not in html
    assert login(reader).get(reverse("audit-export")).status_code == 403


def test_it_says_when_there_is_no_checkpoint_yet(personas, record):
    record()

    html = _html(login(personas["auditor"]).get(reverse("audit-list")))

    assert "No checkpoint yet" in html
    # #2: the auditor's login; a moment is said in UTC, with its exact instant for the browser.
    assert (
        'Latest entry #2 of <time datetime="2026-03-01T12:00:00Z" data-when>'
        "2026-03-01 12:00:00 UTC</time>" in html
    )


def test_it_shows_whether_the_latest_checkpoint_still_holds(personas, record):
    for _ in range(3):
        record()
    audit_checkpoint()
    client = login(personas["auditor"])

    assert "checkpoint holds" in _html(client.get(reverse("audit-list")))

    AuditEntry.objects.filter(seq=3).delete()
    html = _html(client.get(reverse("audit-list")))
    assert "checkpoint broken" in html
    assert "Checkpoint #3 of" in html


def test_verify_now_reports_an_intact_trail(personas, record):
    for _ in range(3):
        record()
    client = login(personas["auditor"])

    response = client.post(reverse("audit-verify"), {"next": "/audit/?actor=alice"})

    assert response["Location"] == "/audit/?actor=alice"
    html = _html(client.get(response["Location"]))
    assert "Audit trail intact: 4 entries checked." in html  # 3, and the auditor's login


def test_verify_now_reports_the_first_problems_of_a_tampered_trail(personas, record):
    for _ in range(4):
        record()
    AuditEntry.objects.filter(seq=2).update(details={"forged": True})
    client = login(personas["auditor"])

    response = client.post(reverse("audit-verify"), follow=True)

    html = _html(response)
    assert "Audit trail NOT intact: 1 problem(s) in 5 entries." in html
    assert "entry #2: altered (its hash does not match it)" in html
    assert 'class="flash-error"' in html


def test_verify_now_does_not_send_anyone_to_another_site(personas, record):
    record()

    response = login(personas["auditor"]).post(
        reverse("audit-verify"), {"next": "https://evil.example/"}
    )

    assert response["Location"] == reverse("audit-list")


def test_verify_now_is_post_only_and_checks_csrf(personas, record):
    from django.test import Client

    assert login(personas["auditor"]).get(reverse("audit-verify")).status_code == 405
    client = Client(enforce_csrf_checks=True)
    client.force_login(personas["auditor"])
    assert client.post(reverse("audit-verify")).status_code == 403


def test_the_audit_link_is_in_the_menu_of_those_who_may_read_the_trail(personas):
    auditor = _html(login(personas["auditor"]).get(reverse("audit-list")))
    viewer = _html(login(personas["viewer"]).get(reverse("dashboard")))

    assert '<a href="/audit/" class="active" aria-current="page">Audit</a>' in auditor
    assert ">Audit</a>" not in viewer
