""" "Why do these fail" on a failure group's page and on its query's page, for templates that
know nothing of lake queries: `{% load why %}`, then

- `{% why_panel group %}`: the newest such query of the group the user may see (its status, or
  its findings), and the button that asks again, for those who may;
- `{{ finding|finding_said }}`: one finding in a sentence ("`currency` is absent in 97 % of these
  failures (194 of 200) and 0.2 % of deliveries (4 of 2,000)");
- `{{ finding|finding_patch }}`: for a finding about a body's field, the JSON Patch a bulk edit of
  the group starts from (workers.jobs.decisions.body_edits.patch_skeleton), as JSON text; "" for
  the others.

Field names, values and header values come from messages: attacker-controlled, escaped here
(format_html), never marked safe as they are."""

import json

from django import template
from django.utils.html import format_html

from console.lakequery.models import LakeQuery
from console.lakequery.selectors import why_latest
from console.permissions import (
    MAKE_REQUESTS,
    PROPOSE_RULES,
    RUN_QUERIES,
    VIEW_BODY,
    VIEW_GROUPS,
    VIEW_MESSAGES,
    VIEW_QUERIES,
    VIEW_RULES,
)
from workers.jobs.decisions.body_edits import patch_skeleton

register = template.Library()

# What each kind of trait is said of.
_SUBJECTS = {
    "field": "the field {}",
    "value": "the field {}",
    "header": "the header {}",
    "header_value": "the header {}",
    "content_type": "the content type",
    "sender": "the producer (sender)",
    "size": "the body's size",
    "not_json": "the body",
}


def _share(part, whole):
    # To one decimal below 1 % and above 99 %, whole elsewhere.
    if not whole or not part:
        return "0 %"
    share = 100 * part / whole
    return f"{share:.1f} %" if share < 1 or share > 99 else f"{share:.0f} %"


def _what(finding):
    kind, value = finding["kind"], finding.get("value")
    if finding.get("absent"):
        return "is absent"
    if kind in ("field", "header"):
        return "is present"
    if kind == "not_json":
        return "is not a JSON object"
    if kind == "size":
        power = int(str(value).removeprefix("2^")) if str(value).startswith("2^") else None
        if power is None:
            return "is unknown"
        return format_html("is {} to {} bytes", f"{2**power:,}", f"{2 ** (power + 1) - 1:,}")
    return format_html("is <code>{}</code>", value if value != "" else "(empty)")


@register.filter
def finding_said(finding):
    subject = _SUBJECTS.get(finding["kind"], "{}")
    name = format_html("<code>{}</code>", finding["name"]) if "{}" in subject else ""
    return format_html(
        "{} {} in {} of these failures ({} of {}) and {} of deliveries ({} of {})",
        format_html(subject, name) if name else subject,
        _what(finding),
        _share(finding["failures"], finding["failures_total"]),
        f"{finding['failures']:,}",
        f"{finding['failures_total']:,}",
        _share(finding["deliveries"], finding["deliveries_total"]),
        f"{finding['deliveries']:,}",
        f"{finding['deliveries_total']:,}",
    )


@register.filter
def finding_patch(finding):
    skeleton = patch_skeleton(finding)
    return json.dumps(skeleton) if skeleton is not None else ""


@register.inclusion_tag("lakequery/_why_panel.html", takes_context=True)
def why_panel(context, group):
    user = context["request"].user
    may_see = user.has_perms([VIEW_QUERIES, VIEW_BODY, VIEW_GROUPS])
    return {
        "request": context["request"],
        "csrf_token": context.get("csrf_token"),
        "group": group,
        "shown": may_see,
        "query": why_latest(user=user, fingerprint=group.fingerprint) if may_see else None,
        "may_ask": may_see and user.has_perm(RUN_QUERIES),
        # A finding about a body's field offers a bulk edit of the group to who may ask for one.
        "may_edit": user.has_perms([MAKE_REQUESTS, VIEW_MESSAGES]),
        # Every finding offers a standing rule of the group (console.rules) to who may propose one.
        "may_rule": user.has_perms([PROPOSE_RULES, VIEW_RULES]),
        "done": LakeQuery.DONE,
    }
