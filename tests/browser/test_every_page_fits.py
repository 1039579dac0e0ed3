"""Every page of the demo fits the screen, as each role that signs in meets it (issue 45): at 1280
and at 800 px no page scrolls sideways (a table wider than the screen scrolls inside its own box),
and at 1280 the navigation is one row. Each page is read as well, with tests/page_words.py: no raw
ISO time, no "1 <plural>", no code without its title.

The pages are those the role's navigation links to, read from the page itself (a link added to a
menu later is walked too), and the detail pages of one message, group, request and lake query.

The same walk takes the screenshots of the documentation's gallery (docs/gallery.md), at 1280 px,
so that they show the product as it is: into $SCREENSHOTS_DIR when it is set (`make screenshots`
sets docs/gallery), else into the test's own folder, where they are taken all the same.

One browser, one tab per role, no waiting but for each page's load."""

import os
import re
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.management import call_command
from django.template import Context, Template
from django.utils import timezone

from console.accounts.roles import APPLICATION, ROLES
from console.decisions import services as decisions
from console.delivery.poison import poison_entries_put
from console.ingest.models import MessageKey
from console.lakequery.services import lake_query_create
from tests import page_words
from tests.broker_sources import orders_dlq
from tests.browse.conftest import Index
from tests.browser.conftest import Tab, tab_opened
from tests.conftest import settled
from tests.processes_health.conftest import Beats
from tests.runs.conftest import Runs

pytestmark = [pytest.mark.slow]

WIDE, NARROW = 1280, 800
HEIGHT = 800
# The application role's account is a service account: it never signs in (R19). The operator
# first: the gallery shows each screen as the first role to see it does, and an operator sees
# the most of the messages' screens.
SIGNING_IN = ["operator", *(role for role in ROLES if role not in ("operator", APPLICATION))]
GROUP = "f" * 64
QUARANTINED = ["demo-orders-000001", "demo-orders-000002", "demo-orders-000003"]
# The API's reference (Swagger UI) is a page of its own, without the console's header.
API_REFERENCE = "/api/docs/"
GALLERY_PAGE = Path(__file__).resolve().parents[2] / "docs" / "gallery.md"

# The gallery: one screenshot per main screen, each the first time a role that sees it opens it
# at 1280 px. The detail pages' paths are filled in by the walk.
SCREENS = {
    "dashboard": "/",
    "messages": "/messages/",
    "message": "/messages/{message}/",
    "failure-groups": "/groups/",
    "group": "/groups/{group}/",
    "queues": "/queues/",
    "requests": "/requests/",
    "request": "/requests/{request}/",
    "runs": "/runs/",
    "processes": "/processes/",
    "audit": "/audit/",
}

# How far the page reaches past the window's right edge (0 when it does not scroll sideways).
_SIDEWAYS = "() => document.documentElement.scrollWidth - window.innerWidth"

# The header's items as a person sees them (the menus closed): each visible one's top and bottom.
# They are one row when a horizontal line crosses them all.
_HEADER_ITEMS = """() => {
  const items = document.querySelectorAll(
    "header.top > .brand, #nav > *, header.top > .search, header.top .who > *");
  return [...items].filter((item) => item.offsetParent !== null).map((item) => {
    const box = item.getBoundingClientRect();
    return [item.id || item.className || item.tagName, box.top, box.bottom];
  });
}"""


@pytest.fixture
def demo(transactional_db, lake_root, settings, tmp_path, monkeypatch):
    """`manage.py seed_demo`'s roles, users, queues and messages, and what a refresh and the
    people would have made of some of them: quarantined messages in a failure group, one on the
    poison list, a pending request, a lake query. Each user's password is the personas'."""
    for name in ("ANTIDOTE_AMQP_URL", "ANTIDOTE_NATS_URL", "ANTIDOTE_REDIS_STREAMS_URL"):
        monkeypatch.delenv(name, raising=False)
    settings.VAR_DIR = tmp_path / "var"
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.REFRESH_ON_COMMIT = False
    # The walk takes a minute: the processes that beat as it starts are still alive at its end.
    settings.HEARTBEAT_STALE_SECONDS = 300
    cache.clear()
    call_command("seed_demo", "--orders", "10", stdout=StringIO())

    index = Index()
    index.group(
        GROUP,
        queue="orders",
        exception_type="workers.demo.handlers.InventoryUnavailable",
        pattern="inventory service unavailable for item <n>",
    )
    for message_id in QUARANTINED:
        key = MessageKey.objects.select_related("commit").get(message_id=message_id)
        index.row(
            message_id,
            group_id=GROUP,
            body_path=key.commit.path,
            sender="shop-frontend@orders.example.test",
            exception_type="workers.demo.handlers.InventoryUnavailable",
            reason="permanent failure: inventory service unavailable for item 7",
        )
    index.stats("orders", NDLV=3, TBDL=7)
    index.inflow("orders", timezone.now().replace(minute=0, second=0, microsecond=0), 3)
    poison_entries_put(entries=[(QUARANTINED[0], "orders", "crashed", GROUP)], source="engine")
    _background_work()

    users = {}
    for role in SIGNING_IN:
        user = User.objects.get(username=role)
        user.set_password(f"pw-{role}-1234")
        user.save(update_fields=["password"])
        users[role] = settled(user)
    request = decisions.action_request_create(
        actor=users["operator"],
        scope={"kind": "group", "group": GROUP},
        action=decisions.Action(kind="reprocess"),
        comment="the inventory service is back",
    )
    query = lake_query_create(actor=users["operator"], criteria={"queues": ["orders"]})
    yield {"message": QUARANTINED[0], "group": GROUP, "request": request.id, "query": query.id}
    cache.clear()


