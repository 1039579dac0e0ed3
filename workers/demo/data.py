"""The demo data set: a few thousand messages of a small shop, written as a JSON Lines file that
goes through the real ingest path.

The set is deterministic: the same seed gives the same ids and the same bodies, so ingesting it
again is a no-op (ingest deduplicates by id and body). Every order starts a conversation that its
payment, shipment and invoice messages share, so ending one with an error (R13) ends its siblings.

Each line is one message in the format of `manage.py ingest`: id, queue, body, content_type,
headers, conversation_id, sender; a binary body is sent as base64 with "body_encoding": "base64".
Ingest stamps the enqueue time.
"""

import base64
import json
import random
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from workers.demo import handlers as H

QUEUES_FILE = Path(__file__).with_name("queues.yaml")
ID_PREFIX = "demo-"
DEFAULT_SEED = 20260101
DEFAULT_ORDERS = 1600
QUEUES = ("orders", "shipping", "invoices", "payments")
# `seed_demo --background` (make run) sends the set a chunk at a time, as a shop would over a
# minute or so: the dashboard shows the demo filling. The first chunk is small orders only,
# among them some the handler refuses for good (R6), so that the first quarantined messages come
# at once; the pause after it leaves the spark worker to its first refresh (the JVM starting,
# then the first counts the dashboard shows), before the other chunks' delivery runs and the
# compactions their commits bring (demo_fill_records).
FILL_FIRST = 100
FILL_FIRST_PAUSE_SECONDS = 20
FILL_CHUNK = 300
FILL_EVERY_SECONDS = 4

# Fixed so that bodies do not change from one run to the next (dedup is by id and body).
_BUSINESS_DAY = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)

_FIRST = (
    "Ana",
    "Bram",
    "Chloé",
    "Dmitri",
    "Eva",
    "Farid",
    "Greta",
    "Hiro",
    "Inès",
    "Jonas",
    "Kofi",
)
_LAST = ("Almeida", "Bakker", "Chen", "Dubois", "Eriksson", "Fischer", "García", "Hansen", "Ito")
_CITIES = (
    ("Amsterdam", "NL", "1012 AB"),
    ("Lyon", "FR", "69002"),
    ("Berlin", "DE", "10115"),
    ("Porto", "PT", "4050-001"),
    ("Malmö", "SE", "211 20"),
    ("Leeds", "GB", "LS1 4DY"),
)
_CATALOG = {
    "SKU-1001": ("Espresso cups, set of 4", Decimal("24.90")),
    "SKU-1002": ("Pour-over kettle", Decimal("54.00")),
    "SKU-1003": ("Burr grinder", Decimal("129.00")),
    "SKU-2040": ("Linen apron", Decimal("32.50")),
    "SKU-2041": ("Oak serving board", Decimal("45.00")),
    "SKU-3107": ("Cast-iron pan 26 cm", Decimal("69.90")),
    "SKU-3350": ("Chef's knife 20 cm", Decimal("89.00")),
    "SKU-5120": ("Tea canister", Decimal("14.50")),
    "SKU-5121": ("Loose-leaf sencha 100 g", Decimal("11.20")),
    "SKU-4401": ("Stand mixer (backorder)", Decimal("399.00")),
    "SKU-4402": ("Mixer dough hook", Decimal("29.00")),
    "SKU-7730": ("Copper saucepan", Decimal("159.00")),
    H.CRASH_SKU: ("Gift card (legacy)", Decimal("50.00")),
}
_IN_STOCK = tuple(sku for sku in _CATALOG if sku not in H.OUT_OF_STOCK_SKUS | {H.CRASH_SKU})
_SOURCES = (
    ("storefront", "storefront-eu@shop.example"),
    ("mobile-app", "mobile-orders@shop.example"),
    ("partner-api", "partner-acme@integrations.shop.example"),
    ("pos", "pos-amsterdam-03@stores.shop.example"),
)
_CURRENCY_BY_COUNTRY = {
    "NL": "EUR",
    "FR": "EUR",
    "DE": "EUR",
    "PT": "EUR",
    "SE": "SEK",
    "GB": "GBP",
}
_BAD_CURRENCIES = ("XBT", "EURO", "usd", "ZZZ")
_GOOD_CARRIERS = ("DHL", "UPS", "FEDEX", "POSTNL", "COLISSIMO")


def _json_bytes(data):
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()


