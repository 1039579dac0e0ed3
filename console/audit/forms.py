"""The audit screen's filters, as GET parameters; the API's serializer checks the same rules."""

from django import forms

from console.audit.selectors import filters_from
from console.forms import NoAutocompleteForm

API_PAGE_SIZE_MAX = 500


def filters_error(data):
    """What is wrong with a cleaned set of filters and cursors as a whole, or None."""
    if data.get("after") is not None and data.get("before") is not None:
        return "give one of after and before, not both"
    since, until = data.get("since"), data.get("until")
    if since and until and since >= until:
        return "'from' must be before 'to'"
    return None


class AuditFilterForm(NoAutocompleteForm):
    actor = forms.CharField(required=False, max_length=150, label="actor is")
    actor_contains = forms.CharField(required=False, max_length=150, label="actor contains")
    action = forms.CharField(
        required=False,
        max_length=61,
        widget=forms.TextInput(attrs={"placeholder": "login, or request. for all request.*"}),
    )
    target_type = forms.CharField(required=False, max_length=60)
    target_id = forms.CharField(required=False, max_length=300)
    since = forms.DateTimeField(required=False, label="from")
    until = forms.DateTimeField(required=False, label="to (excluded)")
    after = forms.IntegerField(required=False, min_value=0, widget=forms.HiddenInput)
    before = forms.IntegerField(required=False, min_value=0, widget=forms.HiddenInput)

    def clean(self):
        data = super().clean()
        error = filters_error(data)
        if error:
            raise forms.ValidationError(error)
        return data

    def filters(self):
        return filters_from(self.cleaned_data)