def _background_work():
    """Runs of each kind, the processes' heartbeats and a broker source's consumer, named as a
    deployment names them (long pod names: the widest cells of those pages)."""
    runs = Runs()
    m = timedelta(minutes=1)
    worker = "antidote-spark-7f9c4d8b6-x2kqz:4242"
    runs.refresh(ago=50 * m, from_commit=3, upto_commit=7, changed=15)
    runs.delivery(
        ago=40 * m,
        worker=worker,
        queues=["orders", "billing"],
        claimed=12,
        outcomes={"claimed": 12, "states": {"DLVD": 9, "WAIT": 2, "NDLV": 1}},
    )
    runs.delivery(
        ago=30 * m,
        status="failed",
        worker=worker,
        queues=["orders"],
        error="Py4JJavaError: An error occurred while calling o1234.save: "
        "org.apache.spark.SparkException: Job aborted due to stage failure",
    )
    runs.compaction(ago=20 * m, worker=worker, covers_upto=7, commits=20, rows=1200)
    runs.refresh(ago=timedelta(seconds=20), status="running", from_commit=7, upto_commit=9)

    beats = Beats()
    for pid, kind in enumerate(("web", "spark", "worker", "beat", "sources"), start=101):
        beats.process(
            kind,
            pid=pid,
            host=f"antidote-{kind}-7f9c4d8b6-x2kqz",
            beat=timedelta(seconds=2),
            current="delivery run orders, billing" if kind == "spark" else "",
        )
    orders_dlq(
        "ORDERS_BROKER_URL",
        "orders.dlq",
        state="consuming",
        state_since=timezone.now() - 5 * m,
        connected_to="amqp://rabbitmq.messaging.svc.cluster.local:5672/orders",
        drained=1234,
    )


def _shots_folder(tmp_path):
    folder = Path(os.environ.get("SCREENSHOTS_DIR") or tmp_path / "gallery")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _navigation(page):
    """The pages the header links to, in its order: the menus' and the account's."""
    hrefs = page.eval_on_selector_all(
        "header.top a[href]", "(links) => links.map((link) => link.getAttribute('href'))"
    )
    return [href for href in dict.fromkeys(hrefs) if href.startswith("/")]


def _details(navigation, ids):
    """The detail pages behind the lists the role's navigation holds."""
    behind = {
        "/messages/": f"/messages/{ids['message']}/",
        "/groups/": f"/groups/{ids['group']}/",
        "/requests/": f"/requests/{ids['request']}/",
        "/lake-queries/": f"/lake-queries/{ids['query']}/",
        "/queues/": "/messages/?queue=orders",  # a queue's page is its messages
    }
    return [detail for listing, detail in behind.items() if listing in navigation]


def _reads_badly(page):
    """What tests/page_words.py finds wrong in the words of the page as the browser holds it
    (after its scripts ran), leaving out what it shows as data (a body, a stack)."""
    html = page.content()
    text = page_words.visible_text(html)
    found = page_words.raw_iso_times(text) + page_words.one_plural(text)
    return found + [f"{code} without a title" for code in page_words.raw_codes(html)]


def _one_row(items):
    """Whether the header's items share a row: some horizontal line crosses every one."""
    if not items:
        return False
    return max(top for _, top, _ in items) < min(bottom for _, _, bottom in items)


