"""Every page of the demo reads as words (issue 45): signed in as each role, every page the
header and the help dialog link to, and one page of each kind of thing (a message, a failure
group, a request still waiting and one finished, a lake query's result, the queues, the runs, the
audit trail), has no raw ISO time, no "1 <plural>", and no code of the glossary's list without a
title that says what it means (tests/page_words.py)."""

from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from django.contrib.auth.models import User
from django.core.cache import cache
from django.utils import timezone

import workers.demo
from console.accounts.roles import ROLES
from console.decisions import services as decisions
from console.decisions.models import ActionRequest
from console.delivery.models import DeliveryRun
from console.delivery.poison import poison_entries_put
from console.ingest.models import MessageKey
from console.lakequery.models import LakeQuery
from console.lakequery.services import lake_query_create
from console.notes.models import MESSAGE
from console.notes.services import note_add
from console.queues.services import queues_load
from tests.browse.conftest import Index, login
from tests.demo.conftest import demo_seeded
from tests.page_words import one_plural, raw_codes, raw_iso_times, visible_text

DEMO = Path(workers.demo.__file__).parent
GROUP = "f" * 64
ONE_QUARANTINED = "demo-orders-000001"
# Links of the header that are not pages people read: the API's own browser, the metrics.
NOT_PAGES = ("/api/", "/metrics", "/logout/")


@pytest.fixture
def demo(transactional_db, lake_root, settings, tmp_path, monkeypatch):
    """`manage.py seed_demo`'s users, queues and messages, and what workers would have made of
    some of them: one quarantined message in a failure group (one: the counts say "1 ..."), a
    delivery run, a request still waiting and one rejected, a finished lake query."""
    demo_seeded(settings, tmp_path, monkeypatch, orders=5)
    # The Redis demo's redrive queue and source, as `make run` loads them when Redis is there:
    # a handler and options the product provides, on the queues page.
    queues_load(data=yaml.safe_load((DEMO / "redis_streams.yaml").read_text()))

    now = timezone.now()
    index = Index()
    index.group(GROUP, queue="orders", count=1, states={"NDLV": 1}, last_seen=now)
    key = MessageKey.objects.select_related("commit").get(message_id=ONE_QUARANTINED)
    index.row(ONE_QUARANTINED, group_id=GROUP, body_path=key.commit.path, delivery_count=1)
    index.stats("orders", NDLV=1, TBDL=1, DLVD=1)
    index.inflow("orders", now.replace(minute=0, second=0, microsecond=0), 1)
    poison_entries_put(entries=[(ONE_QUARANTINED, "orders", "crashed", GROUP)], source="engine")
    DeliveryRun.objects.create(
        epoch=1,
        status=DeliveryRun.COMMITTED,
        queues=["orders"],
        claimed=1,
        outcomes={"states": {"NDLV": 1}},
        started_at=now - timedelta(minutes=2),
        finished_at=now - timedelta(minutes=1),
    )

    users = {role: User.objects.get(username=role) for role in ROLES}
    note_add(actor=users["operator"], kind=MESSAGE, target_id=ONE_QUARANTINED, text="looked")
    scope = {"kind": "selection", "ids": [ONE_QUARANTINED]}
    cancelled = decisions.Action(
        kind="end_with_error", error_code="CANCELLED", error_description="the order was cancelled"
    )

    def asked(comment):
        return decisions.action_request_create(
            actor=users["operator"], scope=scope, action=cancelled, comment=comment
        )

    waiting = asked("the customer cancelled")
    finished = asked("asked twice")
    decisions.action_request_reject(
        actor=users["approver"], request=finished, comment="one request is enough"
    )
    query = lake_query_create(actor=users["operator"], criteria={"queues": ["orders"]})
    LakeQuery.objects.filter(pk=query.pk).update(status=LakeQuery.DONE, finished_at=now)
    yield {
        "users": users,
        "details": [
            f"/messages/{ONE_QUARANTINED}/",
            f"/groups/{GROUP}/",
            f"/requests/{waiting.id}/",
            f"/requests/{finished.id}/",  # the fourth: the finished one
            f"/lake-queries/{query.id}/",
            "/queues/",
            "/runs/",
            "/audit/",
            "/help/glossary/",
        ],
    }
    cache.clear()


