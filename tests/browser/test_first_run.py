"""A newcomer's first minutes (issue 31): `make run` itself, on a VAR_DIR of its own and a free port
(bench/first_run.py, which `python -m bench first_run` times), watched in Chromium as the demo
viewer. The dashboard says the demo is filling, with real counts that follow by themselves, then
shows the first quarantined messages, then says the demo is filled. Ctrl-C then stops every
process without a traceback.

No wall-clock goal here (the bench has those): the waits are generous, only against a hang."""

import re

import pytest
from playwright.sync_api import expect

from bench.first_run import FirstRun, rabbitmq_vhost, rabbitmq_vhost_delete
from tests.conftest import require_service
from tests.processes.conftest import wait_for
from workers.demo.data import demo_message_ids

pytestmark = [pytest.mark.spark, pytest.mark.slow]

PATIENCE = 600  # seconds, against a hang
WAIT = {"timeout": PATIENCE * 1000}  # for expect, whose own default is 5 s


@pytest.fixture
def first_run(tmp_path):
    require_service("make", path="make")
    require_service("java", path="java")
    vhost = rabbitmq_vhost()  # the RabbitMQ-fed queue too, when RabbitMQ is here
    run = FirstRun(tmp_path / "var", amqp_url=vhost[0] if vhost else None).start()
    yield run
    if run.running():
        run.kill()
    if vhost:
        rabbitmq_vhost_delete(vhost[1])


@pytest.mark.timeout(2400)
def test_make_run_shows_the_demo_filling_then_its_first_quarantined_messages(browser, first_run):
    wait_for(first_run.web_answers, timeout=PATIENCE, what="the web to answer")
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(PATIENCE * 1000)
    page.goto(f"{first_run.url}/login/")
    page.fill("input[name=username]", "viewer")
    page.fill("input[name=password]", first_run.password("viewer"))
    with page.expect_navigation():
        page.press("input[name=password]", "Enter")
    page.goto(f"{first_run.url}/")

    filling = page.locator("#demo-filling")
    expect(filling).to_be_visible(**WAIT)
    total = len(demo_message_ids())
    said = re.search(
        r"The demo is filling: ([\d,]+) of ([\d,]+) messages sent", filling.inner_text()
    )
    assert said and said[2] == f"{total:,}"
    # The page follows by itself: the messages sent so far grow, the first quarantined show.
    expect(filling.locator('[data-demo="sent"]')).not_to_have_text("0", **WAIT)
    quarantined = page.locator('#quarantined-count [data-live="quarantined"]')
    expect(quarantined).not_to_have_text("0", **WAIT)
    assert int(quarantined.inner_text().replace(",", "")) > 0

    filled = page.locator("#demo-filled")
    expect(filled).to_be_visible(**WAIT)
    expect(filled).to_contain_text(f"The demo is filled: all {total:,} messages sent")
    assert filling.is_hidden()
    context.close()

    assert first_run.interrupt() is not None, "Ctrl-C did not stop every process"
    assert first_run.tracebacks() == [], first_run.output()[-5000:]
