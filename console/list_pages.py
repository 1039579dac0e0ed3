"""A list page that a GET form filters and `before` pages (the requests, the runs): one way to
answer it, so that each page only says what it lists."""

from django.http import QueryDict
from django.shortcuts import render


def filtered_list(request, form_class, template, rows, *, kept, **more):
    """The page `template` with the rows `rows(cleaned data)` finds, and in `query` those of the
    filters `kept` that are set (the pager's links carry them), with the context `more`; or,
    when the filters are not valid, the page with only the form and its errors (400)."""
    form = form_class(request.GET)
    if not form.is_valid():
        return render(request, template, {"form": form}, status=400)
    data = form.cleaned_data
    page = rows(data)
    query = QueryDict(mutable=True)
    for name in kept:
        if data[name]:
            query[name] = data[name]
    return render(request, template, {"form": form, "page": page, "query": query, **more})
