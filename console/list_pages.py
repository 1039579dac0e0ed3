"""A list page that a GET form filters and `before` pages (the requests, the runs, the messages):
one way to answer it, so that each page only says what it lists, and one way to say what of its
query it did not understand."""

import difflib
import re

from django import forms
from django.contrib import messages
from django.http import QueryDict
from django.shortcuts import render

# Never a filter: the form's own token, when a list is posted (the message list's "select all").
NOT_FILTERS = ("csrfmiddlewaretoken",)
SHOWN_MAX = 80  # of a value not understood, what the page repeats


def _label(form, name):
    """A field's label as the page shows it, without its parenthesis ("failed since (UTC)")."""
    return re.sub(r"\s*\(.*\)$", "", str(form[name].label)).lower() or name


def _hint(field, errors):
    """What to give instead, for a value the field could not read."""
    if isinstance(field, forms.DateTimeField | forms.DateField):
        return "use a date like 2026-12-07 or 2026-12-07 14:30 (UTC)"
    if isinstance(field, forms.ChoiceField) and not isinstance(field.widget, forms.HiddenInput):
        values = [str(value) for value, _ in field.choices if value != ""]
        if values and len(values) <= 20:
            return f"not one of the available choices; use one of {', '.join(values)}"
    if isinstance(field, forms.IntegerField):
        low, high = field.min_value, field.max_value
        span = f" from {low} to {high}" if low is not None and high is not None else ""
        return f"use a whole number{span}"
    return " ".join(str(error) for error in errors).rstrip(".")


def _shown(value):
    value = str(value)
    return value if len(value) <= SHOWN_MAX else value[: SHOWN_MAX - 1] + "\u2026"


def _unknown(form, name, value):
    near = difflib.get_close_matches(
        name.lower().replace("-", "_"),
        [*form.fields, *(_label(form, f).replace(" ", "_") for f in form.fields)],
        n=1,
        cutoff=0.6,
    )
    said = f"Not understood: {name}={_shown(value)!r}: this list has no such filter"
    if near:
        field = next(f for f in form.fields if near[0] in (f, _label(form, f).replace(" ", "_")))
        said += f"; did you mean {_label(form, field)} ({field}=…)?"
    return said + "."


def understood(request, form_class, data, **kwargs):
    """`form_class` bound to what the page understood of `data`: a value a field cannot read
    (`since=garbage`, a size not offered, a state that is none) and a parameter that is no
    filter (`failed_since`) are dropped, and each is said on the page (a warning message: "Not
    understood: failed since 'garbage': use a date like ..."), so that the list still shows,
    without it. Returns (form, the sentences, the names of the values dropped); the form is
    still not valid when what is wrong is not one value (since after until), as before."""
    form = form_class(data, **kwargs)
    said = [
        _unknown(form, name, data.get(name))
        for name in (data if request.method == "GET" else ())
        if name not in form.fields and name not in NOT_FILTERS
    ]
    bad = []
    if not form.is_valid():
        bad = [name for name in form.errors if name in form.fields and data.get(name) is not None]
        if bad:
            for name in bad:
                value = _shown(data.get(name))
                hint = _hint(form.fields[name], form.errors[name])
                said.append(f"Not understood: {_label(form, name)} {value!r}: {hint}.")
            kept = data.copy()
            for name in bad:
                kept.pop(name, None)
            form = form_class(kept, **kwargs)
            form.is_valid()
    for sentence in said:
        messages.warning(request, sentence)
    return form, said, bad


def filtered_list(request, form_class, template, rows, *, kept, **more):
    """The page `template` with the rows `rows(cleaned data)` finds, and in `query` those of the
    filters `kept` that are set (the pager's links carry them), with the context `more`; or,
    when the filters are not valid, the page with only the form and its errors (400). What it
    did not understand of the query is dropped and said (`understood`); a value dropped is
    answered 400, the list shown all the same."""
    form, _, dropped = understood(request, form_class, request.GET)
    if not form.is_valid():
        return render(request, template, {"form": form}, status=400)
    data = form.cleaned_data
    page = rows(data)
    query = QueryDict(mutable=True)
    for name in kept:
        if data[name]:
            query[name] = data[name]
    context = {"form": form, "page": page, "query": query, **more}
    return render(request, template, context, status=400 if dropped else 200)
