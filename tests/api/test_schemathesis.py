"""Every operation of the API, called with requests that schemathesis generates from the OpenAPI
document /api/schema/ serves, as a user who holds every role: no request makes the API fail with a
server error, and every answer is one the document describes (status, content type, body).

The requests go through the WSGI application, in-process, as a server would pass them on. The
document is made at collection the way /api/schema/ makes it (test_schema checks that it is the one
served): schemathesis's loader from a fixture, which could fetch it with a token, does not run on
pytest 9."""

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from console.delivery.poison import poison_entries_put
from console.queues.models import Queue
from console.wsgi import application
from tests.api.conftest import openapi_document
from tests.browse.conftest import Index

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]

# The path parameters' examples in the document name these: the examples phase finds them.
GROUP = "f" * 64

schema = schemathesis.openapi.from_dict(openapi_document())
schema.app = application


@pytest.fixture
def world(transactional_db, lake_root, settings):
    """One quarantined message ("order-1") in a failure group and on the poison list, its queue
    ("orders", disabled) and its numbers: lists, details and the dashboard answer with data, so
    their schemas are checked on data too."""
    # Ingesting commits lake events; no worker needs to be asked to refresh for them.
    settings.REFRESH_ON_COMMIT = False
    index = Index()
    index.group(GROUP)
    index.message("order-1", '{"order": 1}', group_id=GROUP, content_type="application/json")
    index.stats("orders", NDLV=1, TBDL=4)
    index.inflow("orders")
    Queue.objects.filter(name="orders").update(enabled=False, disabled_reason="5 failures")
    poison_entries_put(entries=[("order-1", "orders", "crashed", GROUP)], source="engine")


# transaction=True: the WSGI handler closes the database connection after every request (Django's
# test client would not), which a test inside one transaction does not survive.
@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
@schema.parametrize()
@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    # One world per operation, not per example, on purpose.
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
def test_no_generated_request_makes_the_api_fail(case, world, token_headers):
    case.call_and_validate(headers=token_headers, checks=CHECKS)
