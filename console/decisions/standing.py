"""What standing rules (console.rules) change in the requests made here, said by this app and
handed over by that one.

The rules sit a layer above the decisions (pyproject.toml, docs/architecture.md): this app may
not import them. So it says here what it asks of them, and console.rules hands its functions over
when Django starts (console/rules/apps.py), as the read models hand the queues their counts
(console/queues/counts.py). Without the rules app, no request is redirected, none is made by a
rule, and no request page has anything of them to say.

- a standing redirect: a reprocess of a queue's messages back to their own queue goes to another
  queue instead (`redirect_for`, when the request is made; `redirects_said`, on the forms before
  it is made);
- a rule's own requests: the scope kind STANDING_RULE, whose ids the rule streams when the scope
  is frozen (`scope_rows`);
- what a request's page says of the rule that made or redirected it (`notes_for`)."""

from collections.abc import Callable
from dataclasses import dataclass

from django.core.exceptions import ValidationError

# The scope of a request a standing rule makes: {"kind": STANDING_RULE, "rule": id, "at": ISO
# time}, the messages the rule matched at that time (frozen like any other scope).
STANDING_RULE = "standing_rule"


@dataclass(frozen=True)
class Redirect:
    """A standing redirect that applies to a request being made."""

    to_queue: str
    said: str  # in words, for the request's page and the refusals: "standing rule 4 (...)"
    # Records that it applied, in the transaction that records the request: record(request).
    record: Callable


@dataclass(frozen=True)
class Standing:
    """A standing rule's approval, given once for every request the rule makes
    (console.decisions.services.action_request_create_standing): who proposed the rule (its
    requests' requester), the second person who approved it (R17), and what the request's page
    says of it."""

    rule_id: int
    requester: object
    approver: object
    approval_reason: str


@dataclass(frozen=True)
class Note:
    """A line a request's page shows: what a standing rule did with it, and the rule's page."""

    text: str
    url: str


_provided = {}


def provide(*, redirect, redirects_said, scope_rows, notes):
    """Called once, by console.rules at start-up.

    - `redirect(breakdown, ids_path)`: the Redirect that applies to a reprocess back to their
      own queue of the frozen set at `ids_path` (with its breakdown, {"queues": {queue: n},
      "groups": {group: n}}), or None; ValidationError, in words, when a redirect applies to
      part of it only or it holds a message under investigation;
    - `redirects_said(queues)`: [Note] of the redirects that would apply to a reprocess of
      messages of `queues` (names), for the forms;
    - `scope_rows(scope)`: (id, queue, group) of what a rule matches, in id order;
    - `notes(request)`: [Note] for the request's page."""
    _provided.update(
        redirect=redirect, redirects_said=redirects_said, scope_rows=scope_rows, notes=notes
    )


def redirect_for(*, action, frozen):
    """The standing Redirect of a reprocess `action` that goes back to its own queue (no queue
    named), for the `frozen` set (console.decisions.scope.FrozenScope); None when none applies."""
    if "redirect" not in _provided or action.kind != "reprocess" or action.target_queue:
        return None
    return _provided["redirect"](frozen.breakdown, frozen.ids_path)


def redirects_said(*, queues):
    """What the request forms say, before the request is made, of the standing redirects of
    `queues` (names): [Note]."""
    if "redirects_said" not in _provided or not queues:
        return []
    return _provided["redirects_said"](list(queues))


def scope_rows(scope):
    """The rows of a standing rule's scope, for console.decisions.scope.scope_freeze."""
    if "scope_rows" not in _provided:
        raise ValidationError("standing rules are not installed: nothing makes this scope")
    return _provided["scope_rows"](scope)


def notes_for(request):
    """[Note] of what standing rules did with `request`, for its page."""
    if "notes" not in _provided:
        return []
    return _provided["notes"](request)
