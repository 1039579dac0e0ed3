"""The notes panel on the message and group pages: notes newest first, with author and time,
shown as inert text with their line breaks; the owner, since when, and the ticket as a safe
link; the forms the user may use and no others."""

import re

import pytest
from django.urls import reverse

from console.notes import services
from console.notes.models import GROUP, MESSAGE
from tests.html_tags import assert_attributes_inert, html_tags
from tests.notes.conftest import login

HOSTILE = (
    '<script>alert(1)</script>\n<img src=x onerror="alert(2)">\n'
    '<a href="javascript:alert(3)">x</a> {{ request }} {% csrf_token %}'
)
ESCAPED = (
    "&lt;script&gt;alert(1)&lt;/script&gt;<br>&lt;img src=x onerror=&quot;alert(2)&quot;&gt;<br>"
    "&lt;a href=&quot;javascript:alert(3)&quot;&gt;x&lt;/a&gt; {{ request }} {% csrf_token %}"
)


# What the panel's template writes, and nothing people typed can add to it.
PANEL_TAGS = {
    "section",
    "h2",
    "div",
    "p",
    "strong",
    "a",
    "time",
    "form",
    "input",
    "label",
    "textarea",
    "select",
    "option",
    "button",
    "ol",
    "li",
    "span",
    "br",
}


def _assert_inert(html):
    """The notes panel holds only the template's own tags: no script, no handler, no link
    that runs anything, whatever the notes and the ticket link say."""
    panel = re.search(r'<section id="notes".*?</section>', html, re.S)[0]
    for tag, attrs in html_tags(panel):
        assert tag in PANEL_TAGS, (tag, attrs)
        assert_attributes_inert(tag, attrs)
    assert "<script>alert" not in html


def _notes(html):
    return re.findall(
        r'<span class="note-author">([^<]*)</span>, <time[^>]*>[^<]*</time></p>\s*'
        r'<div class="note-text">(.*?)</div>',
        html,
        re.S,
    )


@pytest.mark.parametrize(
    ("kind", "target", "page"),
    [(MESSAGE, "order-1", "message-detail"), (GROUP, "g1", "group-detail")],
)
def test_hostile_notes_are_shown_as_text_with_their_line_breaks(
    world, personas, kind, target, page
):
    services.note_add(actor=personas["operator"], kind=kind, target_id=target, text=HOSTILE)

    html = login(personas["viewer"]).get(reverse(page, args=[target])).content.decode()

    _assert_inert(html)
    assert _notes(html) == [("operator", ESCAPED)]


def test_notes_are_newest_first_with_their_authors(world, personas):
    for who, text in (("operator", "first"), ("approver", "second"), ("operator", "third")):
        services.note_add(actor=personas[who], kind=GROUP, target_id="g2", text=text)

    html = login(personas["admin"]).get(reverse("group-detail", args=["g2"])).content.decode()

    assert _notes(html) == [("operator", "third"), ("approver", "second"), ("operator", "first")]


def test_the_ticket_is_a_safe_link_and_its_text_is_escaped(world, personas):
    url = 'https://tracker.test/browse/OPS-1?q=<b>&x="y"\''
    services.investigation_take(
        actor=personas["operator"], kind=MESSAGE, target_id="order-1", ticket_url=url
    )

    html = login(personas["viewer"]).get(reverse("message-detail", args=["order-1"])).content
    html = html.decode()

    _assert_inert(html)
    link = re.search(r'<a id="investigation-ticket"[^>]*>', html)[0]
    assert 'rel="noopener noreferrer"' in link
    assert 'href="https://tracker.test/browse/OPS-1?q=&lt;b&gt;&amp;x=&quot;y&quot;&#x27;"' in link
    owner = re.search(r'<p id="investigation-owner">(.*?)</p>', html, re.S)[1]
    assert 'Under investigation by <strong class="owner">operator</strong> since <time' in owner


def test_a_message_in_a_taken_group_says_whose_it_is_through_the_group(world, personas):
    services.investigation_take(actor=personas["operator"], kind=GROUP, target_id="g1")

    html = login(personas["approver"]).get(reverse("message-detail", args=["order-1"])).content
    html = html.decode()

    owner = re.search(r'<p id="investigation-owner">(.*?)</p>', html, re.S)[1]
    assert '<strong class="owner">operator</strong> with its' in owner
    # The approver may still take the message itself (the more specific claim).
    assert 'id="investigation-take"' in html


@pytest.mark.parametrize(
    ("role", "forms"),
    [
        ("viewer", set()),
        ("admin", set()),
        ("operator", {"note-add", "investigation-take"}),
        ("approver", {"note-add", "investigation-take"}),
    ],
)
def test_the_panel_offers_only_the_forms_the_role_may_use(world, personas, role, forms):
    html = login(personas[role]).get(reverse("message-detail", args=["order-1"])).content
    html = html.decode()

    assert 'id="notes"' in html
    shown = set(re.findall(r'<form id="((?:note|investigation)[-\w]*)"', html))
    assert shown == forms


@pytest.mark.parametrize(
    ("role", "forms"),
    [
        ("operator", set()),  # the approver's: an operator may only write a note
        (
            "approver",
            {"investigation-ticket-form", "investigation-hand-over", "investigation-release"},
        ),
    ],
)
def test_only_the_owner_or_an_approver_is_offered_to_change_an_investigation(
    world, personas, role, forms
):
    services.investigation_take(actor=personas["approver"], kind=GROUP, target_id="g1")

    html = login(personas[role]).get(reverse("group-detail", args=["g1"])).content.decode()

    shown = set(re.findall(r'<form id="(investigation[-\w]*)"', html))
    assert shown == forms


def test_adding_a_note_on_the_page_goes_back_to_it_with_the_note(world, personas):
    client = login(personas["operator"])

    response = client.post(
        reverse("note-add"),
        {"kind": MESSAGE, "target_id": "order-1", "text": "line one\r\nline two"},
        follow=True,
    )

    assert response.redirect_chain[-1][0] == reverse("message-detail", args=["order-1"]) + "#notes"
    assert _notes(response.content.decode()) == [("operator", "line one<br>line two")]
