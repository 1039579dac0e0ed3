"""The API's OpenAPI document and a user who may call every operation in it."""

import json

import pytest
from django.contrib.auth.models import Group, User
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from drf_spectacular.settings import spectacular_settings

from console.accounts.roles import APPLICATION, ROLES, roles_seed
from console.accounts.tokens.services import token_create
from tests.conftest import settled


def openapi_document():
    """The document /api/schema/ serves, made without a request (test_schema checks that it is
    the one served), as the JSON a client reads."""
    document = SchemaGenerator().get_schema(request=None, public=spectacular_settings.SERVE_PUBLIC)
    return json.loads(OpenApiJsonRenderer().render(document))


@pytest.fixture
def everyone(db):
    """A user who holds every role (a person: the application role's sending into every queue
    is a service account's, R19)."""
    roles_seed()
    user = User.objects.create_user("everyone")
    user.groups.set(Group.objects.filter(name__in=ROLES))
    return settled(user)


@pytest.fixture
def service_account(db):
    """A producer's service account: the application role alone, no password."""
    roles_seed()
    user = User.objects.create_user("shop-producer")
    user.groups.set([Group.objects.get(name=APPLICATION)])
    return settled(user)


@pytest.fixture
def token_headers(service_account):
    """The headers of a client with a token: a token acts only for a service account."""
    _, token = token_create(actor="command:tests", user=service_account, name="api tests")
    return {"Authorization": f"Token {token}"}
