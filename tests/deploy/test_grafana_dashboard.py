"""deploy/grafana: the dashboard is a Grafana dashboard an operator can import (valid JSON, its
datasource chosen at import, panels that do not overlap), and it draws every metric the product
exports, naming no other."""

import json
import re

import pytest

from tests.deploy.conftest import DEPLOY, SUFFIXES, exported_families, exported_sample_names

DASHBOARD = DEPLOY / "grafana" / "antidote-dashboard.json"


@pytest.fixture(scope="module")
def dashboard():
    return json.loads(DASHBOARD.read_text())


def _expressions(dashboard):
    return [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]


def _named(expressions):
    return {name for expr in expressions for name in re.findall(r"\bantidote_[a-z_]+\b", expr)}


def test_it_is_importable_with_the_datasource_chosen_at_import(dashboard):
    assert dashboard["uid"] and dashboard["title"] == "Antidote"
    assert dashboard["__inputs"][0]["pluginId"] == "prometheus"
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    for panel in dashboard["panels"]:
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
            assert panel["targets"], panel["title"]


def test_panels_have_their_own_ids_and_do_not_overlap(dashboard):
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    taken = set()
    for panel in dashboard["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        cells = {
            (x, y)
            for x in range(grid["x"], grid["x"] + grid["w"])
            for y in range(grid["y"], grid["y"] + grid["h"])
        }
        assert not cells & taken, panel["title"]
        taken |= cells


@pytest.mark.django_db
def test_it_names_only_metrics_the_product_exports(dashboard):
    named = _named(_expressions(dashboard))

    assert named <= exported_sample_names(), named - exported_sample_names()


@pytest.mark.django_db
def test_every_metric_the_product_exports_is_drawn(dashboard):
    drawn = _named(_expressions(dashboard))

    for family, kind in exported_families().items():
        samples = {family + suffix for suffix in SUFFIXES[kind]}
        assert samples & drawn, f"{family} ({kind}) is not drawn"
