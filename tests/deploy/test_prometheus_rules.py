"""deploy/prometheus: the alert rules load (promtool check rules), behave as their unit tests say
(promtool test rules), name only metrics the product exports, and the example configuration
that loads them is valid (promtool check config). promtool comes with Debian's prometheus."""

import re
import shutil
import subprocess

import pytest
import yaml

from tests.conftest import require_service
from tests.deploy.conftest import DEPLOY, exported_sample_names

RULES = DEPLOY / "prometheus" / "antidote-alerts.yml"
RULE_TESTS = DEPLOY / "prometheus" / "antidote-alerts.test.yml"
CONFIG = DEPLOY / "prometheus" / "prometheus.example.yml"


@pytest.fixture
def promtool():
    require_service("promtool (Debian's prometheus package)", path="promtool")
    return shutil.which("promtool")


def _promtool(promtool, *args):
    done = subprocess.run(
        [promtool, *args], cwd=RULES.parent, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_rules_load(promtool):
    said = _promtool(promtool, "check", "rules", RULES.name)

    assert f"SUCCESS: {len(_rules())} rules found" in said


def test_every_rule_behaves_as_its_unit_tests_say(promtool):
    said = _promtool(promtool, "test", "rules", RULE_TESTS.name)

    assert "SUCCESS" in said


def test_every_rule_has_a_unit_test_that_sees_it_fire():
    fired = {
        case["alertname"]
        for test in yaml.safe_load(RULE_TESTS.read_text())["tests"]
        for case in test.get("alert_rule_test", [])
        if case.get("exp_alerts")
    }

    assert fired == {rule["alert"] for rule in _rules()}


def test_the_example_configuration_loads_the_rules(promtool):
    said = _promtool(promtool, "check", "config", CONFIG.name)

    assert "is valid prometheus config file syntax" in said
    assert yaml.safe_load(CONFIG.read_text())["rule_files"] == [RULES.name]


@pytest.mark.django_db
def test_the_rules_name_only_metrics_the_product_exports():
    exported = exported_sample_names()

    named = {
        name for rule in _rules() for name in re.findall(r"\bantidote_[a-z_]+\b", rule["expr"])
    }

    assert named and named <= exported, named - exported


def test_every_rule_says_how_severe_and_what_to_do():
    for rule in _rules():
        assert rule["labels"]["severity"] in {"critical", "warning", "info"}, rule["alert"]
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]


def _rules():
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]
