"""Demo handlers: a small shop whose back-end services fail in every way SEMANTICS.md describes.

Each queue of `workers/demo/queues.yaml` shows some of the rules on realistic data:

- orders: a malformed order is a permanent failure (R6, quarantined at once); an order for an
  item the inventory service cannot answer for fails transiently until max_failed_deliveries (R3)
  sends it to quarantine (R4); the pathological order CRASH-0001 kills its process (R7, R8, R10)
  and, sent again under another id, is caught by its body hash (R9, poison_match id_or_body).
- shipping: the API of some carriers is down, so their shipments walk PMDF's backoff table (R5) and
  then move to the shipping.exceptions queue (R4 queue:<name>), whose handler books them by hand.
- invoices: the ledger service is down; every attempt fails, and after 5 in a row the queue is
  disabled (R11) until an administrator re-enables it.
- payments: an unknown currency can never succeed; the queue returns such payments to their sender
  (R6 return_to_sender, R13's error notification).

Handlers follow the contract of workers.engine.handlers: return on success, raise PermanentFailure
when the message can never succeed, raise anything else for a transient failure.
"""

import json
import logging
import os
import xml.etree.ElementTree as ET

from workers.engine.handlers import PermanentFailure

log = logging.getLogger(__name__)

# The pathological order: whatever processes it dies (a native crash in a real system).
CRASH_SKU = "CRASH-0001"
CRASH_EXIT_CODE = 70  # EX_SOFTWARE

# Items the inventory service cannot answer for: every attempt times out.
OUT_OF_STOCK_SKUS = frozenset({"SKU-4401", "SKU-4402", "SKU-7730"})

CARRIERS = ("DHL", "UPS", "FEDEX", "POSTNL", "COLISSIMO", "NORTHWIND", "BLUEJAY")
# Carriers whose booking API is down for the whole demo: their shipments never get through.
CARRIERS_DOWN = frozenset({"NORTHWIND", "BLUEJAY"})

CURRENCIES = frozenset({"EUR", "USD", "GBP", "CHF", "SEK", "NOK", "DKK", "PLN", "CAD", "JPY"})

ORDER_FIELDS = ("order_id", "customer", "items")
SHIPMENT_FIELDS = ("shipment_id", "order_id", "carrier")
PAYMENT_FIELDS = ("payment_id", "order_id", "amount", "currency")


class InventoryUnavailable(Exception):
    """The inventory service did not answer: transient, worth retrying."""


class CarrierApiUnavailable(Exception):
    """A carrier's booking API did not answer: transient, worth retrying."""


class LedgerUnavailable(Exception):
    """The ledger service is down: transient, worth retrying."""


def _json_object(message):
    try:
        data = json.loads(message.body)
    except (UnicodeDecodeError, ValueError) as exc:
        raise PermanentFailure(f"body is not JSON ({message.content_type}): {exc}") from None
    if not isinstance(data, dict):
        raise PermanentFailure(f"body is not a JSON object but {type(data).__name__}")
    return data


def _require(data, fields):
    for name in fields:
        if data.get(name) in (None, "", [], {}):
            raise PermanentFailure(f"missing field: {name}")


def noop(message):
    """Accept every message without looking at it (benchmarks measure the engine, not a handler)."""


def orders(message):
    order = _json_object(message)
    _require(order, ORDER_FIELDS)
    items = order["items"]
    if not isinstance(items, list) or not all(isinstance(i, dict) and i.get("sku") for i in items):
        raise PermanentFailure("items: must be a list of lines, each with a sku")
    skus = {item["sku"] for item in items}
    if CRASH_SKU in skus:
        # Stands for a segfault in a native pricing library: the process dies, no exception.
        os._exit(CRASH_EXIT_CODE)
    if skus & OUT_OF_STOCK_SKUS:
        raise InventoryUnavailable("inventory service unavailable")
    log.debug("order %s accepted (%d lines)", order["order_id"], len(items))


def _shipment(message):
    if "xml" in (message.content_type or ""):
        try:
            # Bodies come from our own demo generator; expat does not fetch external entities.
            root = ET.fromstring(message.body)  # noqa: S314
        except ET.ParseError as exc:
            raise PermanentFailure(f"body is not well-formed XML: {exc}") from None
        shipment = {"shipment_id": root.get("id")}
        for name in ("order_id", "carrier", "service"):
            node = root.find(name)
            shipment[name] = node.text.strip() if node is not None and node.text else None
        return shipment
    return _json_object(message)


def shipping(message):
    shipment = _shipment(message)
    _require(shipment, SHIPMENT_FIELDS)
    carrier = str(shipment["carrier"]).upper()
    if carrier not in CARRIERS:
        raise PermanentFailure(f"unknown carrier: {shipment['carrier']}")
    if carrier in CARRIERS_DOWN:
        raise CarrierApiUnavailable(f"carrier API unavailable: {carrier}")
    log.debug("shipment %s booked with %s", shipment["shipment_id"], carrier)


def shipping_exceptions(message):
    """The backout queue of shipping: a shipment no carrier API took is booked by hand, so it is
    accepted here as a ticket for the logistics desk."""
    log.info(
        "shipment %s moved to manual booking after %d failed attempts",
        message.id,
        message.delivery_count,
        extra={"message_id": message.id},
    )


def invoices(message):
    # The ledger is down for the whole demo: every attempt fails, whatever the invoice says.
    raise LedgerUnavailable("ledger service unavailable")


def payments(message):
    payment = _json_object(message)
    _require(payment, PAYMENT_FIELDS)
    currency = payment["currency"]
    if currency not in CURRENCIES:
        raise PermanentFailure(f"unknown currency: {currency}")
    log.debug("payment %s of %s %s captured", payment["payment_id"], payment["amount"], currency)
