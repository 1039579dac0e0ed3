import pytest
from django.contrib.auth.models import Group, User

from tests.conftest import settled


@pytest.fixture(autouse=True)
def admin_is_staff(db, request):
    """The admin persona opens the Django admin, as `make run`'s demo admin does."""
    if "personas" in request.fixturenames:
        personas = request.getfixturevalue("personas")
        User.objects.filter(pk=personas["admin"].pk).update(is_staff=True)
        personas["admin"].is_staff = True


@pytest.fixture
def second_admin(personas):
    """Another administrator, long in post: the second pair of eyes."""
    user = User.objects.create_user("admin2", password="pw-admin2-1234", is_staff=True)
    user.groups.add(Group.objects.get(name="admin"))
    return settled(user)


@pytest.fixture
def newcomer(personas):
    """A user with no role yet, made long ago."""
    return settled(User.objects.create_user("newcomer", password="pw-newcomer-1234"))
