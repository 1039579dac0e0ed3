"""The quarantine browser's filters, as GET parameters, shared by the page and the API; and
the form that sends a message by hand."""

import json
from datetime import UTC, datetime

from django import forms
from django.conf import settings

from console.forms import CodeSelect, LimitedForm, NoAutocompleteForm, state_choices
from console.ingest.records import ID_MAX_LENGTH
from console.notes.selectors import OWNER_HELP, owner_choices, owner_filter_clean
from workers.engine.states import STATES

# Sort keys people choose; a leading "-" is descending. The default shows the newest failures.
SORT_KEYS = ("last_failure", "enqueued", "delivery_count", "queue")
SORT_CHOICES = [
    (f"{sign}{key}", f"{key.replace('_', ' ')} {'desc' if sign else 'asc'}")
    for key in SORT_KEYS
    for sign in ("-", "")
]
DEFAULT_SORT = "-last_failure"
PAGE_SIZE = 50
PAGE_SIZES = (25, 50, 100, 200)  # what the message list's page offers
API_PAGE_SIZE_MAX = 500
SAVED_FILTER_NAME_MAX = 100  # console.browse.models.SavedFilter.name

# The filter fields, in the order the selectors apply them; the rest of a query is paging.
FILTER_FIELDS = (
    "queue",
    "state",
    "group",
    "exception_type",
    "since",
    "until",
    "sender",
    "conversation",
    "candidate",
    "owner",
    "q",
)


# The state filter's value for "needs attention": quarantined or waiting for a retry.
OPEN = "open"
OPEN_LABEL = "needs attention (quarantined or waiting)"


class MomentInput(forms.DateTimeInput):
    """The browser's date and time picker, in UTC (the zone the label names). A moment that
    came with an offset (a link's, an API user's) is shown in UTC, to the second: the picker
    shows nothing for a value it cannot read, and a filter must never vanish when re-applied."""

    input_type = "datetime-local"

    def __init__(self, attrs=None):
        super().__init__(attrs={"step": "1", **(attrs or {})})

    def format_value(self, value):
        if isinstance(value, str):
            try:
                value = datetime.fromisoformat(value)
            except ValueError:
                return value
        if isinstance(value, datetime):
            if value.tzinfo is not None:
                value = value.astimezone(UTC)
            return value.strftime("%Y-%m-%dT%H:%M:%S")
        return super().format_value(value)


def _picker(current, options, any_label="any"):
    """A select of (value, label) options, keeping a current value that is not among them."""
    values = {value for value, _ in options}
    kept = [(current, current)] if current and current not in values else []
    return forms.Select(choices=[("", any_label), *kept, *options])


class MessageFilterForm(NoAutocompleteForm):
    queue = forms.CharField(required=False, max_length=100)
    state = forms.ChoiceField(
        required=False,
        choices=[("", "any"), (OPEN, OPEN_LABEL), *state_choices(STATES)],
        widget=CodeSelect,
    )
    group = forms.CharField(required=False, max_length=64, label="failure group")
    exception_type = forms.CharField(required=False, max_length=200)
    since = forms.DateTimeField(required=False, label="failed since (UTC)", widget=MomentInput)
    until = forms.DateTimeField(required=False, label="failed before (UTC)", widget=MomentInput)
    sender = forms.CharField(required=False, max_length=300)
    conversation = forms.CharField(required=False, max_length=200)
    candidate = forms.ChoiceField(
        required=False, choices=[("", "any"), ("yes", "yes"), ("no", "no")]
    )
    # "mine", "unowned", "owned" or a username (console.notes.selectors, which says how a
    # message inside a group someone took counts).
    owner = forms.CharField(
        required=False, max_length=150, label="under investigation by", help_text=OWNER_HELP
    )
    q = forms.CharField(required=False, max_length=200, label="reason contains")
    sort = forms.ChoiceField(required=False, choices=SORT_CHOICES)
    after = forms.CharField(required=False, max_length=1000, widget=forms.HiddenInput)
    before = forms.CharField(required=False, max_length=1000, widget=forms.HiddenInput)

    def __init__(self, data=None, *, page_size_max=None, user=None, **kwargs):
        """page_size_max: the API's form, whose pages the caller sizes; without it, the page's
        form, with a choice of page sizes and the position of the page's first row. user: who
        asks, for the owner filter's "mine" (without one, "mine" is refused)."""
        if page_size_max is None and data is not None and not data.get("size"):
            # A bound select shows what the query says; without a size it showed its first
            # option ("25 a page") over the 50 rows the default gives. The query's absent size
            # is the default, so the picker says so.
            data = data.copy()
            data["size"] = str(PAGE_SIZE)
        super().__init__(data, **kwargs)
        self.user = user
        if page_size_max is not None:
            self.fields["page_size"] = forms.IntegerField(
                required=False, min_value=1, max_value=page_size_max
            )
        else:
            self.fields["size"] = forms.TypedChoiceField(
                required=False,
                coerce=int,
                empty_value=PAGE_SIZE,
                choices=[(n, f"{n} a page") for n in PAGE_SIZES],
                label="page size",
            )
            # Keyset pages have no offset: the links carry where the page starts, for "1-50 of N".
            self.fields["at"] = forms.IntegerField(
                required=False, min_value=1, widget=forms.HiddenInput
            )

    def offer(self, choices):
        """The page's pickers: queues, states, exception types and failure groups, each with how
        many messages the list holds for it (browse.counts.FilterChoices). The fields still
        take any value (a link's, a typed one); a current value not offered is kept."""
        current = self.data.get
        self.fields["queue"].widget = _picker(
            current("queue"), [(q, f"{q} ({n:,})") for q, n in choices.queues]
        )
        counts = dict(choices.states)
        attention = sum(counts.get(s, 0) for s in ("NDLV", "WAIT"))
        self.fields["state"].choices = [
            ("", "any"),
            (OPEN, f"{OPEN_LABEL} ({attention:,})"),
            *state_choices(STATES, counts),
        ]
        self.fields["exception_type"].widget = _picker(
            current("exception_type"), [(t, f"{t} ({n:,})") for t, n in choices.exception_types]
        )
        self.fields["group"].widget = _picker(
            current("group"),
            [(fp, f"{_cut(pattern or fp, 80)} ({n:,})") for fp, pattern, n in choices.groups],
        )
        self.fields["owner"].widget = _picker(
            current("owner"), owner_choices(), any_label="anybody or nobody"
        )

    # A moment is compared in UTC: Python takes offsets up to ±23:59, PostgreSQL's timestamps
    # only up to ±15:59, and "+16:00" reached the database as a 500.
    def clean_since(self):
        since = self.cleaned_data.get("since")
        return since.astimezone(UTC) if since else since

    def clean_until(self):
        until = self.cleaned_data.get("until")
        return until.astimezone(UTC) if until else until

    def clean_owner(self):
        return owner_filter_clean(self.cleaned_data.get("owner"), user=self.user)

    def clean(self):
        data = super().clean()
        if data.get("after") and data.get("before"):
            raise forms.ValidationError("give one of after and before, not both")
        since, until = data.get("since"), data.get("until")
        if since and until and since >= until:
            raise forms.ValidationError("'failed since' must be before 'failed before'")
        data["sort"] = data.get("sort") or DEFAULT_SORT
        return data

    def filters(self):
        """The cleaned filters that are set, as the selectors take them."""
        data = self.cleaned_data
        return {name: data[name] for name in FILTER_FIELDS if data.get(name) not in (None, "")}

    def keyset(self):
        """The page asked for, as selectors.message_page takes it: the sort and the cursor."""
        data = self.cleaned_data
        return {"sort": data["sort"], "after": data["after"], "before": data["before"]}


