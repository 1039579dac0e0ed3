"""What the screens of every app share."""

from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme


def redirect_back(request, *, default):
    """After a POST, back to the page that sent it (its `next` field), or to `default` (a URL
    name). Only to this console: `next` comes from the client, and a link elsewhere would make
    the console an open redirect."""
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return redirect(target)
    return redirect(default)
