"""R1 with a real `manage.py deliver` process: from the moment the run claims a message until its
outcome is recorded, the API, the message's page and the browser show it DLNG, with the run that
holds it and since when; never TBDL while its handler runs."""

import pytest
from django.test import Client
from rest_framework.test import APIClient

from console.delivery.models import DeliveryRun
from console.ingest.services import messages_ingest
from console.queues.models import Queue
from console.readmodels.execution import read_models_refresh
from console.readmodels.models import MessageIndex
from tests.processes.conftest import wait_for
from workers.engine import states as S

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _state(api, message_id):
    response = api.get(f"/api/v1/messages/{message_id}")
    assert response.status_code == 200
    return response.json()


def test_a_message_whose_handler_runs_is_dlng_everywhere_with_its_run_and_since_when(
    processes, personas, tmp_path, spark, settings
):
    settings.REFRESH_ON_COMMIT = False
    Queue.objects.create(name="orders", handler="tests.handlers_for_tests.held")
    flag = tmp_path / "hold"
    flag.touch()
    result = messages_ingest(
        records=[
            {"id": "order-1", "queue": "orders", "body": "{}", "headers": {"hold-while": str(flag)}}
        ],
        source="test",
    )
    assert result.accepted == 1
    read_models_refresh(spark=spark)
    api = APIClient()
    api.force_authenticate(personas["viewer"])
    assert _state(api, "order-1")["state"] == S.TBDL

    deliver = processes.start(
        "manage.py", "deliver", log=tmp_path / "deliver.log", env={"REFRESH_ON_COMMIT": "false"}
    )
    state = wait_for(
        lambda: (s := _state(api, "order-1"))["state"] != S.TBDL and s,
        timeout=180,
        what="the run to claim the message",
    )
    run = DeliveryRun.objects.get(status=DeliveryRun.RUNNING)
    # The handler is running (it waits for the flag): the message is DLNG, held by the run.
    assert state["state"] == S.DLNG
    assert state["in_flight"]["run"] == str(run.id)
    assert state["in_flight"]["since"] is not None
    assert state["history"][-1]["to_state"] == S.DLNG

    page = Client()
    page.force_login(personas["viewer"])
    html = page.get("/messages/order-1/").content.decode()
    assert 'class="pill state-DLNG"' in html
    assert f"being delivered by run {run.id} since" in html

    # The read models fold the claim like any other commit: the browser says DLNG too.
    read_models_refresh(spark=spark)
    assert MessageIndex.objects.values_list("state", "run_id").get(message_id="order-1") == (
        S.DLNG,
        str(run.id),
    )
    listing = page.get("/messages/", {"state": S.DLNG}).content.decode()
    assert "order-1" in listing

    flag.unlink()
    assert deliver.wait(timeout=180) == 0
    state = _state(api, "order-1")
    assert (state["state"], state["in_flight"]) == (S.DLVD, None)
    read_models_refresh(spark=spark)
    assert MessageIndex.objects.filter(message_id="order-1").first() is None  # delivered
