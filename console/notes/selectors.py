"""Reads of notes and investigations, and the owner filter of the message and group lists.

Who owns a message: its own investigation's owner if it has one, otherwise the owner of its
failure group's investigation. Whoever takes a group takes on its members, so "mine" lists them
too; a member someone took for themselves stays theirs (the more specific claim wins), so one
message has one owner whichever way it is looked at. A message "unowned" has neither.

The filters are subqueries on Investigation (a few rows: what people are looking into now),
never a list of ids fetched first: "owned by X" is an IN on the message index's primary key or
its group index, "unowned" a NOT IN that PostgreSQL hashes (a hashed subplan) while it walks the
list's own sort index."""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.exceptions import ValidationError
from django.db.models import Q, Sum

from console.notes.models import GROUP, MESSAGE, Investigation, Note
from console.permissions import INVESTIGATE, VIEW_NOTES
from console.readmodels.models import FailureGroup, MessageIndex

# The owner filter's words; anything else names a user.
MINE = "mine"
UNOWNED = "unowned"
OWNED = "owned"
OWNER_WORDS = (MINE, UNOWNED, OWNED)
OWNER_HELP = (
    f"Under investigation by: '{MINE}' (you), '{UNOWNED}' (nobody), '{OWNED}' (anybody), or a "
    "username. A message counts as owned by its failure group's owner unless someone took the "
    "message itself."
)
NOTES_SHOWN = 200


def notes_list(*, kind, target_id, limit=NOTES_SHOWN):
    """A target's notes, newest first."""
    return list(
        Note.objects.filter(kind=kind, target_id=target_id).order_by("-created_at", "-id")[:limit]
    )


def investigation_get(*, kind, target_id):
    return (
        Investigation.objects.select_related("owner").filter(kind=kind, target_id=target_id).first()
    )


def message_investigation(*, message_id, group_id=""):
    """(the investigation that makes someone the message's owner, whether it is its group's),
    or (None, False)."""
    own = investigation_get(kind=MESSAGE, target_id=message_id)
    if own is not None or not group_id:
        return own, False
    group = investigation_get(kind=GROUP, target_id=group_id)
    return group, group is not None


def message_group_id(*, message_id):
    """The failure group an indexed message is in ("" for none, or not indexed)."""
    found = MessageIndex.objects.filter(pk=message_id).values_list("group_id", flat=True)
    return found.first() or ""


def investigations_attach(rows, *, kind):
    """Set `.investigation` (or None) on each row of a page: message index rows (kind MESSAGE,
    with their group's as the fallback, `.investigation_via_group` saying so) or failure groups
    (kind GROUP). Two queries at most, whatever the page's size."""
    rows = list(rows)
    if kind == GROUP:
        found = _by_target(GROUP, [g.fingerprint for g in rows])
        for group in rows:
            group.investigation = found.get(group.fingerprint)
        return rows
    own = _by_target(MESSAGE, [m.message_id for m in rows])
    groups = _by_target(GROUP, {m.group_id for m in rows if m.group_id})
    for message in rows:
        mine = own.get(message.message_id)
        message.investigation = mine or groups.get(message.group_id)
        message.investigation_via_group = mine is None and message.investigation is not None
    return rows


def _by_target(kind, ids):
    if not ids:
        return {}
    return {
        i.target_id: i
        for i in Investigation.objects.select_related("owner").filter(
            kind=kind, target_id__in=list(ids)
        )
    }


def owner_filter_clean(value, *, user):
    """The owner filter as the selectors take it: UNOWNED, OWNED or a username. MINE becomes
    `user`'s name, so that a list's "select all" freezes whose it meant. ValidationError if
    `user` may not see owners, or if MINE comes without a user (a stored scope, say)."""
    value = (value or "").strip()
    if not value:
        return ""
    if user is not None and not user.has_perm(VIEW_NOTES):
        raise ValidationError("filtering by owner needs permission for reading notes")
    if value == MINE:
        if user is None:
            raise ValidationError(f"'{MINE}' needs to know who asks: give a username")
        return user.get_username()
    return value


def _taken(kind):
    return Investigation.objects.filter(kind=kind).values("target_id")


def _taken_by(kind, username):
    return _taken(kind).filter(owner__username=username)


# Members of the owner's groups above which "owned by X" walks the list's sort index rather than
# fetching X's messages by id and sorting them (see message_owner_q).
DENSE_MEMBERS = 2_000


def message_owner_q(owner):
    """A Q on MessageIndex: its owner (see the module's docstring) is `owner`, a cleaned owner
    filter (owner_filter_clean).

    "Owned by X" takes one of two forms, by how many messages X's groups hold (FailureGroup's
    counts, one small query). Few: an IN on the primary key of X's messages and X's groups'
    members (an index lookup each, then a sort of those few). Many: the same test as a filter
    while the list walks its sort index, which finds a page's rows soon when they are many.
    Either alone is slow on the other's case at a million rows (measured: 300-400 ms)."""
    if owner == UNOWNED:
        return ~Q(pk__in=_taken(MESSAGE)) & ~Q(group_id__in=_taken(GROUP))
    if owner == OWNED:
        return _owned_q(_taken(MESSAGE), _taken(GROUP))
    return _owned_q(_taken_by(MESSAGE, owner), _taken_by(GROUP, owner))


def _owned_q(messages, groups):
    """Messages taken (ids in `messages`) or in a group taken (`groups`) and not taken apart."""
    members = (
        FailureGroup.objects.filter(fingerprint__in=groups).aggregate(n=Sum("count"))["n"] or 0
    )
    if members > DENSE_MEMBERS:
        return Q(pk__in=messages) | (Q(group_id__in=groups) & ~Q(pk__in=_taken(MESSAGE)))
    in_groups = MessageIndex.objects.filter(group_id__in=groups).exclude(pk__in=_taken(MESSAGE))
    return Q(pk__in=messages.union(in_groups.values("pk"), all=True))


def group_owner_q(owner):
    """A Q on FailureGroup: its investigation's owner is `owner` (owner_filter_clean)."""
    if owner == UNOWNED:
        return ~Q(fingerprint__in=_taken(GROUP))
    if owner == OWNED:
        return Q(fingerprint__in=_taken(GROUP))
    return Q(fingerprint__in=_taken_by(GROUP, owner))


def owner_choices():
    """[(username, label)] of everyone who owns an investigation now: what the lists' owner
    pickers offer besides the words."""
    names = (
        Investigation.objects.order_by("owner__username")
        .values_list("owner__username", flat=True)
        .distinct()
    )
    return [(MINE, "me"), (UNOWNED, "nobody"), (OWNED, "anybody"), *((n, n) for n in names)]


def investigators():
    """The active accounts an investigation can be handed over to: those who may investigate."""
    app_label, codename = INVESTIGATE.split(".")
    permission = Permission.objects.filter(
        content_type__app_label=app_label, codename=codename
    ).first()
    users = get_user_model().objects.filter(is_active=True)
    allowed = Q(is_superuser=True)
    if permission is not None:
        allowed |= Q(groups__permissions=permission) | Q(user_permissions=permission)
    return list(users.filter(allowed).distinct().order_by("username"))
