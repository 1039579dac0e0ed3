"""The demo handlers, called directly: each outcome a rule of SEMANTICS.md needs."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from workers.demo import handlers as H
from workers.engine.handlers import Message, PermanentFailure

ROOT = Path(__file__).resolve().parents[2]

ORDER = {
    "order_id": "ORD-100042",
    "customer": {"id": "C-1042", "name": "Eva Hansen"},
    "items": [{"sku": "SKU-1002", "qty": 1}, {"sku": "SKU-5120", "qty": 2}],
    "currency": "EUR",
}


def _message(queue, body, content_type="application/json"):
    if not isinstance(body, bytes):
        body = json.dumps(body).encode()
    return Message(id=f"{queue}-1", queue=queue, body=body, content_type=content_type)


def test_noop_accepts_anything():
    assert H.noop(_message("bench", b"\x00\xff")) is None


def test_a_complete_order_succeeds():
    assert H.orders(_message("orders", ORDER)) is None


@pytest.mark.parametrize("field", ["order_id", "customer", "items"])
def test_an_order_missing_a_required_field_fails_permanently(field):
    order = {k: v for k, v in ORDER.items() if k != field}

    with pytest.raises(PermanentFailure, match=f"^missing field: {field}$"):
        H.orders(_message("orders", order))


def test_an_order_that_is_not_json_fails_permanently():
    with pytest.raises(PermanentFailure, match="body is not JSON"):
        H.orders(_message("orders", b"\x1f\x8b\x08\x00\xde\xad", "application/octet-stream"))


def test_an_order_that_is_a_json_list_fails_permanently():
    with pytest.raises(PermanentFailure, match="not a JSON object"):
        H.orders(_message("orders", [ORDER]))


def test_an_order_line_without_a_sku_fails_permanently():
    with pytest.raises(PermanentFailure, match="each with a sku"):
        H.orders(_message("orders", {**ORDER, "items": [{"qty": 1}]}))


def test_an_order_for_an_item_the_inventory_cannot_answer_for_fails_transiently():
    order = {**ORDER, "items": [*ORDER["items"], {"sku": "SKU-4401", "qty": 1}]}

    with pytest.raises(H.InventoryUnavailable, match="inventory service unavailable") as caught:
        H.orders(_message("orders", order))

    assert not isinstance(caught.value, PermanentFailure)


def test_the_pathological_order_kills_its_process_with_code_70():
    order = {**ORDER, "items": [{"sku": "CRASH-0001", "qty": 1}]}
    # Never in the pytest process: os._exit would end the test run.
    script = (
        "import sys\n"
        "from workers.demo.handlers import orders\n"
        "from workers.engine.handlers import Message\n"
        "orders(Message(id='o-1', queue='orders', body=sys.stdin.buffer.read(),"
        " content_type='application/json'))\n"
        "print('survived')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(order).encode(),
        capture_output=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )

    assert done.returncode == 70
    assert b"survived" not in done.stdout
    assert b"Traceback" not in done.stderr


def test_a_shipment_with_a_working_carrier_is_booked():
    shipment = {"shipment_id": "SHP-1", "order_id": "ORD-1", "carrier": "DHL"}

    assert H.shipping(_message("shipping", shipment)) is None


def test_a_shipment_in_xml_is_booked():
    body = (
        b'<?xml version="1.0" encoding="UTF-8"?><shipment id="SHP-2">'
        b"<order_id>ORD-2</order_id><carrier>POSTNL</carrier><service>standard</service>"
        b"</shipment>"
    )

    assert H.shipping(_message("shipping", body, "application/xml")) is None


@pytest.mark.parametrize("carrier", ["NORTHWIND", "BLUEJAY"])
def test_a_shipment_for_a_carrier_whose_api_is_down_fails_transiently(carrier):
    shipment = {"shipment_id": "SHP-3", "order_id": "ORD-3", "carrier": carrier}

    with pytest.raises(H.CarrierApiUnavailable, match=f"carrier API unavailable: {carrier}"):
        H.shipping(_message("shipping", shipment))


def test_an_xml_shipment_for_a_carrier_whose_api_is_down_fails_transiently():
    body = b"<shipment id='SHP-4'><order_id>ORD-4</order_id><carrier>BLUEJAY</carrier></shipment>"

    with pytest.raises(H.CarrierApiUnavailable):
        H.shipping(_message("shipping", body, "application/xml"))


def test_a_shipment_for_an_unknown_carrier_fails_permanently():
    shipment = {"shipment_id": "SHP-5", "order_id": "ORD-5", "carrier": "PIGEON-POST"}

    with pytest.raises(PermanentFailure, match="unknown carrier: PIGEON-POST"):
        H.shipping(_message("shipping", shipment))


def test_a_shipment_that_is_not_well_formed_xml_fails_permanently():
    with pytest.raises(PermanentFailure, match="not well-formed XML"):
        H.shipping(_message("shipping", b"<shipment><carrier>DHL</shipment>", "application/xml"))


def test_an_xml_shipment_without_a_carrier_fails_permanently():
    body = b"<shipment id='SHP-6'><order_id>ORD-6</order_id></shipment>"

    with pytest.raises(PermanentFailure, match="missing field: carrier"):
        H.shipping(_message("shipping", body, "application/xml"))


def test_the_backout_queue_accepts_every_shipment():
    body = b"<shipment id='SHP-7'><carrier>BLUEJAY</carrier></shipment>"

    assert H.shipping_exceptions(_message("shipping.exceptions", body, "application/xml")) is None


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b'{"invoice_id": "INV-2026-00001", "total": "54.00"}', "application/json"),
        (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "application/pdf"),
    ],
)
def test_every_invoice_fails_transiently_while_the_ledger_is_down(body, content_type):
    with pytest.raises(H.LedgerUnavailable, match="ledger service unavailable"):
        H.invoices(_message("invoices", body, content_type))


def test_a_payment_in_a_known_currency_is_captured():
    payment = {"payment_id": "PAY-1", "order_id": "ORD-1", "amount": "54.00", "currency": "EUR"}

    assert H.payments(_message("payments", payment)) is None


def test_a_payment_in_an_unknown_currency_fails_permanently():
    payment = {"payment_id": "PAY-2", "order_id": "ORD-2", "amount": "54.00", "currency": "XBT"}

    with pytest.raises(PermanentFailure, match=r"^unknown currency: XBT$"):
        H.payments(_message("payments", payment))


def test_a_payment_without_an_amount_fails_permanently():
    payment = {"payment_id": "PAY-3", "order_id": "ORD-3", "currency": "EUR"}

    with pytest.raises(PermanentFailure, match="missing field: amount"):
        H.payments(_message("payments", payment))
