"""What a person types about standing rules: a new rule (its kind's parameters only count), and
the comment of an approval, a rejection, a withdrawal or a removal. The services check it all
again (console.rules.params)."""

from django import forms

from console.decisions.services import MAX_CANARY
from console.forms import LimitedForm
from console.queues.models import Queue
from console.rules.models import (
    ATTEMPTS_MAX,
    COMMENT_MAX,
    DAYS_MAX,
    DELAY_MAX_SECONDS,
    KINDS,
    NAME_MAX,
)
from console.rules.params import PARAMETERS

STEPS_TEXT_MAX = 200


def _queues():
    return [("", "—")] + [
        (n, n) for n in Queue.objects.order_by("name").values_list("name", flat=True)
    ]


class RuleForm(LimitedForm):
    name = forms.CharField(
        max_length=NAME_MAX,
        help_text="Letters, digits, dots, dashes, underscores. A newer rule of the same name, "
        "once approved, replaces the active one.",
    )
    kind = forms.ChoiceField(choices=KINDS, widget=forms.RadioSelect)
    comment = forms.CharField(
        max_length=COMMENT_MAX, widget=forms.Textarea(attrs={"rows": 3}), label="why"
    )
    queue = forms.ChoiceField(
        required=False,
        label="queue",
        help_text="Archive: the queue whose messages it fails. Redirect: the queue whose "
        "reprocesses it sends elsewhere.",
    )
    group = forms.CharField(
        required=False, max_length=64, label="failure group", help_text="Its fingerprint."
    )
    exception_type = forms.CharField(
        required=False, max_length=200, label="exception", help_text="Archive: or (and) this type."
    )
    days = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=DAYS_MAX,
        help_text="Archive: quarantined and untouched at least this many days.",
    )
    to_queue = forms.ChoiceField(required=False, label="to queue")
    delay_seconds = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=DELAY_MAX_SECONDS,
        label="delay (seconds)",
        help_text="Auto-retry: a new failure is reprocessed this long after its quarantine.",
    )
    max_attempts = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=ATTEMPTS_MAX,
        label="at most (retries a message)",
    )
    steps = forms.CharField(
        required=False,
        max_length=STEPS_TEXT_MAX,
        help_text=f"Auto-retry: reprocess in steps of so many messages (each up to {MAX_CANARY:,}"
        "), then the rest, as 1, 10, 100; empty: all at once.",
    )
    refailure_threshold = forms.FloatField(
        required=False,
        min_value=0,
        max_value=100,
        label="re-failure threshold (%)",
        help_text="The next step goes only when at most this share of a step failed again; "
        "otherwise the retry stops, and the rule with it.",
    )

    # Which fieldset each parameter's field is shown in (the page shows the chosen kind's).
    FIELDSETS = PARAMETERS

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["queue"].choices = _queues()
        self.fields["to_queue"].choices = _queues()

    def clean_steps(self):
        text = self.cleaned_data["steps"].strip()
        if not text:
            return None
        try:
            return [int(part) for part in text.replace(",", " ").split()]
        except ValueError:
            raise forms.ValidationError("the steps are whole numbers, as 1, 10, 100") from None

    def params(self):
        """The chosen kind's parameters, as the services take them."""
        data = self.cleaned_data
        return {name: data.get(name) for name in PARAMETERS[data["kind"]]}
