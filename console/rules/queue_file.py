"""`rules:` in a queue file (manage.py load_queues FILE --proposer NAME): each entry is proposed
in the proposer's name, for a second person to approve on screen, unless the same rule (name,
kind and parameters) is active or waiting already. A rule missing from the file is left as it
is: removing one is a person's act, on screen or through the API. This module hands its loader
to console.queues (console.queues.rules_file) when Django starts."""

from django.core.exceptions import PermissionDenied, ValidationError

from console.queues.rules_file import provide
from console.rules.models import StandingRule
from console.rules.params import EVERY_PARAMETER, rule_fields, rule_parameters
from console.rules.services import rule_propose

PROPOSED = "proposed"
UNCHANGED = "unchanged"
_KEYS = {"name", "kind", "comment", *EVERY_PARAMETER}


def _label(index, entry):
    name = entry.get("name") if isinstance(entry, dict) else None
    return (
        f"rule {name!r} (entry {index + 1})"
        if isinstance(name, str) and name
        else f"rule entry {index + 1}"
    )


def _same(rule, fields):
    return rule.kind == fields["kind"] and rule_parameters(rule) == {
        name: fields[name] for name in rule_parameters(rule)
    }


def _checked(entries):
    """[(label, fields)] of the file's entries, or the problems, each naming its rule."""
    if not isinstance(entries, list):
        return [], ["rules: expected a list of rules"]
    checked, problems = [], []
    for index, entry in enumerate(entries):
        label = _label(index, entry)
        if not isinstance(entry, dict):
            problems.append(f"{label}: must be a mapping of the rule's name, kind and parameters")
            continue
        unknown = sorted(set(map(str, entry)) - _KEYS)
        if unknown:
            problems.append(f"{label}: unknown key(s) {', '.join(unknown)}")
            continue
        params = {k: v for k, v in entry.items() if k not in ("name", "kind", "comment")}
        try:
            fields = rule_fields(
                name=entry.get("name"),
                kind=entry.get("kind"),
                comment=entry.get("comment"),
                params=params,
            )
        except ValidationError as exc:
            problems += [f"{label}: {message}" for message in exc.messages]
            continue
        checked.append((label, params, fields))
    names = [fields["name"] for _, _, fields in checked]
    problems += [
        f"rule {n!r}: named twice in the file"
        for n in sorted({n for n in names if names.count(n) > 1})
    ]
    return checked, problems


def rules_file_load(entries, *, proposer, actor):
    """(results [(name, status)], problems): see console.queues.rules_file.provide."""
    checked, problems = _checked(entries)
    if problems:
        return [], problems
    results = []
    for label, params, fields in checked:
        standing = StandingRule.objects.filter(
            name=fields["name"], status__in=(StandingRule.ACTIVE, StandingRule.PROPOSED)
        )
        if any(_same(rule, fields) for rule in standing):
            results.append((fields["name"], UNCHANGED))
            continue
        try:
            rule_propose(
                actor=proposer,
                name=fields["name"],
                kind=fields["kind"],
                comment=fields["comment"],
                params=params,
                from_file=True,
                recorded_by=actor,
            )
        except (ValidationError, PermissionDenied) as exc:
            messages = exc.messages if isinstance(exc, ValidationError) else [str(exc)]
            return [], [f"{label}: {message}" for message in messages]
        results.append((fields["name"], PROPOSED))
    return results, []


provide(rules_file_load)
