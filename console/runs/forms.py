"""The runs page's filters: the same as /api/v1/runs takes."""

from django import forms
from django.core.exceptions import ValidationError

from console.forms import LimitedForm
from console.runs.selectors import KINDS, MARKS, STATES, BadCursor, cursor_parse

CURSOR_MAX = 200
KIND_CHOICES = [("", "every kind"), *((k, k) for k in KINDS)]
STATE_CHOICES = [("", "any"), *((s, s) for s in STATES), *((m, f"{m} (running)") for m in MARKS)]


class RunFilterForm(LimitedForm):
    kind = forms.ChoiceField(required=False, choices=KIND_CHOICES)
    state = forms.ChoiceField(required=False, choices=STATE_CHOICES)
    before = forms.CharField(required=False, max_length=CURSOR_MAX, widget=forms.HiddenInput)

    def clean_before(self):
        before = self.cleaned_data["before"]
        if before:
            try:
                cursor_parse(before)
            except BadCursor as exc:
                raise ValidationError(str(exc)) from None
        return before
