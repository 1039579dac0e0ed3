"""console.permissions: every name the code checks is a permission that exists, and the roles
give each one to somebody."""

import pytest
from django.contrib.auth.models import Permission

from console import permissions
from console.accounts.roles import ROLE_PERMISSIONS

pytestmark = pytest.mark.django_db

NAMES = {
    name: value
    for name, value in vars(permissions).items()
    if name.isupper() and isinstance(value, str)
}


@pytest.mark.parametrize("name", sorted(NAMES))
def test_each_name_is_a_permission_that_exists(name):
    # A typo would make a check that nobody ever passes.
    app_label, codename = NAMES[name].split(".")

    assert Permission.objects.filter(content_type__app_label=app_label, codename=codename).exists()


@pytest.mark.parametrize("name", sorted(NAMES))
def test_each_name_is_held_by_a_role(name):
    assert any(NAMES[name] in held for held in ROLE_PERMISSIONS.values())


@pytest.mark.parametrize("name", sorted(NAMES))
def test_each_name_is_said_in_words(name):
    # A refusal (403) names what is missing in words, never by its codename.
    assert permissions.WORDS.get(NAMES[name])
