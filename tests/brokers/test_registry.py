"""The registry of brokers, and the page that says how to add one: every registered broker has a
source and a sink that satisfy the protocols, and every option it takes is documented."""

import re
from pathlib import Path

import pytest

from workers.brokers import base, registry
from workers.engine.handlers import load_handler

GUIDES = Path(__file__).resolve().parents[2] / "docs" / "guides"
PAGE = GUIDES / "adding-a-broker.md"
BROKERS = list(registry.BROKERS.values())


def _documented(name, text):
    # In backticks, or as a key of a queue file's example.
    return re.search(rf"`{re.escape(name)}`|\b{re.escape(name)}:", text) is not None


@pytest.fixture(params=BROKERS, ids=lambda broker: broker.kind)
def broker(request):
    return request.param


def test_each_broker_has_a_source_that_satisfies_the_protocol(broker):
    source = registry.connector(broker.kind)
    assert isinstance(source, base.Source)
    assert isinstance(source, registry.source_class(broker))
    assert (source.kind, source.title) == (broker.kind, broker.title)
    assert source.sink == broker.redrive_handler


def test_each_broker_has_a_sink_that_satisfies_the_protocol(broker):
    sink = registry.sink_class(broker)
    assert issubclass(sink, base.Sink)
    assert getattr(load_handler(broker.redrive_handler), "configurable", False)


def test_each_broker_is_named_on_the_adding_a_broker_page(broker):
    text = PAGE.read_text()
    for name in (broker.kind, broker.source, broker.sink, broker.redrive_handler):
        assert f"`{name}`" in text, f"{name} is not on {PAGE.name}"


def test_each_option_of_a_broker_is_documented(broker):
    assert (GUIDES / broker.guide).is_file(), f"{broker.kind} has no guide {broker.guide}"
    text = PAGE.read_text() + (GUIDES / broker.guide).read_text()
    missing = [name for name in broker.options if not _documented(name, text)]
    assert not missing, f"{broker.kind}: options not documented in {broker.guide}: {missing}"


def test_a_source_refuses_an_option_the_registry_does_not_name(broker):
    errors = registry.connector(broker.kind).options_errors({"no_such_option": 1})
    assert any("no_such_option" in error for error in errors)


def test_the_page_is_in_the_docs_navigation():
    nav = (GUIDES.parent.parent / "mkdocs.yml").read_text()
    assert "guides/adding-a-broker.md" in nav


def test_an_undocumented_option_is_caught():
    assert not _documented("no_such_option", PAGE.read_text())
    assert _documented("min_idle_ms", "      min_idle_ms: 60000")