def _message(rng, *, queue, number, body, content_type, conversation, source, schema):
    source_name, sender = source
    return {
        "message_id": f"{ID_PREFIX}{queue}-{number:06d}",
        "queue": queue,
        "body": body,
        "content_type": content_type,
        "headers": {
            "source": source_name,
            "schema": schema,
            "trace_id": f"{rng.getrandbits(64):016x}",
        },
        "conversation_id": conversation,
        "sender": sender,
    }


def _order(rng, number, created):
    city, country, postcode = rng.choice(_CITIES)
    first, last = rng.choice(_FIRST), rng.choice(_LAST)
    lines = []
    for sku in rng.sample(_IN_STOCK, rng.randint(1, 4)):
        lines.append({"sku": sku, "name": _CATALOG[sku][0], "qty": rng.randint(1, 3)})
    return {
        "order_id": f"ORD-{100000 + number}",
        "created_at": created.isoformat().replace("+00:00", "Z"),
        "customer": {
            "id": f"C-{rng.randint(1000, 9999)}",
            "name": f"{first} {last}",
            "email": f"{first.lower()}.{last.lower()}@mail.example",
        },
        "shipping_address": {
            "street": f"{rng.randint(1, 220)} {rng.choice(('Canal', 'Market', 'Station'))} Street",
            "city": city,
            "postcode": postcode,
            "country": country,
        },
        "items": lines,
        "currency": _CURRENCY_BY_COUNTRY[country],
    }


def _total(order):
    return sum(_CATALOG[line["sku"]][1] * line["qty"] for line in order["items"])


def _shipment_xml(shipment):
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<shipment id="{shipment["shipment_id"]}">'
        f"<order_id>{shipment['order_id']}</order_id>"
        f"<carrier>{shipment['carrier']}</carrier>"
        f"<service>{shipment['service']}</service>"
        f"<parcels>{shipment['parcels']}</parcels>"
        f"<weight_kg>{shipment['weight_kg']}</weight_kg>"
        "</shipment>"
    ).encode()


