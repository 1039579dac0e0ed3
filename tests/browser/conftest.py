"""Browser tests: Debian's Chromium (/usr/bin/chromium), headless, driven by Playwright's Python
package, against pytest-django's live server (a thread of this process sharing the test
database). Playwright never downloads a browser here: it launches the system one.

The data is real: messages are ingested, delivered on the session's Spark and quarantined by the
engine, then one refresh of the read models puts them in the index the pages read."""

import contextlib
import re

import pytest

from tests.conftest import require_service
from tests.delivery.conftest import Engine

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",  # CI runs as root, where Chromium's sandbox cannot start
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TIMEOUT_MS = 15_000


@contextlib.contextmanager
def chromium_launched():
    """Chromium under Playwright, for one package or module of tests: only one may run at a
    time in a thread (Playwright's sync API keeps an event loop there)."""
    require_service("chromium", path=CHROMIUM)
    from playwright.sync_api import sync_playwright

    # That event loop makes Django take the ORM calls the tests make between two page steps for
    # calls from async code. Only while the browser runs: the variable must not leak into other
    # tests (check --deploy refuses it, rightly).
    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
        )
        yield chromium
        chromium.close()


@pytest.fixture(scope="package")
def browser():
    with chromium_launched() as chromium:
        yield chromium


class Tab:
    """One page of a fresh browser context, and what it saw: dialogs (which it dismisses),
    Content-Security-Policy violations reported on the console, and uncaught script errors."""

    def __init__(self, page, base_url):
        self.page = page
        self.base_url = base_url
        self.dialogs = []
        self.csp_violations = []
        self.errors = []
        page.set_default_timeout(TIMEOUT_MS)
        page.on("dialog", self._dialog)
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.errors.append(str(error)))

    accept_dialogs = False  # a test that answers "yes" to the console's confirmations sets it

    def _dialog(self, dialog):
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        if self.accept_dialogs and dialog.type == "confirm":
            dialog.accept()
        else:
            dialog.dismiss()

    def _console(self, message):
        if "Content Security Policy" in message.text:
            self.csp_violations.append(message.text)

    def goto(self, path):
        response = self.page.goto(self.base_url + path)
        assert response is not None and response.status == 200, (path, response)
        return response

    def login(self, role, path=None):
        """Signs in as `role`'s persona, then opens `path` if given."""
        self.goto("/login/")
        self.page.fill("input[name=username]", role)
        self.page.fill("input[name=password]", f"pw-{role}-1234")
        with self.page.expect_navigation():
            self.page.press("input[name=password]", "Enter")
        assert "/login/" not in self.page.url, f"{role} could not log in"
        if path is not None:
            self.goto(path)

    def logout(self):
        # Django logs out on POST only: the page's own log-out button.
        button = self.page.get_by_role("button", name=re.compile(r"log\s*out|sign\s*out", re.I))
        with self.page.expect_navigation():
            button.click()

    def csp_probe(self):
        """Insert an inline script the way an injected payload would run. A page whose policy
        forbids inline scripts refuses it and reports it on the console. Returns (whether the
        script ran, the report or None)."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        try:
            with self.page.expect_console_message(
                lambda message: "Content Security Policy" in message.text, timeout=5_000
            ) as report:
                ran = self.page.evaluate(
                    """() => {
                        window.__csp_probe = undefined;
                        const script = document.createElement('script');
                        script.textContent = 'window.__csp_probe = 1';
                        document.body.appendChild(script);
                        return window.__csp_probe === 1;
                    }"""
                )
            return ran, report.value.text
        except PlaywrightTimeout:
            return ran, None


@contextlib.contextmanager
def tab_opened(browser, base_url):
    """A Tab in a fresh context of `browser`, closed after."""
    context = browser.new_context()
    yield Tab(context.new_page(), base_url)
    context.close()


@pytest.fixture
def tab(browser, live_server):
    with tab_opened(browser, live_server.url) as tab:
        yield tab


@pytest.fixture
def engine(transactional_db, lake_root, spark):
    return Engine(spark)


@pytest.fixture
def refresh(engine):
    """One refresh of the console's read models from the lake."""

    def refresh():
        from console.readmodels.execution import read_models_refresh

        return read_models_refresh(spark=engine.spark)

    return refresh


MISSING_CUSTOMER = "missing field: customer"


@pytest.fixture
def refused(engine, refresh, settings):
    """Five orders without a customer, quarantined in one failure group of queue orders (no
    retry: max_failed_deliveries 1), and indexed. Refreshes after a commit are the test's to do."""
    settings.REFRESH_ON_COMMIT = False
    engine.queue("orders", handler="tests.browser.handlers.orders", max_failed_deliveries=1)
    orders = {f"order-{i}": f'{{"order_id": "A-{i}", "items": []}}' for i in range(1, 6)}
    engine.ingest("orders", orders, content_type="application/json")
    engine.deliver()
    refresh()
    return sorted(orders)
