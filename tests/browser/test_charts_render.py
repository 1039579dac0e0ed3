"""The dashboard's charts in Chromium: the inflow's bars and the lines of the flows in and out
of quarantine and of the deliveries and failed attempts, drawn with their axes, a range and a
queue to choose, no script needed and no CSP violation or console error."""

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def test_the_inflow_chart_renders_with_axes_and_a_range(personas, refused, tab):
    page = tab.page
    tab.login("viewer", "/")
    chart = page.locator("#inflow-chart")
    box = chart.bounding_box()
    assert box["width"] > 300 and box["height"] > 50
    assert chart.locator("rect.bar").count() == 7 * 24
    assert chart.locator(".y-axis text").all_text_contents()[-1] == str(len(refused))
    assert len(chart.locator(".x-axis text").all_text_contents()) == 3
    tallest = chart.locator("rect.bar").nth(7 * 24 - 1)
    assert f": {len(refused)}" in tallest.locator("title").text_content()

    rates = page.locator("#rates-chart")
    assert rates.bounding_box()["width"] > 300
    assert rates.locator("polyline").count() == 2
    legend = page.locator("figure", has=rates).locator(".legend").inner_text()
    assert f"failed attempts: {len(refused)}" in legend and "delivered: 0" in legend
    assert page.locator("#quarantine-flow-chart polyline").count() == 2

    with page.expect_navigation():
        page.locator("#range-24h").click()
    assert page.locator("#inflow-chart rect.bar").count() == 24
    assert page.locator("#range-24h").get_attribute("aria-current") == "true"
    with page.expect_navigation():
        page.locator("#chart-queues").get_by_role("link", name="orders").click()
    assert "range=24h" in page.url and "queue=orders" in page.url  # the range is kept
    assert page.locator("#rates-chart rect.hour").count() == 24
    assert not tab.csp_violations and not tab.errors