def _pdf(rng, invoice_id):
    # A scanned supplier invoice: a PDF header, then bytes that are not text.
    noise = bytes(rng.getrandbits(8) for _ in range(rng.randint(600, 2400)))
    return (
        b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Title ("
        + invoice_id.encode()
        + b") >>\n"
        + noise
    )


def demo_messages(*, seed=DEFAULT_SEED, orders=DEFAULT_ORDERS):
    """Yield the demo set as message dicts (body as bytes), deterministic for a seed."""
    rng = random.Random(seed)
    counters = dict.fromkeys(QUEUES, 0)

    def emit(queue, body, content_type, conversation, source, schema):
        counters[queue] += 1
        return _message(
            rng,
            queue=queue,
            number=counters[queue],
            body=body,
            content_type=content_type,
            conversation=conversation,
            source=source,
            schema=schema,
        )

    crash = None
    for n in range(orders):
        created = _BUSINESS_DAY + timedelta(seconds=n * 27)
        order = _order(rng, n, created)
        conversation = f"conv-{order['order_id']}"
        source = rng.choice(_SOURCES)

        roll = rng.random()
        if n == orders // 2:
            # The pathological order (R7, R8, R10).
            order["items"].append({"sku": H.CRASH_SKU, "name": _CATALOG[H.CRASH_SKU][0], "qty": 1})
            body = _json_bytes(order)
            crash = (body, conversation, source)
        elif roll < 0.03:
            del order[rng.choice(("customer", "items", "order_id"))]  # R6: never valid
            body = _json_bytes(order)
        elif roll < 0.06:
            sku = rng.choice(sorted(H.OUT_OF_STOCK_SKUS))  # R3: the inventory never answers
            order["items"].append({"sku": sku, "name": _CATALOG[sku][0], "qty": 1})
            body = _json_bytes(order)
        elif roll < 0.07:
            # A partner sent a gzip frame instead of JSON: permanent, and the body is binary.
            body = b"\x1f\x8b\x08\x00" + bytes(rng.getrandbits(8) for _ in range(300))
            yield emit("orders", body, "application/octet-stream", conversation, source, "order/v3")
            continue
        else:
            body = _json_bytes(order)
        yield emit("orders", body, "application/json", conversation, source, "order/v3")

        if rng.random() < 0.30:
            currency = order.get("currency", "EUR")
            if rng.random() < 0.05:
                currency = rng.choice(_BAD_CURRENCIES)  # R6 return_to_sender
            payment = {
                "payment_id": f"PAY-{500000 + n}",
                "order_id": order.get("order_id", f"ORD-{100000 + n}"),
                "amount": str(_total(order)) if "items" in order else "0.00",
                "currency": currency,
                "method": rng.choice(("card", "ideal", "paypal", "sepa_debit")),
                "captured_at": (created + timedelta(seconds=40)).isoformat(),
            }
            body = _json_bytes(payment)
            yield emit("payments", body, "application/json", conversation, source, "payment/v2")

        if rng.random() < 0.50:
            roll = rng.random()
            if roll < 0.12:
                carrier = rng.choice(sorted(H.CARRIERS_DOWN))  # R5 backoff, then R4 queue:
            elif roll < 0.13:
                carrier = "PIGEON-POST"  # R6: no such carrier
            else:
                carrier = rng.choice(_GOOD_CARRIERS)
            shipment = {
                "shipment_id": f"SHP-{700000 + n}",
                "order_id": order.get("order_id", f"ORD-{100000 + n}"),
                "carrier": carrier,
                "service": rng.choice(("standard", "express", "parcel-locker")),
                "parcels": rng.randint(1, 3),
                "weight_kg": round(rng.uniform(0.3, 18.0), 2),
            }
            if rng.random() < 0.2:
                body, content_type = _shipment_xml(shipment), "application/xml"
            else:
                body, content_type = _json_bytes(shipment), "application/json"
            yield emit("shipping", body, content_type, conversation, source, "shipment/v1")

        if rng.random() < 0.19:
            invoice_id = f"INV-2026-{n + 1:05d}"
            if rng.random() < 0.2:
                body, content_type = _pdf(rng, invoice_id), "application/pdf"
            else:
                invoice = {
                    "invoice_id": invoice_id,
                    "order_id": order.get("order_id"),
                    "lines": order.get("items", []),
                    "total": str(_total(order)) if "items" in order else "0.00",
                    "currency": order.get("currency", "EUR"),
                    "due_date": (created + timedelta(days=30)).date().isoformat(),
                }
                body, content_type = _json_bytes(invoice), "application/json"
            yield emit("invoices", body, content_type, conversation, source, "invoice/v1")

    if crash is not None:
        # The same pathological order resent by a retrying client under a new id: the poison
        # list catches it by body hash (R9, orders' poison_match id_or_body).
        body, conversation, source = crash
        yield emit("orders", body, "application/json", conversation, source, "order/v3")


def _record(message):
    record = {"id": message["message_id"]}
    record.update((k, v) for k, v in message.items() if k not in ("message_id", "body"))
    try:
        record["body"] = message["body"].decode("utf-8")
    except UnicodeDecodeError:
        record["body"] = base64.b64encode(message["body"]).decode("ascii")
        record["body_encoding"] = "base64"
    return record


def _line(message):
    return json.dumps(_record(message), ensure_ascii=False, separators=(",", ":"))


def demo_records(*, seed=DEFAULT_SEED, orders=DEFAULT_ORDERS):
    """The demo set as ingest records (the lines of `demo_file_write`, read), in order."""
    for message in demo_messages(seed=seed, orders=orders):
        yield _record(message)


def demo_fill_records(*, seed=DEFAULT_SEED, orders=DEFAULT_ORDERS):
    """The demo set in the order `seed_demo --background` sends it: its first FILL_FIRST orders,
    then the rest as `demo_records` has them. One queue first is one delivery run and a few lake
    commits, too few for a compaction to come and share the spark worker with the first refresh.
    Every order still comes before its payment, shipment and invoice."""
    records = list(demo_records(seed=seed, orders=orders))
    first = [r for r in records if r["queue"] == "orders"][:FILL_FIRST]
    taken = {r["id"] for r in first}
    return first + [r for r in records if r["id"] not in taken]


def demo_file_write(path, *, seed=DEFAULT_SEED, orders=DEFAULT_ORDERS):
    """Write the demo set to `path` as JSON Lines. Returns {queue: count}."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    counts = dict.fromkeys(QUEUES, 0)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as out:
        for message in demo_messages(seed=seed, orders=orders):
            counts[message["queue"]] += 1
            out.write(_line(message) + "\n")
    # Renamed into place so that an inbox scanner never reads half a file.
    tmp.replace(path)
    return counts


def demo_message_ids(*, seed=DEFAULT_SEED, orders=DEFAULT_ORDERS):
    """The ids of the demo set, in order (cheap: a few thousand)."""
    return [m["message_id"] for m in demo_messages(seed=seed, orders=orders)]
