"""Every number on the dashboard that links somewhere opens a list of that many messages, and the
one that cannot (DLVD counts messages the list does not hold: those delivered at first try) says
what it counts, with the number the list does hold beside it. The data is real: delivered by the
engine, then indexed by a refresh."""

import html
import re
from datetime import timedelta

import pytest
from django.urls import reverse

from tests.browse.conftest import login
from tests.delivery.conftest import T0, Engine

pytestmark = [pytest.mark.spark]

COUNT_LINK = re.compile(r'<a class="[^"]*\bcount\b[^"]*" data-count="(\d+)" href="([^"]+)"')


@pytest.fixture
def engine(transactional_db, lake_root, spark):
    return Engine(spark)


@pytest.fixture
def delivered(engine):
    """orders: 3 delivered at first try, 2 after a failure, 2 quarantined, 2 waiting; refunds: 1
    delivered, 1 quarantined; later: 2 never delivered (TBDL)."""
    from console.readmodels.execution import read_models_refresh

    sequence = "tests.handlers_for_tests.sequence"
    engine.queue("orders", handler=sequence, max_failed_deliveries=5)
    engine.queue("refunds", handler=sequence, max_failed_deliveries=5)
    engine.queue("later", handler=sequence)
    engine.ingest("orders", ["ok"] * 3, prefix="first-try")
    engine.ingest("orders", ["t,ok"] * 2, prefix="second-try")
    engine.ingest("orders", ["p"] * 2, prefix="refused")
    engine.ingest("orders", ["t"] * 2, prefix="down")
    engine.ingest("refunds", {"refund-ok": "ok", "refund-refused": "p"})
    engine.ingest("later", ["ok"] * 2, prefix="later")
    engine.deliver(queues=["orders", "refunds"])
    engine.deliver(at=T0 + timedelta(days=1), queues=["orders"])
    read_models_refresh(spark=engine.spark)


def _listed(client, url):
    page = client.get(url)
    assert page.status_code == 200, (url, page.status_code)
    text = page.content.decode()
    count = re.search(r'id="match-count"[^>]*><strong>([\d,+]+)</strong>', text).group(1)
    return count, text.count('<tr class="message-row')


def test_every_number_on_the_dashboard_opens_a_list_of_as_many(delivered, personas):
    client = login(personas["operator"])
    dashboard = client.get(reverse("dashboard")).content.decode()

    links = [(int(n), html.unescape(url)) for n, url in COUNT_LINK.findall(dashboard)]
    opened = {}
    for number, url in links:
        count, rows = _listed(client, url)
        assert (count, rows) == (str(number), number), url
        opened[url.split("?", 1)[1]] = number

    assert opened["state=NDLV"] == 3  # the "quarantined now" card
    assert opened["state=WAIT"] == 2
    assert opened["state=TBDL"] == 2
    assert opened["state=DLVD"] == 2  # of the 6 DLVD, those that failed first
    assert opened["queue=orders&state=NDLV"] == 2
    assert opened["queue=refunds&state=NDLV"] == 1
    assert opened["queue=later&state=TBDL"] == 2
    # NDLV and WAIT of each group that needs attention: refused in orders, in refunds; down
    assert len([q for q in opened if q.startswith("group=")]) == 6
    # DLVD itself is said, not linked: 6 delivered, and what of them the list holds.
    assert not any(q.endswith("state=DLVD") and q.startswith("queue=") for q in opened)
    assert re.search(r'<span class="number"[^>]*>6</span> <abbr class="code"[^>]*>DLVD', dashboard)
    assert 'id="what-the-list-holds"' in dashboard
