"""The broker demos' tests written once: a database started over gets the demo fed again once
its broker was drained, and is left the dead letters still waiting there otherwise; without its
broker, the demo goes on and says how to get it.

A broker's demo takes them by subclassing `BrokerDemoTests` in its test module (see its
docstring for what a subclass names)."""

import pytest

from console.queues.models import BrokerSource
from tests.demo.sources import demo_seed, start_over, went_on_without_its_broker


class BrokerDemoTests:
    """A subclass names `title` (as the demo's lines start), `count` (how many the demo feeds),
    `source` (the source it loads), `url_env` and `unreachable_url` (an address nothing answers
    at), and gives:

    - a `broker` fixture: the place of the test's own the demo feeds;
    - `waiting(broker)`: how many dead letters wait there;
    - `drain_all(broker)`: takes them all, as the sources process of an earlier `make run` did,
      and says how many;
    - `fed_line(broker)`, `still_waiting_line(broker)`, `off_line`: what the demo says when it
      feeds its broker, when it finds the dead letters it fed earlier, and without its broker.
    """

    title = count = source = url_env = unreachable_url = off_line = None

    def waiting(self, broker):
        raise NotImplementedError

    def drain_all(self, broker):
        raise NotImplementedError

    def fed_line(self, broker):
        raise NotImplementedError

    def still_waiting_line(self, broker):
        raise NotImplementedError

    def test_without_its_broker_the_demo_says_how_to_get_its_queue(self, monkeypatch):
        # A port nothing listens on: the embedded default must not need a server.
        monkeypatch.setenv(self.url_env, self.unreachable_url)

        output = demo_seed()

        assert self.off_line in output
        went_on_without_its_broker(output)

    @pytest.mark.django_db(transaction=True)
    def test_a_new_database_feeds_the_demo_again_once_it_was_drained(self, broker):
        demo_seed()
        assert self.drain_all(broker) == self.count
        assert self.waiting(broker) == 0
        start_over()

        output = demo_seed()

        assert self.fed_line(broker) in output
        assert self.waiting(broker) == self.count
        assert f"{self.title} demo: already fed" in demo_seed()  # this database has it now

    @pytest.mark.django_db(transaction=True)
    def test_a_new_database_leaves_dead_letters_not_drained_yet_to_be_drained_into_it(self, broker):
        demo_seed()
        start_over()

        output = demo_seed()

        assert self.still_waiting_line(broker) in output
        assert self.waiting(broker) == self.count  # not doubled
        assert BrokerSource.objects.filter(name=self.source).exists()
