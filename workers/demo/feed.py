"""What the demo's broker feeders (workers/demo/rabbitmq.py, nats.py, redis_streams.py) share:
what a feed did, why a broker's demo is off, and their queue files with names of a test's own."""

from dataclasses import dataclass

import yaml


@dataclass(frozen=True)
class Feed:
    """What a feeder's `demo_dead_letters` did: dead letters made now, and dead letters that
    were already waiting on the broker (fed before, not drained yet)."""

    fed: int
    waiting: int


class DemoOff(Exception):
    """The broker does not answer, or cannot hold the demo. The text says why, for the one line
    `seed_demo` prints, and never holds the URL's password."""


def queues_document(path, **source):
    """The queue file at `path` (one source), its source's fields updated with `source`: the
    demo's broker names, which tests replace with names of their own."""
    with open(path, encoding="utf-8") as file:
        document = yaml.safe_load(file)
    (entry,) = document["sources"]
    options = {**(entry.get("options") or {}), **source.pop("options", {})}
    entry.update(source)
    if options:
        entry["options"] = options
    return document
