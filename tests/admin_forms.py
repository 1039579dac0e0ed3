"""What a browser posts to the Django admin's forms, for tests that go through the admin."""


def admin_user_form(user, **changes):
    """The Django admin's user change form of `user`, as a browser posts it, with `changes`;
    unchecked boxes (empty values) left out, as a browser leaves them."""
    data = {
        "username": user.username,
        "is_active": "on" if user.is_active else "",
        "is_staff": "on" if user.is_staff else "",
        "groups": [str(g.pk) for g in user.groups.all()],
        "date_joined_0": user.date_joined.strftime("%Y-%m-%d"),
        "date_joined_1": user.date_joined.strftime("%H:%M:%S"),
        **changes,
    }
    return {k: v for k, v in data.items() if v != ""}
