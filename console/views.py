"""What the screens of every app share."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views import defaults
from django.views.decorators.http import require_GET

from console import glossary as words
from console.forms import CommentForm


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


def decision_posted(request, *, service, done, back, **target):
    """A decision posted from something's page with a comment (CommentForm): `service(actor=,
    comment=, **target)` makes it and `done(result)` says so; a refusal in words (ValidationError)
    is said instead. Back to the URL `back` either way. A refusal of the right (PermissionDenied)
    goes up: Django answers 403 with its reason."""
    form = CommentForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(form.errors["comment"]))
        return redirect(back)
    try:
        result = service(actor=request.user, comment=form.cleaned_data["comment"], **target)
    except ValidationError as exc:
        messages.error(request, "; ".join(exc.messages))
    else:
        messages.success(request, done(result))
    return redirect(back)


def page_not_found(request, exception):
    """handler404: a path no route takes. Under /api/, the API's answer, JSON, as its clients
    parse it (an id with a newline, say, which no route's pattern matches); elsewhere the
    console's page."""
    if request.path.startswith("/api/"):
        return JsonResponse(
            {"detail": f"no such path: {request.path} (the API's paths are at /api/docs/)"},
            status=404,
        )
    return defaults.page_not_found(request, exception)


@require_GET
@login_required
def glossary(request):
    """The states, the rules and the words of the screens (console.glossary), for every role:
    reading it needs no permission, only to be signed in."""
    return render(
        request,
        "help/glossary.html",
        {
            "states": words.STATES,
            "rules": words.RULES,
            "terms": words.TERMS,
            "code_groups": words.CODE_GROUPS,
        },
    )
