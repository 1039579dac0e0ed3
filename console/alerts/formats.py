"""What a webhook receives for an alert, in its service's format: our own signed JSON (generic),
a Slack incoming webhook's message (Block Kit), a Microsoft Teams workflow's message (an Adaptive
Card), a PagerDuty Events API v2 event. Pure: an alert in, a dict out; console.alerts.sending
posts it.

Titles and texts hold what attackers wrote (queue names, failure reasons, exception texts), so
they are inert in every format: in Slack, `&`, `<` and `>` are escaped (no link, mention or
channel name can be written) and mrkdwn is `verbatim` (nothing is linked or parsed by itself);
in Teams, whose TextBlocks render Markdown, Markdown's characters are escaped; in both, an
address is broken with a word joiner so that no client turns it into a link, and invisible or
bidi characters are shown as markers (console.textshown). PagerDuty's fields are plain text.
Every text is cut to its service's limit, ending in an ellipsis."""

import re
from urllib.parse import urlsplit

from django.conf import settings

from console.alerts import events as E
from console.alerts.models import Webhook
from console.textshown import controls_marked

PAGERDUTY_URL = "https://events.pagerduty.com/v2/enqueue"
ELLIPSIS = "…"
OPEN = "Open in Antidote"

# Slack's limits (Block Kit: the header's plain text, a section's text, each of its fields and
# at most ten of them) and PagerDuty's (the summary; the dedup key).
SLACK_HEADER, SLACK_TEXT, SLACK_FIELD, SLACK_FIELDS = 150, 3000, 2000, 10
PAGERDUTY_SUMMARY, PAGERDUTY_DEDUP_KEY = 1024, 255
# Teams takes a message of up to about 28 KB: the text is kept well within it.
TEAMS_TITLE, TEAMS_TEXT, TEAMS_FACT = 300, 3000, 500
# PagerDuty's custom details are shown whole: a long text is cut there too.
PAGERDUTY_TEXT = 10_000

# An Adaptive Card's colours by severity; a closing event is good news.
_TEAMS_COLOUR = {E.CRITICAL: "Attention", E.ERROR: "Attention", E.WARNING: "Warning"}


def absolute(link):
    """A console path as an address people can open (CONSOLE_URL)."""
    return f"{settings.CONSOLE_URL}{link}" if link else settings.CONSOLE_URL + "/"


def body(delivery, secret):
    """The JSON `delivery`'s webhook receives. `secret`: PagerDuty's routing key (the others
    ignore it; the generic format's signature is a header)."""
    build = {
        Webhook.GENERIC: generic,
        Webhook.SLACK: slack,
        Webhook.TEAMS: teams,
        Webhook.PAGERDUTY: pagerduty,
    }[delivery.webhook.format]
    return build(delivery, secret)


def fit(text, limit, escape=str):
    """`escape(text)` within `limit` characters: cut, before escaping (never in the middle of
    an escape), with an ellipsis."""
    out = escape(text)
    if len(out) <= limit:
        return out
    # The longest start of the text that fits with the ellipsis (escapes lengthen it unevenly).
    low, high = 0, min(len(text), limit)
    while low < high:
        middle = (low + high + 1) // 2
        if len(escape(text[:middle])) + len(ELLIPSIS) <= limit:
            low = middle
        else:
            high = middle - 1
    return escape(text[:low]) + ELLIPSIS


def _unlinked(text):
    # A word joiner inside "://" and after "www": nothing a client recognizes as an address.
    return text.replace("://", ":\u2060//").replace("www.", "www\u2060.")


def _facts(alert):
    """(label, value) pairs a chat message shows beside the text."""
    facts = [("Event", E.LABELS[alert.kind]), ("Severity", E.SEVERITY[alert.kind])]
    if alert.queue:
        facts.append(("Queue", alert.queue))
    facts.append(("Raised", f"{alert.created_at:%Y-%m-%d %H:%M:%S} UTC"))
    if alert.repeats:
        facts.append(("Raised again", f"{alert.repeats} time(s) since"))
    return facts


def generic(delivery, secret=None):
    """Our own JSON, signed in a header. `text` is Slack's (and Mattermost's) message field."""
    alert = delivery.alert
    link = absolute(alert.link)
    return {
        "delivery": delivery.id,
        "alert": alert.id,
        "event": alert.kind,
        "title": alert.title,
        "text": f"{alert.title}: {alert.text} <{link}>",
        "link": link,
        "queue": alert.queue,
        "details": alert.details,
        "repeats": alert.repeats,
        "created_at": alert.created_at.isoformat(),
    }


# --- Slack ---------------------------------------------------------------------------------------


