"""What the forms of every screen share: length limits that are shown and refused, never cut, and
fields the browser does not remember."""

from django import forms
from django.core.exceptions import ValidationError
from django.core.validators import MaxLengthValidator
from django.forms.utils import pretty_name
from django.utils.html import format_html

from console.glossary import code_hint, code_title


def limit_text(limit):
    """The hint beside a field: "up to 500 characters"."""
    return f"up to {limit:,} characters"


def too_long_text(what, *, limit, length):
    """The refusal of a value that is too long, naming the limit and how long it is, in the words
    the API's refusals use (console.ingest.services)."""
    return f"{what} is at most {limit:,} characters; this one has {length:,}."


class _AtMost:
    """A field's length limit, refused in words that name it (Django's own says "Ensure this
    value has at most…", and a view that flashes the error alone would not say which field)."""

    def __init__(self, limit, what):
        self.limit = limit
        self.what = what

    def __call__(self, value):
        if len(value) > self.limit:
            raise ValidationError(
                too_long_text(self.what, limit=self.limit, length=len(value)), code="max_length"
            )


def _text_like(widget):
    return isinstance(widget, forms.Textarea) or getattr(widget, "input_type", None) in (
        "text",
        "search",
        "url",
        "email",
    )


class _LimitedBoundField(forms.BoundField):
    """A field with a length limit renders its hint after itself ("up to 500 characters"), tied
    to it by aria-describedby, on every page that writes `{{ field }}`."""

    def as_widget(self, widget=None, attrs=None, only_initial=False):
        limit = getattr(self.field, "max_length", None)
        if widget is not None or only_initial or not limit or not _text_like(self.field.widget):
            return super().as_widget(widget, attrs, only_initial)
        hint_id = f"{self.auto_id or self.html_name}_limit"
        html = super().as_widget(None, {**(attrs or {}), "aria-describedby": hint_id})
        return format_html(
            '{}<span class="limit" id="{}">{}</span>', html, hint_id, limit_text(limit)
        )


def _limits_apply(fields):
    """Swap each field's MaxLengthValidator for one that says the limit and the length (once)."""
    for name, field in fields.items():
        limit = getattr(field, "max_length", None)
        if not limit:
            continue
        what = str(field.label or pretty_name(name)).capitalize()
        field.validators = [
            _AtMost(int(limit), what) if isinstance(v, MaxLengthValidator) else v
            for v in field.validators
        ]


class LimitedForm(forms.Form):
    """A form whose text fields show their length limit and refuse a longer value with a message
    naming it; nothing typed is ever cut silently."""

    bound_field_class = _LimitedBoundField

    def full_clean(self):
        # Here, not in __init__: some forms add fields after it (the alert subscriptions).
        _limits_apply(self.fields)
        super().full_clean()


class NoAutocompleteForm(LimitedForm):
    """A form whose fields the browser does not remember: what people type here (ids, senders,
    text searched for in bodies, edited bodies) may be personal data, and a browser shared by
    several people would offer it to the next one."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            field.widget.attrs.setdefault("autocomplete", "off")


class _CodeOptions:
    """Options that are codes (a message state: NDLV) say what they mean on hover, from the one
    list of codes (console.glossary.CODES); their labels are the fields' own."""

    def create_option(self, name, value, *args, **kwargs):
        option = super().create_option(name, value, *args, **kwargs)
        if hint := code_hint(str(value)):
            option["attrs"]["title"] = hint
        return option


class CodeSelect(_CodeOptions, forms.Select):
    pass


class CodeCheckboxes(_CodeOptions, forms.CheckboxSelectMultiple):
    pass


def state_choices(states, counts=None):
    """(state, label) of each state, labelled with its title and, when counted, how many:
    ("NDLV", "quarantined (4)")."""
    counts = counts or {}
    return [
        (s, f"{code_title(s)} ({counts[s]:,})" if s in counts else code_title(s)) for s in states
    ]


# The comment of a decision on something's page (approve, reject, withdraw, remove): at most
# this long, kept as typed.
DECISION_COMMENT_MAX = 2000


class CommentForm(LimitedForm):
    comment = forms.CharField(required=False, max_length=DECISION_COMMENT_MAX, strip=False)
