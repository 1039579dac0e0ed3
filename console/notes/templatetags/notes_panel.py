"""The notes panel and the owner badges, for the browse app's templates to include without their
views knowing of notes: `{% load notes_panel %}`, then

- `{% notes_panel "message" id group_id %}` or `{% notes_panel "group" fingerprint %}`: the
  notes, newest first, who is investigating, and the forms the user may use;
- `{% owner_badge row %}`: the owner of a row that console.notes.selectors.investigations_attach
  went over (nothing for nobody);
- `{% owner_filter value %}`: the group list's owner picker.

Notes and names are people's text: the templates show them escaped, never marked safe, a note's
control characters as markers (|shown, console/textshown.py)."""

from django import template

from console.notes import selectors
from console.notes.forms import HandOverForm, NoteForm, TicketForm
from console.notes.models import GROUP, MESSAGE
from console.permissions import INVESTIGATE, REASSIGN_INVESTIGATIONS, VIEW_NOTES, WRITE_NOTES

register = template.Library()


@register.inclusion_tag("notes/_panel.html", takes_context=True)
def notes_panel(context, kind, target_id, group_id=""):
    request = context["request"]
    user = request.user
    panel = {"request": request, "csrf_token": context.get("csrf_token"), "shown": False}
    if not user.has_perm(VIEW_NOTES):
        return panel
    own = selectors.investigation_get(kind=kind, target_id=target_id)
    via_group = None
    if kind == MESSAGE and own is None and group_id:
        via_group = selectors.investigation_get(kind=GROUP, target_id=group_id)
    may_investigate = user.has_perm(INVESTIGATE)
    may_change = own is not None and (
        own.owner_id == user.pk or user.has_perm(REASSIGN_INVESTIGATIONS)
    )
    panel.update(
        shown=True,
        kind=kind,
        target_id=target_id,
        group_id=group_id,
        what="message" if kind == MESSAGE else "failure group",
        notes=selectors.notes_list(kind=kind, target_id=target_id),
        investigation=own,
        group_investigation=via_group,
        may_write=user.has_perm(WRITE_NOTES),
        may_take=may_investigate and own is None,
        may_change=may_investigate and may_change,
        note_form=NoteForm(),
        take_form=TicketForm(),
        ticket_form=TicketForm(initial={"ticket_url": own.ticket_url if own else ""}),
        hand_over_form=HandOverForm(
            investigators=[u for u in selectors.investigators() if own and u.pk != own.owner_id]
        )
        if may_investigate and may_change
        else None,
    )
    return panel


@register.inclusion_tag("notes/_owner.html")
def owner_badge(row):
    return {
        "investigation": getattr(row, "investigation", None),
        "via_group": getattr(row, "investigation_via_group", False),
    }


@register.inclusion_tag("notes/_owner_filter.html", takes_context=True)
def owner_filter(context, value="", error=None):
    choices = selectors.owner_choices()
    if value and value not in {choice for choice, _ in choices}:
        choices.append((value, value))  # a link's, or one typed: kept, as the other pickers do
    return {
        "value": value,
        "error": error,
        "choices": choices,
        "shown": context["request"].user.has_perm(VIEW_NOTES),
    }
