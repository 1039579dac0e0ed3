"""What people type to ask for an action, and the filters of the request and notification lists.

A scope comes from the page that links to the request screen, as GET parameters:
`?scope=message&id=…`, `?scope=group&group=…`, `?scope=filter&<the browser's filters>`,
`?scope=selection&ids=a&ids=b`, `?scope=lake_query&query=<id>`, `?scope=failed_again&request=<id>`.
scope_from_params turns them into the scope the services freeze (console.decisions.scope)."""

from django import forms

from console.browse.forms import FILTER_FIELDS, MessageFilterForm
from console.decisions.models import ActionRequest
from console.decisions.scope import MAX_SELECTION, ScopeError
from console.decisions.services import DEFAULT_REFAILURE_THRESHOLD, DEFAULT_STEPS, MAX_CANARY
from console.decisions.targets import REDRIVE_TARGET_KEYS, redrive_target_clean
from console.forms import LimitedForm, NoAutocompleteForm
from console.queues.models import Queue
from workers.jobs.decisions.body_edits import (
    PATCH_TEXT_MAX,
    PatchRefused,
    json_content_type,
    json_refused,
    json_strict,
    patch_parse,
)

# The column types' limits: a bigger number is refused as input, never sent to the database.
MAX_ID = 2**63 - 1
MAX_RATE = 2**31 - 1
COMMENT_MAX = 10_000
ERROR_CODE_MAX = 100
ERROR_DESCRIPTION_MAX = 10_000
TEXT_MAX = 1000  # an id, a group fingerprint, a filter value: far above any real one
# One message's headers as JSON text, at most: room for MAX_HEADERS_TOTAL_BYTES' default (512 KiB)
# written out with its quotes and escapes.
HEADERS_TEXT_MAX = 2 * 1024 * 1024
REQUESTS_PAGE = 50
REQUESTS_PAGE_MAX = 500
NOTIFICATIONS_PAGE = 50
NOTIFICATIONS_PAGE_MAX = 500

SCOPE_KINDS = ("message", "selection", "group", "filter", "lake_query", "failed_again")


def _text(value, what):
    if not isinstance(value, str) or not value:
        raise ScopeError(f"the scope needs {what}")
    if len(value) > TEXT_MAX or "\x00" in value:
        raise ScopeError(f"{what} is not a valid one")
    return value


def filters_json(filters):
    """The browser's cleaned filters as JSON (times as ISO text): what a filter scope stores."""
    return {
        name: value.isoformat() if hasattr(value, "isoformat") else value
        for name, value in filters.items()
    }


def filter_scope(data):
    """A filter scope from the browser's filter parameters, checked by the browser's own form."""
    unknown = sorted(set(data) - set(FILTER_FIELDS))
    if unknown:
        raise ScopeError(f"unknown filter(s): {', '.join(unknown)}; use {', '.join(FILTER_FIELDS)}")
    form = MessageFilterForm({name: data[name] for name in FILTER_FIELDS if name in data})
    if not form.is_valid():
        problems = "; ".join(
            f"{name}: {' '.join(errors)}" if name != "__all__" else " ".join(errors)
            for name, errors in form.errors.items()
        )
        raise ScopeError(f"the filter is not valid: {problems}")
    return {"kind": "filter", "filters": filters_json(form.filters())}


def scope_from_params(params):
    """The scope named by a page's GET parameters (a QueryDict); ScopeError if it names none."""
    kind = params.get("scope", "")
    if kind == "message":
        return {"kind": "message", "id": _text(params.get("id"), "a message id")}
    if kind == "group":
        return {"kind": "group", "group": _text(params.get("group"), "a failure group")}
    if kind == "selection":
        ids = [i for i in params.getlist("ids") if i]
        if not ids:
            raise ScopeError("select at least one message")
        if len(ids) > MAX_SELECTION:
            raise ScopeError(f"a selection holds at most {MAX_SELECTION} ids; scope by filter")
        return {"kind": "selection", "ids": [_text(i, "a message id") for i in ids]}
    if kind == "filter":
        return filter_scope({name: params[name] for name in FILTER_FIELDS if params.get(name)})
    if kind == "lake_query":
        query = params.get("query", "")
        if not query.isdigit() or not 0 < int(query) <= MAX_ID:
            raise ScopeError("a lake query scope names the query by its number")
        return {"kind": "lake_query", "query": int(query)}
    if kind == "failed_again":
        request = params.get("request", "")
        if not request.isdigit() or not 0 < int(request) <= MAX_ID:
            raise ScopeError("a failed-again scope names the earlier request by its number")
        return {"kind": "failed_again", "request": int(request)}
    raise ScopeError(f"the scope is one of {', '.join(SCOPE_KINDS)}")


