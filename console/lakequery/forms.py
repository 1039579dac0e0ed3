"""The form that starts a lake query on its page. It only shapes what a person typed into
criteria; console.lakequery.criteria checks them (the API sends the same criteria)."""

import re

from django import forms

from console.forms import CodeCheckboxes, NoAutocompleteForm, state_choices
from console.glossary import code_title
from workers.engine.states import STATES

BODY_FIELDS = ("body_contains", "body_regex", "json_path", "json_equals")


class LakeQueryForm(NoAutocompleteForm):
    queues = forms.CharField(
        required=False, max_length=2000, help_text="names, separated by commas or spaces"
    )
    states = forms.MultipleChoiceField(
        required=False, choices=state_choices(STATES), widget=CodeCheckboxes
    )
    message_id_prefix = forms.CharField(
        required=False, max_length=200, label=code_title("message_id_prefix")
    )
    sender = forms.CharField(required=False, max_length=300)
    conversation_id = forms.CharField(
        required=False, max_length=200, label=code_title("conversation_id")
    )
    enqueued_from = forms.DateTimeField(required=False, label=code_title("enqueued_from"))
    enqueued_to = forms.DateTimeField(required=False, label=code_title("enqueued_to"))
    header_name = forms.CharField(required=False, max_length=200, label=code_title("header_name"))
    # Whitespace is part of what is searched for: kept as typed.
    header_value = forms.CharField(
        required=False, max_length=1000, strip=False, label=code_title("header_value")
    )
    body_contains = forms.CharField(
        required=False, max_length=1000, strip=False, label=code_title("body_contains")
    )
    body_regex = forms.CharField(
        required=False, max_length=1000, strip=False, label=code_title("body_regex")
    )
    json_path = forms.CharField(required=False, max_length=200, label=code_title("json_path"))
    json_equals = forms.CharField(
        required=False, max_length=1000, strip=False, label=code_title("json_equals")
    )

    def __init__(self, data=None, *, body=True, **kwargs):
        """body: the user may read bodies; without it the body criteria are not offered."""
        super().__init__(data, **kwargs)
        if not body:
            for name in BODY_FIELDS:
                del self.fields[name]

    @property
    def body_fields(self):
        return [self[name] for name in BODY_FIELDS if name in self.fields]

    @property
    def metadata_fields(self):
        return [self[name] for name in self.fields if name not in BODY_FIELDS]

    def criteria(self):
        """The criteria that were filled in, as the services take them."""
        data = dict(self.cleaned_data)
        data["queues"] = [q for q in re.split(r"[\s,]+", data.get("queues") or "") if q]
        return {name: value for name, value in data.items() if value not in (None, "", [])}
