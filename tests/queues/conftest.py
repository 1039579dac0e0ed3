import pytest
from django.contrib.auth.models import Group, User

from console.accounts.roles import roles_seed
from tests.conftest import settled


@pytest.fixture
def role_client(client, db):
    """A logged-in client for a user holding one role, as `create_demo_users` makes them."""

    def login(role):
        roles_seed()
        user = User.objects.create_user(role, password="not-used", is_staff=role == "admin")
        user.groups.set([Group.objects.get(name=role)])
        client.force_login(settled(user))
        return client

    return login
