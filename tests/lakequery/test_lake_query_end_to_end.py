"""A lake query on messages ingested and delivered for real (the delivery engine on the real
Spark session): it finds delivered messages the index leaves out, and its result as a scope
holds only the ones quarantined now."""

import pytest

from console.decisions.scope import frozen_ids, scope_freeze
from console.lakequery.execution import lake_query_run
from console.lakequery.models import LakeQuery
from console.lakequery.selectors import lake_query_result_ids
from console.lakequery.services import lake_query_create
from console.readmodels.execution import read_models_refresh
from console.readmodels.models import MessageIndex
from tests.delivery.conftest import Engine

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture
def engine(transactional_db, lake_root, spark, settings):
    settings.REFRESH_ON_COMMIT = False
    return Engine(spark)


def test_a_query_finds_every_message_and_scopes_only_the_quarantined(engine, personas):
    engine.queue("orders")
    engine.ingest(
        "orders",
        {
            "ok-1": "ok",  # delivered at once: never in the index
            "ok-2": "ok",
            "bad-1": "permanent",  # quarantined
            "bad-2": "permanent",
        },
        sender="shop@example.test",
    )
    engine.ingest("orders", {"other": "permanent"}, sender="else@example.test")
    engine.deliver()
    read_models_refresh(spark=engine.spark)
    assert set(MessageIndex.objects.values_list("message_id", flat=True)) == {
        "bad-1",
        "bad-2",
        "other",
    }

    query = lake_query_create(
        actor=personas["operator"],
        criteria={"sender": "shop@example.test", "body_regex": "^(ok|perm)"},
    )
    ran = lake_query_run(query_id=query.id, spark=engine.spark)

    assert ran.status == LakeQuery.DONE, ran.error
    assert (ran.scanned, ran.matched) == (5, 4)
    assert [i for ids in lake_query_result_ids(query=ran) for i in ids] == [
        "bad-1",
        "bad-2",
        "ok-1",
        "ok-2",
    ]
    frozen = scope_freeze({"kind": "lake_query", "query": ran.id}, actor=personas["operator"])
    assert [i for ids in frozen_ids(frozen.ids_path) for i in ids] == ["bad-1", "bad-2"]
