"""/api/docs/: Swagger UI over /api/schema/, for signed-in users. Under the console's policy
(no inline script or style), from our own static files (the console works offline)."""

from html.parser import HTMLParser

import pytest
from django.contrib.staticfiles import finders
from django.templatetags.static import static
from django.test import Client

from console.queues.models import Queue
from tests.browse.conftest import Index
from tests.browser.conftest import chromium_launched, tab_opened

URL = "/api/docs/"


class _Page(HTMLParser):
    """What a page would load and run: scripts (with their inline text), stylesheets, styles."""

    def __init__(self, html):
        super().__init__()
        self.scripts, self.stylesheets, self.inline, self.handlers, self.data = [], [], [], [], {}
        self._in = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.handlers += [name for name in attrs if name.startswith("on") or name == "style"]
        if tag == "script":
            self.scripts.append(attrs.get("src"))
        elif tag == "link" and attrs.get("rel") == "stylesheet":
            self.stylesheets.append(attrs["href"])
        elif tag == "style":
            self.inline.append("<style>")
        if tag in ("script", "style"):
            self._in = tag
        self.data.update({k: v for k, v in attrs.items() if k.startswith("data-")})

    def handle_endtag(self, tag):
        self._in = None

    def handle_data(self, data):
        if self._in and data.strip():
            self.inline.append(data.strip())


@pytest.fixture
def page(personas):
    client = Client()
    client.force_login(personas["viewer"])
    response = client.get(URL)
    assert response.status_code == 200
    return response


def test_it_sends_an_anonymous_visitor_to_the_login_page(db):
    response = Client().get(URL)

    assert response.status_code == 302
    assert response["Location"] == f"/login/?next={URL}"


def test_its_page_runs_no_inline_script_or_style(page):
    html = _Page(page.content.decode())

    assert html.scripts and all(html.scripts), "every script is a file"
    assert html.inline == []
    assert html.handlers == []


def test_its_scripts_and_styles_are_our_static_files(page):
    html = _Page(page.content.decode())

    assert static("js/api_docs.js") in html.scripts
    assert any("drf_spectacular_sidecar/swagger-ui-dist/" in src for src in html.scripts)
    for url in html.scripts + html.stylesheets:
        assert url.startswith(static("")), url
        assert finders.find(url.removeprefix(static(""))), f"{url} is not one of our static files"
    assert b"http://" not in page.content and b"https://" not in page.content


def test_its_policy_forbids_inline_script(page):
    policy = page["Content-Security-Policy"]

    assert "script-src 'self'" in policy
    assert "unsafe-inline" not in policy


def test_it_tells_swagger_ui_where_the_schema_is(page):
    html = _Page(page.content.decode())

    assert html.data["data-schema-url"] == "/api/schema/?format=json"
    assert html.data["data-csrf-token"]


@pytest.fixture(scope="module")
def browser():
    # This module's own, closed at its end: the browser tests start theirs later.
    with chromium_launched() as chromium:
        yield chromium


@pytest.fixture
def tab(browser, live_server):
    with tab_opened(browser, live_server.url) as tab:
        yield tab


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_swagger_ui_runs_in_a_browser_under_the_policy_and_tries_a_write(tab, personas, lake_root):
    Index().queue("orders", enabled=False, disabled_reason="5 failures")
    tab.login("admin")

    tab.goto(URL)
    enable = tab.page.locator("#operations-queues-queues_enable")
    enable.click()
    enable.get_by_role("button", name="Try it out").click()
    enable.locator("input[placeholder=name]").fill("orders")
    enable.get_by_role("button", name="Execute").click()
    status = enable.locator(".live-responses-table tbody .response-col_status")

    assert status.inner_text(timeout=15_000).strip() == "200"
    assert Queue.objects.get(name="orders").enabled is True  # the session's CSRF token was sent
    assert tab.page.locator(".opblock").count() > 5
    assert tab.csp_violations == []
    assert tab.errors == []


def test_every_page_of_the_console_links_the_api_docs(personas):
    client = Client()
    client.force_login(personas["outsider"])

    page = client.get("/account/").content.decode()

    assert 'id="nav-api-docs" href="/api/docs/"' in page


def test_the_docs_open_with_how_to_get_a_token_and_send_a_first_message():
    from tests.api.conftest import openapi_document

    intro = openapi_document()["info"]["description"]

    assert "## Getting started" in intro
    assert "Service tokens" in intro and "manage.py token_create" in intro
    # A token acts only for a service account (R19): a person calls signed in.
    assert "A *person* has no token" in intro
    assert "API tokens" not in intro
    assert 'curl -X POST "$ANTIDOTE/api/v1/messages"' in intro
    assert "Authorization: Token $TOKEN" in intro
