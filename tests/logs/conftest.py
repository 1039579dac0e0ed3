"""`json_lines`: a handler built as settings' LOGGING builds it for LOG_FORMAT=json (its formatter
and its context filter) on the root logger for the test; it returns the lines logged so far,
each parsed with json.loads."""

import io
import json
import logging

import pytest
from django.conf import settings
from django.utils.module_loading import import_string


def _made(config):
    config = dict(config)
    return import_string(config.pop("()"))(**config)


@pytest.fixture
def json_lines():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(_made(settings.LOGGING["formatters"]["json"]))
    handler.addFilter(_made(settings.LOGGING["filters"]["context"]))
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    root.removeHandler(handler)
    root.setLevel(level)