def scope_params(scope):
    """The GET parameters that name `scope` again (the inverse of scope_from_params)."""
    kind = scope.get("kind")
    if kind == "message":
        return [("scope", kind), ("id", scope["id"])]
    if kind == "group":
        return [("scope", kind), ("group", scope["group"])]
    if kind == "selection":
        return [("scope", kind), *(("ids", i) for i in scope["ids"])]
    if kind == "filter":
        return [("scope", kind), *scope["filters"].items()]
    if kind == "failed_again":
        return [("scope", kind), ("request", str(scope.get("request", "")))]
    return [("scope", kind), ("query", str(scope.get("query", "")))]


def _browser_text(text, original):
    """A textarea's text as typed: browsers send its line breaks as CRLF whatever the text had;
    a text that had no CR gets its LFs back."""
    if original is None or "\r" not in original:
        return text.replace("\r\n", "\n")
    return text


def normalize_edited_body(text, original):
    """What an edited-body textarea means: bytes to store, or None to keep the body.

    Browsers send a textarea's line breaks as CRLF whatever the text had; a body that had no CR
    gets its LFs back. Text left as it was prefilled, or left empty, is no edit."""
    if not text:
        return None
    text = _browser_text(text, original)
    if original is not None and text == original:
        return None
    return text.encode("utf-8")


# What applies to which action (R13): reprocess takes where and how fast; end with error takes
# what the sender is told; fail takes nothing but the comment. The form shows each option only
# for its action, refuses it for the others, and the API refuses the same (serializers).
REPROCESS_OPTIONS = (
    "target_queue",
    "send_to",
    "target_exchange",
    "target_routing_key",
    "target_subject",
    "target_stream",
    "target_url",
    "edited_body",
    "edited_headers",
    "patch",
    "rate_limit",
    "canary",
    "progressive",
    "steps",
    "refailure_threshold",
)
END_OPTIONS = ("error_code", "error_description")
ACTION_OPTIONS = {
    ActionRequest.REPROCESS: REPROCESS_OPTIONS,
    ActionRequest.FAIL: (),
    ActionRequest.END: END_OPTIONS,
}
ACTION_WORDS = dict(ActionRequest.ACTIONS)


# Why an option does not apply to the other actions: its words, and what each action does.
_OPTION_WORDS = {
    "target_queue": "Another queue is for reprocessing",
    "send_to": "Sending elsewhere than their origin is for reprocessing",
    "edited_body": "An edited body is for reprocessing",
    "edited_headers": "Edited headers are for reprocessing",
    "patch": "A bulk edit (a JSON Patch) is for reprocessing",
    "rate_limit": "Rate limits, canaries and steps are for reprocessing",
    "canary": "Rate limits, canaries and steps are for reprocessing",
    "progressive": "Rate limits, canaries and steps are for reprocessing",
    "steps": "Rate limits, canaries and steps are for reprocessing",
    "refailure_threshold": "Rate limits, canaries and steps are for reprocessing",
    "error_code": "An error code is what the sender is told, and only end with error tells",
    "error_description": "An error description is what the sender is told, and only end with "
    "error tells",
}
_LEAVE = {"send_to": "Leave it at its origin", "progressive": "Untick it"}
_ACTION_DOES = {
    ActionRequest.REPROCESS: "reprocess delivers the messages again",
    ActionRequest.FAIL: "fail marks the messages failed for good and tells nobody",
    ActionRequest.END: "end with error ends their conversations and tells their senders",
}


def option_refused(name, action):
    """Why the option `name` (a field of ActionRequestForm) does not apply to `action`, in one
    sentence; "" when it does."""
    if name in ACTION_OPTIONS.get(action, ()):
        return ""
    owner = next((a for a, names in ACTION_OPTIONS.items() if name in names), None)
    if owner is None:
        return ""
    leave = _LEAVE.get(name, "Leave it empty")
    does = _ACTION_DOES[action]
    return f"{_OPTION_WORDS[name]}: {does}. {leave}, or choose {ACTION_WORDS[owner]}."


