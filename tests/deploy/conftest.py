"""What deploy/ ships, read as the tools that load it read it, and the metric names the product
exports (every family /metrics describes, with the sample names Prometheus stores of it)."""

from pathlib import Path

from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from tests.processes.conftest import processes  # noqa: F401 - a fixture

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"

# The sample names a family of each type gives Prometheus (the text format's suffixes).
SUFFIXES = {
    "counter": ("_total", "_created"),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "gauge": ("",),
}


def exported_families():
    """{family name: type} of everything /metrics says, asked of the web as Prometheus asks
    (a family with no sample still has its HELP and TYPE lines)."""
    text = Client().get("/metrics", REMOTE_ADDR="127.0.0.1").content.decode()
    return {f.name: f.type for f in text_string_to_metric_families(text)}


def exported_sample_names():
    return {
        name + suffix for name, kind in exported_families().items() for suffix in SUFFIXES[kind]
    }
