"""Who is acting, for the writes that do not say it themselves: a signal that a user row or a
role changed knows the row, not the person who changed it. The request being served says it
(the console, the Django admin, and the API once DRF has authenticated its caller: DRF sets the
user on the Django request it wraps); a management command names itself; anything else is the
system's own work (a worker, a migration)."""

import contextlib
import contextvars
import getpass
import os
import sys

_request = contextvars.ContextVar("acting_request", default=None)
_named = contextvars.ContextVar("acting_name", default=None)


class ActorMiddleware:
    """Make the request being served known to the writes it leads to (after authentication)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        token = _request.set(request)
        try:
            return self.get_response(request)
        finally:
            _request.reset(token)


def acting_user():
    """The signed-in user of the request being served, or None (no request, or anonymous; or
    someone else acts inside it, by `acting_as`: a sign-in provider changing a person's roles
    while that person's own request is served)."""
    if _named.get() is not None:
        return None
    request = _request.get()
    user = getattr(request, "user", None) if request is not None else None
    return user if user is not None and user.is_authenticated else None


def in_request():
    """True while serving a request: a person at the console, the admin or the API, where the
    rules of who may change whom are enforced (a command runs on the server, inside the trust
    boundary, and is only recorded)."""
    return _request.get() is not None


@contextlib.contextmanager
def acting_as(name):
    """Name the actor of the writes inside, where there is no request (a command, a task) or
    where the request's user is not the one acting (a sign-in provider, console.sso)."""
    token = _named.set(name)
    try:
        yield
    finally:
        _named.reset(token)


def acting_name():
    """The actor to record: the request's user, a name set by `acting_as`, the server account
    running a management command ("cli:<account>"), or "system"."""
    if (named := _named.get()) is not None:
        return named
    user = acting_user()
    if user is not None:
        return user.get_username()
    if _request.get() is not None:
        return "anonymous"
    if os.path.basename(sys.argv[0]) == "manage.py":
        return cli_actor()
    return "system"


def cli_actor():
    """Whoever runs a management command, by their account on the server."""
    return f"cli:{getpass.getuser()}"
