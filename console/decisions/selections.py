"""Selections: the ids a person ticked across the message list's pages, kept on the server so
that the request screens can name up to MAX_SELECTION of them by one key (see models.Selection)."""

import uuid
from datetime import timedelta

from django.utils import timezone

from console.decisions.models import Selection
from console.decisions.scope import MAX_SELECTION, ScopeError

SELECTION_HOURS = 24


def selection_ids_parse(values, *, text_max):
    """The ids a form posted, as separate fields, as lines of one field, or both; in the order
    they came, each once. ScopeError if there are none, too many, or one is not an id."""
    ids = {}
    for value in values:
        for line in value.splitlines():
            line = line.strip()
            if not line:
                continue
            if len(line) > text_max or "\x00" in line:
                raise ScopeError("a selected message id is not a valid one")
            ids[line] = None
    if not ids:
        raise ScopeError("select at least one message")
    if len(ids) > MAX_SELECTION:
        raise ScopeError(
            f"{len(ids):,} messages are selected; a selection holds at most {MAX_SELECTION:,}: "
            "scope by a filter instead"
        )
    return list(ids)


def selection_create(*, owner, ids):
    """Keep `ids` for `owner`, and forget the selections older than SELECTION_HOURS (anyone's:
    they are never needed again once their screens were used)."""
    Selection.objects.filter(
        created_at__lt=timezone.now() - timedelta(hours=SELECTION_HOURS)
    ).delete()
    return Selection.objects.create(owner=owner, ids=ids)


def selection_ids(*, key, owner):
    """The ids of `owner`'s selection `key`; ScopeError if there is none (expired, or another
    person's: a key is no capability)."""
    try:
        key = uuid.UUID(key)
    except (TypeError, ValueError):
        raise ScopeError("the selection's key is not one of ours") from None
    found = Selection.objects.filter(
        key=key,
        owner=owner,
        created_at__gte=timezone.now() - timedelta(hours=SELECTION_HOURS),
    ).first()
    if found is None:
        raise ScopeError(
            "this selection is no longer kept (it was made more than "
            f"{SELECTION_HOURS} hours ago, or by someone else): select the messages again"
        )
    return found.ids