def _json_text(max_length, label, help_text):
    """A textarea of JSON a person writes: kept as typed (no stripping, no spelling marks)."""
    return forms.CharField(
        required=False,
        strip=False,
        max_length=max_length,
        widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false"}),
        label=label,
        help_text=help_text,
    )


class ActionRequestForm(NoAutocompleteForm):
    action = forms.ChoiceField(choices=ActionRequest.ACTIONS, widget=forms.RadioSelect)
    target_queue = forms.ChoiceField(
        required=False,
        label="reprocess in queue",
        help_text="Reprocess only. Another queue than the messages' own always needs a second "
        "person's approval.",
    )
    send_to = forms.ChoiceField(
        required=False,
        initial="origin",
        widget=forms.RadioSelect,
        choices=[
            ("origin", "its origin (default)"),
            ("exchange", "this exchange and routing key (RabbitMQ)"),
            ("subject", "this subject (NATS)"),
            ("stream", "this stream (Redis)"),
            ("url", "this URL (HTTP)"),
        ],
        label="send to",
        help_text="Reprocess to a broker only: each message goes back to where it came from, "
        "unless you name another place here. Another place always needs a second person's "
        "approval.",
    )
    target_exchange = forms.CharField(
        required=False,
        strip=False,
        max_length=REDRIVE_TARGET_KEYS["exchange"],
        label="exchange",
        help_text="Empty: RabbitMQ's default exchange.",
    )
    target_routing_key = forms.CharField(
        required=False, max_length=REDRIVE_TARGET_KEYS["routing_key"], label="routing key"
    )
    target_subject = forms.CharField(
        required=False, max_length=REDRIVE_TARGET_KEYS["subject"], label="subject"
    )
    target_stream = forms.CharField(
        required=False, max_length=REDRIVE_TARGET_KEYS["stream"], label="stream"
    )
    target_url = forms.CharField(
        required=False,
        max_length=REDRIVE_TARGET_KEYS["url"],
        label="URL",
        help_text="http:// or https://",
    )
    edited_body = forms.CharField(
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 14, "spellcheck": "false"}),
        label="body",
        help_text="Reprocess only. Change it to reprocess an edited body (stored as a new "
        "version; the original is kept). Leave it as it is to keep the body. An edited body "
        "always needs a second person's approval.",
    )
    edited_headers = _json_text(
        HEADERS_TEXT_MAX,
        "headers",
        "Reprocess only. The headers you may edit, as a JSON object of names to text values: "
        "change, add or remove them (stored with the body as a new version; the original is "
        "kept). The product's own headers, a broker's dead-letter record and those the queue "
        "locks are kept as they are (listed beside). An edit always needs a second person's "
        "approval.",
    )
    patch = _json_text(
        PATCH_TEXT_MAX,
        "JSON Patch",
        "Reprocess only. Edit every message's body in bulk with a JSON Patch (RFC 6902), e.g. "
        '[{"op": "add", "path": "/currency", "value": "EUR"}]: each edited body is stored as a '
        "new version (the original is kept). Preview it on some of the messages before you send "
        "the request; a message it does not apply to stays quarantined. A bulk edit always "
        "needs a second person's approval.",
    )
    # The patch whose preview the page showed (its fingerprint): a bulk edit is sent only after
    # its preview was seen.
    previewed = forms.CharField(required=False, max_length=64, widget=forms.HiddenInput)
    error_code = forms.CharField(
        required=False, max_length=ERROR_CODE_MAX, help_text="End with error only."
    )
    error_description = forms.CharField(
        required=False,
        max_length=ERROR_DESCRIPTION_MAX,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="End with error only: sent to the sender with the code. Ending conversations "
        "always needs a second person's approval.",
    )
    rate_limit = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_RATE,
        label="rate limit (messages a second)",
        help_text="Reprocess only. Empty: as fast as it goes.",
    )
    canary = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=MAX_CANARY,
        label="canary (messages)",
        help_text="Reprocess only. Reprocess this many first; the rest goes only if they are "
        "delivered.",
    )
    progressive = forms.BooleanField(
        required=False,
        label="progressive redrive",
        help_text="Reprocess only. Reprocess in the steps below, then the rest, each next step "
        "only if the last one's messages did not fail again more than the threshold allows.",
    )
    steps = forms.CharField(
        required=False,
        max_length=200,
        initial=", ".join(str(size) for size in DEFAULT_STEPS),
        label="steps (messages)",
        help_text="Progressive redrive: message counts separated by commas.",
    )
    refailure_threshold = forms.FloatField(
        required=False,
        min_value=0,
        max_value=100,
        initial=DEFAULT_REFAILURE_THRESHOLD,
        label="re-failure threshold (%)",
        help_text="Progressive redrive: the next step goes only if at most this share of the "
        "last step's messages failed again (back in WAIT or NDLV); 0: none may.",
    )
    comment = forms.CharField(
        max_length=COMMENT_MAX,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Why: the approver and the audit trail read it.",
    )

    def clean_steps(self):
        """ "1, 10, 100" as [1, 10, 100]; None when empty. The service checks the sizes."""
        text = self.cleaned_data["steps"].strip()
        if not text:
            return None
        parts = [part.strip() for part in text.split(",")]
        if not all(part.isascii() and part.isdigit() for part in parts):
            raise forms.ValidationError(
                "Give the steps as whole numbers separated by commas, e.g. 1, 10, 100, 1000."
            )
        return [int(part) for part in parts]

    def clean_edited_headers(self):
        """The headers asked for, as a dict; None when left as prefilled, or empty."""
        text = self.cleaned_data["edited_headers"]
        if not text:
            return None
        text = _browser_text(text, self.original_headers)
        if text == self.original_headers:
            return None
        try:
            headers = json_strict(text)
        except (ValueError, RecursionError) as exc:
            said = (
                f"{exc.msg} at line {exc.lineno}, column {exc.colno}"
                if hasattr(exc, "lineno")
                else "it cannot be read"
            )
            raise forms.ValidationError(f"The headers are not valid JSON: {said}.") from None
        if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
            raise forms.ValidationError(
                'The headers are a JSON object of names to text values: {"x-trace": "abc"}.'
            )
        return headers

    def clean_patch(self):
        """The patch's operations, checked; None when there is none."""
        text = self.cleaned_data["patch"]
        if not text.strip():
            return None
        try:
            return patch_parse(text)
        except PatchRefused as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean(self):
        data = super().clean()
        action = data.get("action")
        if action is not None:
            self._refuse_what_does_not_apply(data, action)
        if action == ActionRequest.REPROCESS:
            if data.get("progressive") and not data.get("steps"):
                self.add_error("steps", "A progressive redrive needs its steps.")
            self._clean_redrive_target(data)
            self._clean_json_body(data)
        else:
            data["redrive_target"] = None
        return data

    def _chosen(self, data):
        """The options the person chose, by name: those whose value changes something. A page
        without script sends every field, each with what it was offered: the default "send to"
        (its origin), the steps left as offered without "progressive", the body as it was
        prefilled; none of those is a choice."""
        chosen = {
            "target_queue": data.get("target_queue"),
            "send_to": data.get("send_to") not in (None, "", "origin"),
            "rate_limit": data.get("rate_limit") is not None,
            "canary": bool(data.get("canary")),
            "progressive": data.get("progressive"),
            "error_code": data.get("error_code"),
            "error_description": data.get("error_description"),
            "edited_headers": data.get("edited_headers") is not None,
            "patch": data.get("patch") is not None,
        }
        if "edited_body" in self.fields:
            chosen["edited_body"] = (
                normalize_edited_body(data.get("edited_body") or "", self.original_body) is not None
            )
        return [name for name, value in chosen.items() if value]

    def _refuse_what_does_not_apply(self, data, action):
        # Said above the form, not beside the field: the page hides the fields of the other
        # actions, and an error beside a hidden field is an error nobody reads.
        refused = [option_refused(name, action) for name in self._chosen(data)]
        for said in dict.fromkeys(said for said in refused if said):
            self.add_error(None, said)

    def _clean_json_body(self, data):
        if "edited_body" not in self.fields or "edited_body" in self.errors:
            return
        edited = normalize_edited_body(data.get("edited_body") or "", self.original_body)
        if edited is None:
            return
        said = json_refused(edited, self.content_type)
        if said:
            self.add_error("edited_body", said)

    # What each "send to" choice takes from the form, and the field that shows its errors.
    _SEND_TO = {
        "exchange": (("exchange", "target_exchange"), ("routing_key", "target_routing_key")),
        "subject": (("subject", "target_subject"),),
        "stream": (("stream", "target_stream"),),
        "url": (("url", "target_url"),),
    }

    def _clean_redrive_target(self, data):
        data["redrive_target"] = None
        # The fields of the places not chosen are not read (request_form.js hides them).
        chosen = self._SEND_TO.get(data.get("send_to") or "origin")
        if chosen is None:
            return
        if any(field in self.errors for _, field in chosen):
            return
        target = {key: data.get(field) or "" for key, field in chosen}
        try:
            data["redrive_target"] = redrive_target_clean(target)
        except forms.ValidationError as exc:
            said = " ".join(exc.messages)
            field = next((f for key, f in chosen if f"redrive_target.{key} " in said), None)
            self.add_error(field or chosen[-1][1], said)
            return
        if data["redrive_target"] is None:
            self.add_error(chosen[-1][1], "Name where to send the messages, or choose its origin.")

    def redrive_target(self):
        """The request's own redrive target, None for the origin."""
        return self.cleaned_data.get("redrive_target")

    def execution_options(self):
        """The steps and threshold for the service: only when the redrive is progressive (the
        fields keep their offered defaults otherwise)."""
        data = self.cleaned_data
        if not data.get("progressive"):
            return {}
        return {"steps": data["steps"], "refailure_threshold": data["refailure_threshold"]}

    def __init__(
        self,
        *args,
        with_body=False,
        with_patch=False,
        redrive_sources=(),
        original_body=None,
        original_headers=None,
        content_type="",
        previewing=False,
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        if previewing:
            # A bulk edit's preview needs its patch; the why comes when it is sent.
            self.fields["comment"].required = False
        # The body and the editable headers as prefilled (None when none was), and the
        # message's content type: an edit of a JSON message's body must parse.
        self.original_body = original_body
        self.original_headers = original_headers
        self.content_type = content_type
        queues = Queue.objects.order_by("name").values_list("name", flat=True)
        # A broker source's redrive queue sends its messages back where they died: say so.
        back = {
            s.redrive_queue.name: f"{s.redrive_queue.name}: back to {s.origin_words} "
            f"(source {s.name})"
            for s in redrive_sources
        }
        self.fields["target_queue"].choices = [
            ("", "its own queue"),
            *back.items(),
            *((q, q) for q in queues if q not in back),
        ]
        if not with_patch:
            del self.fields["patch"]
            del self.fields["previewed"]
        if original_headers is None:
            del self.fields["edited_headers"]
        if not with_body:
            del self.fields["edited_body"]
        else:
            body = self.fields["edited_body"].widget.attrs
            if json_content_type(content_type):
                # request_form.js parses it before the form is sent.
                body["data-json"] = content_type
            body["aria-describedby"] = "edited-body-check"


class RequestFilterForm(LimitedForm):
    WAITING, MINE = "waiting", "mine"

    status = forms.ChoiceField(required=False, choices=[("", "any"), *ActionRequest.STATUSES])
    show = forms.ChoiceField(
        required=False,
        choices=[("", "everyone's"), (WAITING, "waiting for my approval"), (MINE, "mine")],
    )
    before = forms.IntegerField(
        required=False, min_value=1, max_value=MAX_ID, widget=forms.HiddenInput
    )


class NotificationFilterForm(NoAutocompleteForm):
    sender = forms.CharField(required=False, max_length=300)
    conversation = forms.CharField(required=False, max_length=200)
    message_id = forms.CharField(required=False, max_length=TEXT_MAX, label="message id")
    before = forms.CharField(required=False, max_length=TEXT_MAX, widget=forms.HiddenInput)

    def filters(self):
        data = self.cleaned_data
        return {name: data[name] for name in ("sender", "conversation", "message_id") if data[name]}


class QuickActionForm(NoAutocompleteForm):
    """The short confirmation of a one-click action on a group or a filter: a comment if one wants
    (a plain one is written otherwise), and for an end with error what the sender is told."""

    comment = forms.CharField(
        required=False,
        max_length=COMMENT_MAX,
        widget=forms.Textarea(attrs={"rows": 2}),
        label="comment (optional)",
        help_text="Why, for the approver and the audit trail; if empty, the request says what "
        "was clicked where.",
    )
    error_code = forms.CharField(max_length=ERROR_CODE_MAX, label="error code")
    error_description = forms.CharField(
        max_length=ERROR_DESCRIPTION_MAX,
        widget=forms.Textarea(attrs={"rows": 3}),
        label="error description",
        help_text="Sent to each message's sender with the code.",
    )

    def __init__(self, *args, ends=False, **kwargs):
        super().__init__(*args, **kwargs)
        if not ends:
            del self.fields["error_code"]
            del self.fields["error_description"]