def slack_escaped(text):
    """Slack's three control characters as entities: what remains is text, never a link, a
    mention (`<!channel>`, `<@U…>`) or a channel (`<#C…>`)."""
    text = controls_marked(text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _slack_unlinked(text):
    return _unlinked(slack_escaped(text))


def _mrkdwn(text):
    # verbatim: Slack links no address, channel name or mention of its own accord.
    return {"type": "mrkdwn", "text": text, "verbatim": True}


def slack(delivery, secret=None):
    """An incoming webhook's message: `text` for notifications, and blocks: the title as a
    header, the text with the facts as fields, a button to the console."""
    alert = delivery.alert
    fields = [
        _mrkdwn(f"*{label}*\n" + fit(value, SLACK_FIELD - len(label) - 3, slack_escaped))
        for label, value in _facts(alert)[:SLACK_FIELDS]
    ]
    return {
        "text": fit(alert.title, SLACK_TEXT, _slack_unlinked),
        "blocks": [
            {
                "type": "header",
                "text": {
                    "type": "plain_text",
                    "text": fit(alert.title, SLACK_HEADER, _slack_unlinked),
                    "emoji": False,
                },
            },
            {
                "type": "section",
                "text": _mrkdwn(fit(alert.text or alert.title, SLACK_TEXT, slack_escaped)),
                "fields": fields,
            },
            {
                "type": "actions",
                "elements": [
                    {
                        "type": "button",
                        "text": {"type": "plain_text", "text": OPEN},
                        "url": absolute(alert.link),
                        "action_id": "open-in-antidote",
                    }
                ],
            },
        ],
        "unfurl_links": False,
        "unfurl_media": False,
    }


# --- Microsoft Teams -----------------------------------------------------------------------------

# The Markdown that Adaptive Cards act on (emphasis, links, and in Teams strike-through and
# code), and a list's marker at a line's start: each escaped with a backslash. HTML and Teams'
# <at> mentions are not rendered in a TextBlock.
_MARKDOWN = re.compile(r"([\\`*_~\[\]()])")
_LIST_ITEM = re.compile(r"^(\s*)([-+]|\d+\.)(?=\s)", re.MULTILINE)


def teams_escaped(text):
    text = _MARKDOWN.sub(r"\\\1", _unlinked(controls_marked(text)))
    return _LIST_ITEM.sub(lambda m: m[1] + "\\" + m[2], text)


def teams(delivery, secret=None):
    """A Teams workflow's message: one Adaptive Card (1.4) with the title, the text, the facts
    and a button to the console."""
    alert = delivery.alert
    severity = E.SEVERITY[alert.kind]
    closing = E.INCIDENT[alert.kind][1] == E.RESOLVE
    card = {
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": "1.4",
        "body": [
            {
                "type": "TextBlock",
                "text": fit(alert.title, TEAMS_TITLE, teams_escaped),
                "size": "Large",
                "weight": "Bolder",
                "color": "Good" if closing else _TEAMS_COLOUR.get(severity, "Default"),
                "wrap": True,
            },
            {
                "type": "TextBlock",
                "text": fit(alert.text or alert.title, TEAMS_TEXT, teams_escaped),
                "wrap": True,
            },
            {
                "type": "FactSet",
                "facts": [
                    {"title": label, "value": fit(value, TEAMS_FACT, teams_escaped)}
                    for label, value in _facts(alert)
                ],
            },
        ],
        "actions": [{"type": "Action.OpenUrl", "title": OPEN, "url": absolute(alert.link)}],
        "msteams": {"width": "Full"},
    }
    return {
        "type": "message",
        "attachments": [
            {
                "contentType": "application/vnd.microsoft.card.adaptive",
                "contentUrl": None,
                "content": card,
            }
        ],
    }


# --- PagerDuty -----------------------------------------------------------------------------------


def dedup_key(alert):
    """The incident `alert` opens or closes (events.INCIDENT), the same for both:
    `antidote:queue-disabled:orders` for the queue orders disabled, and enabled again."""
    name, _action, about = E.INCIDENT[alert.kind]
    if about is None:
        return f"antidote:{name}"
    subject = alert.queue if about == "queue" else alert.details.get(about)
    if subject in (None, ""):
        subject = f"alert-{alert.id}"  # nothing names it: an incident of its own
    return f"antidote:{name}:{subject}"[:PAGERDUTY_DEDUP_KEY]


def pagerduty(delivery, routing_key):
    """An Events API v2 event: a trigger with its payload, or a resolve, which needs only the
    incident's dedup key."""
    alert = delivery.alert
    event = {
        "routing_key": routing_key,
        "event_action": E.INCIDENT[alert.kind][1],
        "dedup_key": dedup_key(alert),
    }
    if event["event_action"] == E.RESOLVE:
        return event
    link = absolute(alert.link)
    payload = {
        "summary": fit(alert.title, PAGERDUTY_SUMMARY),
        "source": urlsplit(settings.CONSOLE_URL).hostname or "antidote",
        "severity": E.SEVERITY[alert.kind],
        "timestamp": alert.created_at.isoformat(),
        "class": alert.kind,
        "custom_details": {
            "event": E.LABELS[alert.kind],
            "text": fit(alert.text, PAGERDUTY_TEXT),
            "queue": alert.queue,
            "details": alert.details,
            "repeats": alert.repeats,
            "alert": alert.id,
        },
    }
    if alert.queue:
        payload["component"] = alert.queue
    return {
        **event,
        "payload": payload,
        "client": "Antidote",
        "client_url": link,
        "links": [{"href": link, "text": OPEN}],
    }