def _cut(text, size):
    return text if len(text) <= size else text[: size - 1] + "\u2026"


class SavedFilterNameForm(LimitedForm):
    # Not required here: the service says an empty name is refused, in its words.
    name = forms.CharField(required=False, max_length=SAVED_FILTER_NAME_MAX, label="name")


# --- Sending a message by hand ----------------------------------------------------------------


class MessageSendForm(NoAutocompleteForm):
    """A message a person sends in by hand (console.ingest.by_hand), new or copied from another:
    the fields of POST /api/v1/messages, which ingest checks again as for any route."""

    queue = forms.ChoiceField(label="queue")
    message_id = forms.CharField(
        label="id",
        max_length=ID_MAX_LENGTH,
        help_text="unique: the same id and body again is "
        "a duplicate, a different body under it is refused",
    )
    # In characters, the most a body of MAX_BODY_BYTES can take as text or base64: ingest then
    # refuses one over its limit in bytes, in words.
    body = forms.CharField(
        label="body",
        required=False,
        strip=False,
        max_length=settings.MAX_BODY_BYTES * 4 // 3 + 4,
        widget=forms.Textarea(attrs={"rows": 10}),
    )
    body_encoding = forms.ChoiceField(
        label="body is", choices=[("text", "text"), ("base64", "base64 (binary)")], initial="text"
    )
    content_type = forms.CharField(label="content type", required=False, max_length=200)
    # JSON of MAX_HEADERS_TOTAL_BYTES of names and values, with room for its quotes and escapes.
    headers = forms.CharField(
        label="headers (a JSON object)",
        required=False,
        max_length=settings.MAX_HEADERS_TOTAL_BYTES * 2,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text='{"name": "value", ...}; the product\'s own headers are refused',
    )
    conversation_id = forms.CharField(label="conversation", required=False, max_length=200)
    sender = forms.CharField(label="sender", required=False, max_length=200)

    def __init__(self, *args, queues=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["queue"].choices = [(q, q) for q in queues]

    def clean_headers(self):
        text = self.cleaned_data["headers"].strip()
        if not text:
            return None
        try:
            headers = json.loads(text)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(
                f"not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
            ) from None
        if not isinstance(headers, dict):
            raise forms.ValidationError('headers are a JSON object: {"name": "value"}')
        return headers

    def record(self):
        """The record to send, as the API takes it."""
        data = self.cleaned_data
        record = {
            "id": data["message_id"],
            "queue": data["queue"],
            "body": data["body"],
            "body_encoding": data["body_encoding"],
        }
        for name in ("content_type", "conversation_id", "sender"):
            if data[name]:
                record[name] = data[name]
        if data["headers"] is not None:
            record["headers"] = data["headers"]
        return record
