"""A role grant waiting for a second administrator's confirmation reaches every other
administrator (the bell, email through a real SMTP server, a signed webhook), never the
administrator who asked, nor the one who would receive it, nor anyone who may not grant roles."""

import pytest
from django.contrib.auth.models import Group, User
from django.urls import reverse

from console.access.services import role_grant_request
from console.alerts import events as E
from console.alerts.models import Alert, AlertDelivery
from console.alerts.selectors import kinds_for
from console.alerts.sending import alerts_send
from console.alerts.services import subscriptions_save
from tests.conftest import settled

pytestmark = pytest.mark.django_db


def _admin(name, email=""):
    user = User.objects.create_user(name, password=f"pw-{name}-1234", email=email)
    user.groups.add(Group.objects.get(name="admin"))
    return settled(user)


@pytest.fixture
def admin2(personas, emails):
    """A second administrator, long in post: the second pair of eyes."""
    return _admin("admin2", "admin2@example.test")


def waiting(user):
    """The titles of the role grants waiting in `user`'s bell."""
    return list(
        AlertDelivery.objects.filter(
            user=user, channel="console", alert__kind=E.ROLE_GRANT_WAITING
        ).values_list("alert__title", flat=True)
    )


def test_a_role_grant_waiting_reaches_admin2_not_the_admin_who_asked_nor_operators(
    personas, admin2, emails, mailbox, receiver, webhook
):
    grant = role_grant_request(
        actor=personas["admin"],
        user=personas["operator"],
        role=Group.objects.get(name="approver"),
        comment="leads the night shift",
    )

    title = "admin asks you to confirm the role approver for operator"
    assert waiting(admin2) == [title]
    for name, user in personas.items():  # the admin who asked, operators, approvers, ...
        assert waiting(user) == [], name
    alert = Alert.objects.get(kind=E.ROLE_GRANT_WAITING)
    assert alert.text == "admin asks: leads the night shift"
    assert alert.link == reverse("role-grant-detail", args=[grant.id])

    sent, failed = alerts_send()
    assert (sent, failed) == (2, 0)  # admin2's email and the webhook
    (mail,) = mailbox.to("admin2@example.test")
    assert mail["Subject"] == f"[Antidote] {title}"
    assert f"/role-grants/{grant.id}/" in mail.get_content()
    for name in ("admin", "operator", "approver"):
        assert mailbox.to(emails[name]) == [], name
    ((headers, payload, signed, status),) = receiver.got
    assert signed and status == 200
    assert headers["X-Antidote-Event"] == payload["event"] == E.ROLE_GRANT_WAITING
    assert payload["title"] == title


def test_an_admin_who_would_receive_the_role_is_not_asked_to_confirm_it(personas, admin2):
    admin3 = _admin("admin3")

    role_grant_request(
        actor=personas["admin"], user=admin2, role=Group.objects.get(name="approver")
    )

    assert waiting(admin3) == ["admin asks you to confirm the role approver for admin2"]
    assert waiting(admin2) == []
    assert waiting(personas["admin"]) == []


def test_a_role_given_at_once_raises_no_alert(personas, admin2):
    # The viewer's role adds nothing an operator holds not already: given at once (R19).
    assert (
        role_grant_request(
            actor=personas["admin"],
            user=personas["operator"],
            role=Group.objects.get(name="viewer"),
        )
        is None
    )

    assert not Alert.objects.filter(kind=E.ROLE_GRANT_WAITING).exists()


def test_admins_may_turn_it_off_and_only_they_may_hear_of_it(personas, admin2):
    assert E.ROLE_GRANT_WAITING in kinds_for(admin2)
    for name in ("operator", "approver", "viewer", "auditor"):
        assert E.ROLE_GRANT_WAITING not in kinds_for(personas[name]), name
    subscriptions_save(user=admin2, choices={E.ROLE_GRANT_WAITING: (False, False, [])})

    role_grant_request(
        actor=personas["admin"], user=personas["operator"], role=Group.objects.get(name="admin")
    )

    assert waiting(admin2) == []
