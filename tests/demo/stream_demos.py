"""The tests of the demos that feed a stream (NATS, Redis) written once: with its broker, the demo
feeds a stream once and loads the source that drains it; `make run` sets the address the demo
says it reads.

A stream demo takes them by subclassing `StreamDemoTests` in its test module, which also names a
`names` fixture (the demo's stream of the test's own)."""

from pathlib import Path

import pytest
from django.conf import settings

from tests.demo.broker_demos import BrokerDemoTests
from tests.demo.sources import demo_seed, demo_source


class StreamDemoTests(BrokerDemoTests):
    """Besides what `BrokerDemoTests` asks, a subclass names `kind` (the source's), `dead` and
    `redrive` (the queues it loads), `address` (where the demo says the broker is) and
    `make_run_url`, and gives:

    - `drain(broker, ack)`: the records the sources process would take now;
    - `first_fed_line(broker)`: what the demo says when it feeds the stream;
    - `records_checked(broker, records)`: what else the drained records must show.
    """

    kind = dead = redrive = address = make_run_url = None

    @pytest.fixture
    def broker(self, names):
        return names

    def drain(self, broker, *, ack):
        raise NotImplementedError

    def drain_all(self, broker):
        return len(self.drain(broker, ack=True))

    def first_fed_line(self, broker):
        raise NotImplementedError

    def fed_as_the_source_asks(self, broker, source):
        """What else the fed stream must show before it is drained (nothing by default)."""

    def records_checked(self, broker, records):
        raise NotImplementedError

    def test_with_its_broker_the_demo_feeds_a_stream_once_and_its_source_drains_it(self, broker):
        output = demo_seed()

        assert self.first_fed_line(broker) in output
        source = demo_source(
            self.source, dead=self.dead, redrive=self.redrive, url_env=self.url_env
        )
        assert (source.kind, source.broker_queue) == (self.kind, broker.stream)
        assert self.waiting(broker) == self.count
        self.fed_as_the_source_asks(broker, source)
        records = self.drain(broker, ack=False)
        assert len(records) == self.count
        assert all(r["queue"] == self.dead for r in records)
        self.records_checked(broker, records)

        again = demo_seed()

        assert f"{self.title} demo: already fed at {self.address}." in again
        assert self.waiting(broker) == self.count

    def test_make_run_sets_the_url_the_demo_says_it_does(self):
        makefile = (Path(settings.BASE_DIR) / "Makefile").read_text()

        assert f"run: export {self.url_env} ?= {self.make_run_url}\n" in makefile
