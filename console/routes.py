"""The routes of the verbs a thing takes (approve, reject, withdraw, cancel...), written once for
its pages and its API: each verb is a path of its own under the thing's path, served by the page
view `<thing>_<verb>` and the API view `<Thing><Verb>Api` ("break-glass": `request_break_glass`,
`RequestBreakGlassApi`), and named `<name>-<verb>` and `api-<name>-<verb>`. Include them under
the thing's own path: `path("rules/<int:rule_id>/", include(verb_pages(views, "rule", VERBS)))`.
"""

import re

from django.urls import path


def _words(text):
    return re.split(r"[-_]", text)


def _snake(text):
    return "_".join(_words(text))


def _camel(text):
    return "".join(word.capitalize() for word in _words(text))


def verb_pages(views, thing, verbs, *, name=None):
    """The page routes of a thing's verbs. `name` is the routes' prefix where it is not the
    thing's (a role grant's views are `grant_<verb>`, its routes `role-grant-<verb>`)."""
    name = name or "-".join(_words(thing))
    return [
        path(verb, getattr(views, f"{_snake(thing)}_{_snake(verb)}"), name=f"{name}-{verb}")
        for verb in verbs
    ]


def verb_apis(apis, thing, verbs, *, name=None, after=""):
    """The API routes of a thing's verbs, named as `verb_pages` names the pages, "api-" before;
    `after` follows the verb in the path (an investigation's target: "/<str:kind>/<path:id>")."""
    name = name or "-".join(_words(thing))
    return [
        path(
            f"{verb}{after}",
            getattr(apis, f"{_camel(thing)}{_camel(verb)}Api").as_view(),
            name=f"api-{name}-{verb}",
        )
        for verb in verbs
    ]
