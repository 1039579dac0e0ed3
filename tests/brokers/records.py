"""A broker source's ingest record as ingest stores it: the producer's headers, names of ours set
aside, and the source's own records added (console.ingest.services, R18)."""

from workers.engine.own_headers import headers_stored


def as_stored(record):
    record = dict(record)
    own = record.pop("own_headers", None)
    record["headers"] = headers_stored(record["headers"], own)
    return record
