"""A lake query as an operator runs it: the form on /lake-queries/, the query's page following
its progress by polling the API (static/js/lake_query.js) until the query is done, then showing
its result, hostile data included, as inert text, without a single CSP violation.

The spark worker's part (running the query) runs in this process on the test session's Spark,
as the Celery task would call it."""

import pytest

from console.lakequery.execution import lake_query_run
from console.lakequery.models import LakeQuery

pytestmark = [pytest.mark.spark, pytest.mark.slow]

HOSTILE = "<img src=x onerror=window.__xss=1>"


@pytest.fixture
def delivered(engine, settings):
    settings.REFRESH_ON_COMMIT = False
    engine.queue("orders", handler="tests.handlers_for_tests.scripted")
    engine.ingest("orders", {"ok-1": "ok", "bad-1": "permanent"}, sender=HOSTILE)
    engine.deliver()


def test_an_operator_runs_a_lake_query_and_watches_it_finish(personas, delivered, engine, tab):
    page = tab.page
    tab.login("operator", "/lake-queries/")
    page.fill("input[name=body_contains]", "ok")
    with page.expect_navigation():
        page.locator("#lake-query-run").click()

    query = LakeQuery.objects.get()
    assert page.url.endswith(f"/lake-queries/{query.id}/")
    assert page.locator("#lq-status").inner_text() == "queued"
    assert page.locator("#lake-query-results").count() == 0

    # The worker runs it; the page notices by itself and shows the result.
    assert lake_query_run(query_id=query.id, spark=engine.spark).status == "done"
    page.wait_for_selector("#lake-query-results", timeout=20_000)

    assert page.locator("#lq-status").inner_text() == "done"
    assert page.locator("#lq-progress").get_attribute("value") == "100"
    rows = page.locator("#lake-query-results tr.result-row")
    assert rows.count() == 1
    assert rows.first.locator("a.message-link").inner_text() == "ok-1"  # delivered: not indexed
    assert HOSTILE in rows.first.inner_text()  # the sender, as text
    assert page.evaluate("() => window.__xss") is None
    assert page.locator("#lake-query-request").get_attribute("href") == (
        f"/requests/new?scope=lake_query&query={query.id}"
    )
    assert tab.csp_violations == []
    assert tab.errors == []
