"""The tour (docs/tour.md, and the README's table): screenshots of the console's main screens,
remade after every change with `make tour` (Playwright driving Debian's Chromium, as the browser
tests do).

It builds a demo of its own in var/tour (SQLite, the embedded lake, local Spark): the demo queues
and messages of `manage.py seed_demo`, delivered until nothing is due, the read models refreshed,
and one retry waiting for approval. Then it starts the web server on a free port, signs in as
each persona in turn, and writes docs/tour/NN-screen.png. The data is the demo's, so two runs
differ only in ids and times.
"""

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "tour"
VAR = ROOT / "var" / "tour"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
VIEWPORT = {"width": 1280, "height": 800}
PASSWORD = "tour-password-1234"  # noqa: S105 (the tour's own throwaway demo users)
ORDERS = 400  # enough for every rule of the demo to show, few enough to deliver in a minute


def environment():
    """The tour's own embedded defaults, whatever the shell has set."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "ANTIDOTE_AMQP_URL", "LAKE_URI")
    }
    env.update(
        VAR_DIR=str(VAR),
        DJANGO_SETTINGS_MODULE="console.settings",
        SERVE_STATIC="1",  # runserver serves the static files without Django's debug pages
        REFRESH_ON_COMMIT="0",
    )
    return env


def demo_build():
    """Seed, deliver, refresh, and leave one retry for the approver: in this process."""
    import django
    from django.core.management import call_command

    django.setup()
    from django.contrib.auth import get_user_model

    from console.browse.selectors import group_list
    from console.decisions.services import Action, action_request_create

    call_command("migrate", verbosity=0)
    with open(os.devnull, "w") as quiet:  # it prints the demo users' passwords, reset below
        call_command("seed_demo", orders=ORDERS, stdout=quiet)
    call_command("deliver", until_idle=True, max_runs=10)
    call_command("refresh")
    users = get_user_model().objects
    for user in users.all():
        user.set_password(PASSWORD)
        user.save(update_fields=["password"])
    top = group_list(limit=1)
    if top:
        action_request_create(
            actor=users.get(username="operator"),
            scope={"kind": "group", "group": top[0].fingerprint},
            action=Action(kind="reprocess"),
            comment="The inventory service is back: retry these orders.",
        )


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_start(port):
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server
        except OSError:
            time.sleep(0.2)
    server.kill()
    raise SystemExit("the web server did not start")


class Tour:
    def __init__(self, browser, base):
        self.browser = browser
        self.base = base
        self.page = None
        self.shots = []

    def as_user(self, username):
        if self.page is not None:
            self.page.context.close()
        self.page = self.browser.new_context(viewport=VIEWPORT).new_page()
        self.page.goto(self.base + "/login/")
        self.page.fill("input[name=username]", username)
        self.page.fill("input[name=password]", PASSWORD)
        with self.page.expect_navigation():
            self.page.press("input[name=password]", "Enter")
        return self.page

    def go(self, path):
        response = self.page.goto(self.base + path)
        if response is None or response.status != 200:
            raise SystemExit(f"{path}: {response.status if response else 'no answer'}")

    def shot(self, name, *, full_page=False):
        path = OUT / f"{len(self.shots) + 1:02d}-{name}.png"
        self.page.screenshot(path=str(path), full_page=full_page)
        self.shots.append(path)


def screens(tour):
    page = tour.as_user("operator")
    tour.go("/")
    tour.shot("dashboard")
    tour.go("/?range=24h")  # the demo's messages came in within the hour
    page.locator("#inflow-chart").evaluate("chart => chart.closest('section').scrollIntoView()")
    tour.shot("charts")

    tour.go("/messages/?state=NDLV")
    boxes = page.locator("#message-table input.select-message")
    if boxes.count() > 4:
        boxes.nth(1).click()
        boxes.nth(4).click(modifiers=["Shift"])
        page.evaluate("window.scrollTo(0, 0)")
    tour.shot("messages")

    page.locator("#message-table a.message-link").first.click()
    page.wait_for_load_state()
    tour.shot("message")

    tour.go("/groups/")
    page.locator("main table a").first.click()
    page.wait_for_load_state()
    tour.shot("failure-group")
    page.locator("#quick-retry").click()
    page.wait_for_load_state()
    tour.shot("one-click-retry")

    tour.go("/search/?q=customer")
    tour.shot("search")
    tour.go("/messages/")
    page.keyboard.press("?")
    tour.shot("keyboard-shortcuts")

    page = tour.as_user("approver")
    tour.go("/requests/")
    page.locator("main table a").first.click()
    page.wait_for_load_state()
    tour.shot("approval")

    tour.as_user("admin")
    tour.go("/queues/")
    tour.shot("queues")

    tour.as_user("auditor")
    tour.go("/audit/")
    tour.shot("audit-trail")


def main():
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} is missing: apt-get install chromium")
    shutil.rmtree(VAR, ignore_errors=True)
    VAR.mkdir(parents=True)
    os.environ.update(environment())
    for name in ("DATABASE_URL", "CELERY_BROKER_URL", "ANTIDOTE_AMQP_URL", "LAKE_URI"):
        os.environ.pop(name, None)
    sys.path.insert(0, str(ROOT))
    demo_build()

    from playwright.sync_api import sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.png"):
        old.unlink()
    port = free_port()
    server = server_start(port)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
            )
            tour = Tour(browser, f"http://127.0.0.1:{port}")
            screens(tour)
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=10)
    for path in tour.shots:
        print(f"{path.relative_to(ROOT)}  {path.stat().st_size // 1024} KiB")


if __name__ == "__main__":
    main()