class _MenuLinks(HTMLParser):
    """The pages the header and the help dialog link to (the navigation, however it is
    grouped)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.inside = 0
        self.links = []

    def handle_starttag(self, tag, attrs):
        if tag in ("header", "dialog"):
            self.inside += 1
        elif tag == "a" and self.inside:
            path = urlsplit(dict(attrs).get("href") or "").path
            if path.startswith("/") and not path.startswith(NOT_PAGES):
                self.links.append(path)

    def handle_endtag(self, tag):
        if tag in ("header", "dialog"):
            self.inside -= 1


def _menu_links(html):
    parser = _MenuLinks()
    parser.feed(html)
    return parser.links


def _problems(html):
    text = visible_text(html)
    return {
        name: found
        for name, found in (
            ("raw ISO time", raw_iso_times(text)),
            ("one with a plural", one_plural(text)),
            ("code without a title", raw_codes(html)),
        )
        if found
    }


@pytest.mark.parametrize("role", ROLES)
def test_every_page_of_the_demo_reads_as_words(demo, role):
    client = login(demo["users"][role])
    # Where the role lands, whatever it is allowed (a page that refuses it reads as words too).
    first = client.get("/", follow=True)
    pages = dict.fromkeys([first.request["PATH_INFO"], *_menu_links(first.content.decode())])
    pages.update(dict.fromkeys(demo["details"]))

    read, wrong = 0, {}
    for path in pages:
        response = client.get(path)
        if response.status_code != 200 or "text/html" not in response.get("Content-Type", ""):
            continue  # refused to this role, or not a page: the role matrix tests say which
        read += 1
        if problems := _problems(response.content.decode()):
            wrong[path] = problems

    assert read >= 1, pages
    assert not wrong, "\n".join(f"{path}: {problems}" for path, problems in wrong.items())


def test_a_finished_request_no_longer_says_until_when_its_approval_is_good(demo):
    request = ActionRequest.objects.get(comment="the customer cancelled")
    decisions.action_request_approve(actor=demo["users"]["approver"], request=request, comment="")
    page = login(demo["users"]["operator"]).get(f"/requests/{request.id}/")
    assert "approval good until" in visible_text(page.content.decode())

    # Its execution finished: the expiry it keeps no longer means anything to anyone.
    ActionRequest.objects.filter(pk=request.pk).update(
        status=ActionRequest.DONE, finished_at=timezone.now()
    )
    page = login(demo["users"]["operator"]).get(f"/requests/{request.id}/")

    assert "good until" not in visible_text(page.content.decode())


# What the checks themselves catch: what issue 45 saw, and what they let through.


def test_the_checks_catch_what_the_issue_saw():
    text = visible_text(
        "<p>Download these 1, in this order.</p><p>1 messages entered quarantine</p>"
        "<table><tr><td>last failure</td><td>2026-03-01T12:00:00+00:00</td></tr></table>"
    )

    assert raw_iso_times(text) == ["2026-03-01T12:00:00+00:00"]
    assert len(one_plural(text)) == 2
    assert raw_codes("<p>It covers 5, more than 1 (APPROVAL_OVER).</p><td>NDLV 3</td>") == [
        "APPROVAL_OVER",
        "NDLV",
    ]


def test_the_checks_let_words_data_and_titled_codes_through():
    html = (
        "<p>1 message, 11 messages, 1 process, R1 rules, 2026-03-01 12:00:00 UTC.</p>"
        "<table><tr><td>1</td><td>orders</td></tr></table>"
        '<span class="pill" title="quarantined (NDLV)">NDLV 1</span> FAILED '
        '<pre class="body">{"at": "2026-03-01T12:00:00Z", "n": "1 items", "s": "NDLV"}</pre>'
    )

    assert raw_iso_times(visible_text(html)) == []
    assert one_plural(visible_text(html)) == []
    assert raw_codes(html) == []


def test_a_code_is_shown_with_its_meaning_and_anything_else_as_inert_text():
    from django.template import Context, Template

    page = Template("{% load codes %}{{ a|code }} {{ b|said }} {{ c|code }} {{ c|said }}").render(
        Context({"a": "NDLV", "b": "url_env", "c": '<b title="x">NDLV</b>'})
    )

    assert '<abbr class="code" title="quarantined (NDLV): Not delivered' in page
    assert '<span class="code-said" title="URL variable (url_env): ' in page
    assert "&lt;b title=&quot;x&quot;&gt;NDLV&lt;/b&gt;" in page and "<b " not in page
