"""The notes panel's forms (templates/notes/_panel.html). The services check the same rules
again; these give the page its fields and the browser its limits (maxlength)."""

from django import forms

from console.forms import NoAutocompleteForm
from console.notes.models import NOTE_MAX, TICKET_URL_MAX
from console.notes.services import note_text_clean, ticket_url_clean


class NoteForm(NoAutocompleteForm):
    # Not stripped: a pasted stack trace keeps its indentation.
    text = forms.CharField(
        max_length=NOTE_MAX,
        strip=False,
        label="note",
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
    )

    def clean_text(self):
        return note_text_clean(self.cleaned_data["text"])


class TicketForm(NoAutocompleteForm):
    ticket_url = forms.CharField(
        required=False,
        max_length=TICKET_URL_MAX,
        label="ticket link",
        widget=forms.URLInput(attrs={"placeholder": "https://tracker.example/ISSUE-1"}),
    )

    def clean_ticket_url(self):
        return ticket_url_clean(self.cleaned_data["ticket_url"])


class HandOverForm(NoAutocompleteForm):
    to = forms.ChoiceField(label="hand over to")

    def __init__(self, *args, investigators=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["to"].choices = [(u.get_username(), u.get_username()) for u in investigators]