def test_every_page_fits_1280_and_800_pixels_as_every_role(demo, browser, live_server, tmp_path):
    folder = _shots_folder(tmp_path)
    screens = {name: path.format(**demo) for name, path in SCREENS.items()}
    shot = {}
    problems = []
    walked = {}
    for role in SIGNING_IN:
        with tab_opened(browser, live_server.url) as tab:
            page = tab.page
            page.set_viewport_size({"width": WIDE, "height": HEIGHT})
            tab.login(role)
            navigation = _navigation(page)
            paths = navigation + _details(navigation, demo)
            walked[role] = paths
            for path in paths:
                # Each page loaded once, at 1280, then narrowed to 800: the layout follows the
                # window's width (the stylesheet's media queries), not the width it loaded at.
                page.set_viewport_size({"width": WIDE, "height": HEIGHT})
                tab.goto(path)
                if path != API_REFERENCE and not _one_row(page.evaluate(_HEADER_ITEMS)):
                    problems.append((role, path, "navigation on several rows"))
                problems += [(role, path, said) for said in _reads_badly(page)]
                for name, screen in screens.items():
                    if screen == path and name not in shot:
                        shot[name] = folder / f"{name}.png"
                        page.screenshot(path=shot[name])
                for width in (WIDE, NARROW):
                    page.set_viewport_size({"width": width, "height": HEIGHT})
                    sideways = page.evaluate(_SIDEWAYS)
                    if sideways > 0:
                        problems.append(
                            (role, path, f"scrolls sideways by {sideways}px at {width}")
                        )
            assert not tab.csp_violations and not tab.errors, (role, tab.csp_violations, tab.errors)

    assert problems == [], "\n".join(map(str, problems))
    # Each role walked its own pages: a viewer does not see the administrators' menu.
    assert "/runs/" in walked["admin"] and "/runs/" not in walked["viewer"]
    assert "/audit/" in walked["auditor"] and "/messages/" not in walked["auditor"]
    # Every main screen is in the gallery, a PNG of the window (1280 by 800), and the gallery's
    # page shows each.
    assert sorted(shot) == sorted(SCREENS)
    gallery = GALLERY_PAGE.read_text()
    for name, png in shot.items():
        head = png.read_bytes()[:24]
        assert head[:8] == b"\x89PNG\r\n\x1a\n", name
        assert (int.from_bytes(head[16:20]), int.from_bytes(head[20:24])) == (WIDE, HEIGHT), name
        assert re.search(rf"\(gallery/{name}\.png\)", gallery), f"{name} is not in docs/gallery.md"


def test_the_menus_open_by_keyboard_and_close_on_escape_on_a_click_elsewhere_or_another_menu(
    personas, tab
):
    page = tab.page
    page.set_viewport_size({"width": WIDE, "height": HEIGHT})
    tab.login("admin", "/")
    operations = page.locator("#menu-operations")
    runs = page.locator("#nav-runs")
    assert not runs.is_visible()

    # By keyboard: the menu's title takes the focus, Enter opens it, Escape closes it and the
    # focus stays on its title.
    page.locator("#menu-operations > summary").focus()
    page.keyboard.press("Enter")
    assert runs.is_visible()
    page.keyboard.press("Escape")
    assert not runs.is_visible()
    assert page.evaluate("() => document.activeElement.closest('#menu-operations') !== null")

    # One menu at a time; a click elsewhere closes it.
    page.locator("#menu-operations > summary").click()
    page.locator("#menu-administration > summary").click()
    assert page.locator("#nav-role-grants").is_visible()
    assert operations.get_attribute("open") is None
    page.mouse.click(WIDE - 20, HEIGHT - 20)  # on the page, away from the menu
    assert page.locator("#menu-administration").get_attribute("open") is None

    # A link in a menu leads to its page, whose menu is marked as the current area.
    page.locator("#menu-operations > summary").click()
    with page.expect_navigation():
        runs.click()
    assert page.locator("#menu-operations > summary").get_attribute("class") == "active"
    assert runs.get_attribute("aria-current") == "page"
    assert not tab.csp_violations and not tab.errors


def test_an_ids_copy_button_copies_the_whole_id_the_table_cuts(personas, browser, live_server):
    host = "antidote-spark-7f9c4d8b6-x2kqz.workers.eu-west-1.example.internal"
    Beats().process("spark", pid=4242, host=host)
    context = browser.new_context(permissions=["clipboard-read", "clipboard-write"])
    try:
        tab = Tab(context.new_page(), live_server.url)
        page = tab.page
        page.set_viewport_size({"width": NARROW, "height": HEIGHT})
        tab.login("admin", "/processes/")
        cut = page.locator("#process-table .id-text").first
        assert cut.get_attribute("title") == host
        assert page.evaluate("(e) => e.scrollWidth > e.clientWidth", cut.element_handle())

        button = page.locator("#process-table button.copy-id").first
        assert button.get_attribute("aria-label") == f"Copy {host}"
        button.click()
        assert page.evaluate("() => navigator.clipboard.readText()") == host
        assert button.get_attribute("aria-label") == "Copied"
        assert not tab.csp_violations and not tab.errors
    finally:
        context.close()


def test_an_id_reaches_the_page_as_text_its_controls_shown_and_is_copied_as_it_is():
    hostile = '<img src=x onerror=alert(1)>"\u202eorder'
    html = Template("{% load ids %}{% id_shown value href=href link_class='message-link' %}")
    shown = html.render(Context({"value": hostile, "href": '/messages/"x/'}))

    assert "<img" not in shown and '"\u202e' not in shown
    assert 'class="id-text message-link" href="/messages/&quot;x/"' in shown
    assert 'title="&lt;img src=x onerror=alert(1)&gt;&quot;⟨U+202E⟩order"' in shown
    assert '<span class="ctl" title="RIGHT-TO-LEFT OVERRIDE">⟨U+202E⟩</span>order' in shown
    # The button copies the id itself, control character and all (escaped in its attribute).
    assert 'data-copy="&lt;img src=x onerror=alert(1)&gt;&quot;\u202eorder"' in shown
    assert Template("{% load ids %}{% id_shown value %}").render(Context({"value": None})) == ""
