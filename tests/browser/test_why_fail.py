"""An operator asks "why do these fail" on a failure group's page, in Chromium: the lake query
runs (on the test's Spark session, as the spark worker would), and the group's page shows the
two causes first, in words, with their counts."""

import pytest
from playwright.sync_api import expect

from console.lakequery.execution import lake_query_run
from console.lakequery.models import LakeQuery
from tests.decisions.desk import make_desk
from tests.lakequery.why_lake import failing_orders

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture
def group(transactional_db, lake_root, spark, personas, settings):
    return failing_orders(make_desk(spark, personas, settings))


def test_the_groups_page_shows_why_its_messages_fail(group, personas, spark, tab):
    page = tab.page
    tab.login("operator", f"/groups/{group.fingerprint}/")
    with page.expect_navigation():
        page.locator("#why-form button").click()
    expect(page.locator(".flash")).to_contain_text("is queued: why these messages fail")
    lake_query_run(query_id=LakeQuery.objects.get(kind=LakeQuery.WHY).id, spark=spark)

    tab.goto(f"/groups/{group.fingerprint}/")
    findings = page.locator("#why-findings li")
    expect(findings.nth(0)).to_contain_text(
        "the field currency is absent in 60 % of these failures (60 of 100) and 0 % of "
        "deliveries (0 of 200)"
    )
    expect(findings.nth(1)).to_contain_text(
        "the header x-region is eu-west-3 in 40 % of these failures (40 of 100)"
    )
    expect(page.locator("#why-read")).to_contain_text("Read 100 of the group's 100 failures")
    assert not tab.errors and not tab.csp_violations
