"""Why do these fail (issue 46, point 4), end to end on the real Spark session: orders are
delivered by a handler that refuses a booking for two causes (a body without `currency`, the
header `x-region: eu-west-3`) in one failure group, among ten decoys (five fields, five headers,
present at random alike among failures and deliveries). Asked from the group's page, the lake
query ranks the two causes first, with their counts on both sides, says how many messages it
read, and is in the audit trail; who may ask and see it is who may run queries and read bodies."""

import pytest
from django.urls import reverse

from console.audit.models import AuditEntry
from console.lakequery.execution import lake_query_run
from console.lakequery.models import LakeQuery
from tests.browse.conftest import api, login
from tests.decisions.desk import make_desk
from tests.lakequery.why_lake import failing_orders

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture
def desk(transactional_db, lake_root, spark, personas, settings):
    return make_desk(spark, personas, settings)


@pytest.fixture
def group(desk):
    return failing_orders(desk)


def _asked(personas, group, spark):
    operator = login(personas["operator"])
    answer = operator.post(reverse("group-why", args=[group.fingerprint]))
    assert answer.status_code == 302
    query = LakeQuery.objects.get(kind=LakeQuery.WHY)
    assert answer.url == reverse("lake-query-detail", args=[query.id])
    return lake_query_run(query_id=query.id, spark=spark)


def test_the_two_causes_are_the_top_two_findings_with_their_counts(desk, group, personas, spark):
    query = _asked(personas, group, spark)
    assert query.status == LakeQuery.DONE, query.error
    analysis = query.analysis
    assert (analysis["failures_in_group"], analysis["failures_read"]) == (100, 100)
    assert (analysis["deliveries_in_period"], analysis["deliveries_read"]) == (200, 200)
    assert analysis["sampled"] is False
    first, second = analysis["findings"][:2]
    assert (first["kind"], first["name"], first["absent"]) == ("field", "currency", True)
    assert (first["failures"], first["failures_total"], first["deliveries"]) == (60, 100, 0)
    assert (second["kind"], second["name"], second["value"]) == (
        "header_value",
        "x-region",
        "eu-west-3",
    )
    assert (second["failures"], second["deliveries"], second["deliveries_total"]) == (40, 0, 200)
    assert query.scanned == 300
    finished = AuditEntry.objects.get(action="lake_query.finished", target_id=str(query.id))
    assert finished.details["scanned"] == 300
    assert "analysis" not in finished.details
    created = AuditEntry.objects.get(action="lake_query.created", target_id=str(query.id))
    assert (created.actor, created.details["kind"], created.details["group"]) == (
        "operator",
        "why",
        group.fingerprint,
    )

    # The group's page says both, in words, the field and header names as inert text.
    page = login(personas["operator"]).get(reverse("group-detail", args=[group.fingerprint]))
    text = page.content.decode()
    assert (
        "the field <code>currency</code> is absent in 60 % of these failures (60 of 100) and "
        "0 % of deliveries (0 of 200)" in text
    )
    assert (
        "the header <code>x-region</code> is <code>eu-west-3</code> in 40 % of these failures "
        "(40 of 100)" in text
    )
    # And the API, on the query.
    body = api(personas["operator"]).get(reverse("api-lake-query-detail", args=[query.id])).json()
    assert body["kind"] == "why"
    assert body["analysis"]["findings"][0]["name"] == "currency"


def test_a_sample_reads_at_most_its_size_and_says_so(desk, group, personas, spark, settings):
    settings.WHY_FAIL_SAMPLE = 100
    query = _asked(personas, group, spark)
    analysis = query.analysis
    assert analysis["deliveries_in_period"] == 200
    assert analysis["deliveries_read"] <= 100
    assert analysis["sampled"] is True
    page = login(personas["operator"]).get(reverse("lake-query-detail", args=[query.id]))
    assert "drawn at random (WHY_FAIL_SAMPLE)" in page.content.decode()


def test_who_may_ask(desk, group, personas):
    for name in ("viewer", "auditor", "outsider", "application"):
        page = login(personas[name]).post(reverse("group-why", args=[group.fingerprint]))
        assert page.status_code in (302, 403), name
        refused = api(personas[name]).post(reverse("api-group-why", args=[group.fingerprint]))
        assert refused.status_code == 403, name
    assert not LakeQuery.objects.exists()
    unknown = api(personas["operator"]).post(reverse("api-group-why", args=["nope"]))
    assert unknown.status_code == 404
    queued = api(personas["operator"]).post(reverse("api-group-why", args=[group.fingerprint]))
    assert queued.status_code == 202
    assert queued.json()["kind"] == "why"
