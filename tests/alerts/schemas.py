"""JSON Schemas of what Slack, Microsoft Teams and PagerDuty accept, written from their own
documentation, for the parts the alerts use. Strict where the services are (required fields,
enumerations, length limits) and closed (no field they do not know), so a payload that passes
here is one the service takes.

- Slack: an incoming webhook's message (docs.slack.dev, "Sending messages using incoming
  webhooks") with Block Kit's header, section and actions blocks, text objects and button
  element ("Reference: blocks", "composition objects", "block elements"): a text object's text
  is 1 to 3000 characters, a header's 150, a section's fields at most 10 of 2000 each, a
  button's text 75, its url 3000, an action_id 255.
- Teams: a Workflows ("Post to a channel when a webhook request is received") message: type
  "message" and attachments of content type application/vnd.microsoft.card.adaptive whose
  content is an Adaptive Card (adaptivecards.io, schema 1.4+): TextBlock, FactSet,
  Action.OpenUrl, with their enumerations.
- PagerDuty: an Events API v2 event (developer.pagerduty.com, "Send an Alert Event" and "Send a
  Resolve Event"): a 32-character routing key; event_action trigger, acknowledge or resolve; a
  dedup_key of at most 255 characters, required to resolve; a trigger's payload with summary (at
  most 1024), source and severity (critical, error, warning, info) required."""

import jsonschema

_URL = {"type": "string", "pattern": "^https?://[^\\s]+$", "maxLength": 3000}
_STRING = {"type": "string"}
_BOOLEAN = {"type": "boolean"}


def _closed(required, **properties):
    """An object with these properties and no other, the `required` ones required."""
    return {
        "type": "object",
        "required": list(required),
        "additionalProperties": False,
        "properties": properties,
    }


def _array(items, **limits):
    return {"type": "array", "items": items, **limits}


def _text(kind, max_length):
    text = {"type": "string", "minLength": 1, "maxLength": max_length}
    if kind == "plain_text":
        return _closed(["type", "text"], type={"const": kind}, text=text, emoji=_BOOLEAN)
    return _closed(["type", "text"], type={"const": kind}, text=text, verbatim=_BOOLEAN)


def _texts(max_length):
    return {"oneOf": [_text("plain_text", max_length), _text("mrkdwn", max_length)]}


_BLOCK_ID = {"type": "string", "maxLength": 255}
_SLACK_HEADER = _closed(
    ["type", "text"], type={"const": "header"}, text=_text("plain_text", 150), block_id=_BLOCK_ID
)
_SLACK_SECTION = {
    **_closed(
        ["type"],
        type={"const": "section"},
        text=_texts(3000),
        fields=_array(_texts(2000), minItems=1, maxItems=10),
        block_id=_BLOCK_ID,
    ),
    "anyOf": [{"required": ["text"]}, {"required": ["fields"]}],
}
_SLACK_BUTTON = _closed(
    ["type", "text"],
    type={"const": "button"},
    text=_text("plain_text", 75),
    action_id={"type": "string", "maxLength": 255},
    url=_URL,
    value={"type": "string", "maxLength": 2000},
    style={"enum": ["primary", "danger"]},
)
_SLACK_ACTIONS = _closed(
    ["type", "elements"],
    type={"const": "actions"},
    elements=_array(_SLACK_BUTTON, minItems=1, maxItems=25),
    block_id=_BLOCK_ID,
)
SLACK_MESSAGE = {
    **_closed(
        [],
        text={"type": "string", "minLength": 1, "maxLength": 40000},
        blocks=_array({"oneOf": [_SLACK_HEADER, _SLACK_SECTION, _SLACK_ACTIONS]}, maxItems=50),
        mrkdwn=_BOOLEAN,
        unfurl_links=_BOOLEAN,
        unfurl_media=_BOOLEAN,
        thread_ts=_STRING,
    ),
    "anyOf": [{"required": ["text"]}, {"required": ["blocks"]}],
}

_SPACING = ["Default", "None", "Small", "Medium", "Large", "ExtraLarge"]
_TEXT_BLOCK = _closed(
    ["type", "text"],
    type={"const": "TextBlock"},
    text=_STRING,
    color={"enum": ["Default", "Dark", "Light", "Accent", "Good", "Warning", "Attention"]},
    size={"enum": ["Default", "Small", "Medium", "Large", "ExtraLarge"]},
    weight={"enum": ["Default", "Lighter", "Bolder"]},
    isSubtle=_BOOLEAN,
    wrap=_BOOLEAN,
    maxLines={"type": "integer", "minimum": 1},
    spacing={"enum": _SPACING},
    separator=_BOOLEAN,
    id=_STRING,
)
_FACT_SET = _closed(
    ["type", "facts"],
    type={"const": "FactSet"},
    facts=_array(_closed(["title", "value"], title=_STRING, value=_STRING)),
    id=_STRING,
)
_OPEN_URL = _closed(
    ["type", "url"],
    type={"const": "Action.OpenUrl"},
    url=_URL,
    title=_STRING,
    id=_STRING,
    style={"enum": ["default", "positive", "destructive"]},
)
ADAPTIVE_CARD = _closed(
    ["type", "version"],
    **{"$schema": _STRING},
    type={"const": "AdaptiveCard"},
    # Teams renders 1.4 everywhere (1.5 on desktop and web): ask no more than it has.
    version={"type": "string", "pattern": "^1\\.[0-5]$"},
    body=_array({"oneOf": [_TEXT_BLOCK, _FACT_SET]}),
    actions=_array(_OPEN_URL),
    msteams=_closed([], width={"enum": ["Full"]}),
    fallbackText=_STRING,
)
TEAMS_MESSAGE = _closed(
    ["type", "attachments"],
    type={"const": "message"},
    attachments=_array(
        _closed(
            ["contentType", "content"],
            contentType={"const": "application/vnd.microsoft.card.adaptive"},
            contentUrl={"type": ["string", "null"]},
            content=ADAPTIVE_CARD,
        ),
        minItems=1,
    ),
)

_PAGERDUTY_PAYLOAD = _closed(
    ["summary", "source", "severity"],
    summary={"type": "string", "minLength": 1, "maxLength": 1024},
    source={"type": "string", "minLength": 1},
    severity={"enum": ["critical", "error", "warning", "info"]},
    # ISO 8601, with its offset.
    timestamp={
        "type": "string",
        "pattern": "^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d(\\.\\d+)?(Z|[+-]\\d\\d:\\d\\d)$",
    },
    component=_STRING,
    group=_STRING,
    **{"class": _STRING},
    custom_details={"type": "object"},
)
PAGERDUTY_EVENT = {
    **_closed(
        ["routing_key", "event_action"],
        routing_key={"type": "string", "minLength": 32, "maxLength": 32},
        event_action={"enum": ["trigger", "acknowledge", "resolve"]},
        dedup_key={"type": "string", "minLength": 1, "maxLength": 255},
        payload=_PAGERDUTY_PAYLOAD,
        client=_STRING,
        client_url=_URL,
        links=_array(_closed(["href"], href=_URL, text=_STRING)),
        images={"type": "array"},
    ),
    "allOf": [
        {
            "if": {"properties": {"event_action": {"const": "trigger"}}},
            "then": {"required": ["payload"]},
        },
        {
            "if": {"properties": {"event_action": {"enum": ["acknowledge", "resolve"]}}},
            "then": {"required": ["dedup_key"]},
        },
    ],
}

BY_FORMAT = {"slack": SLACK_MESSAGE, "teams": TEAMS_MESSAGE, "pagerduty": PAGERDUTY_EVENT}


def check(format_name, payload):
    """Raise jsonschema's ValidationError, the one that names what is wrong most closely,
    unless `payload` is valid."""
    schema = BY_FORMAT[format_name]
    jsonschema.Draft202012Validator.check_schema(schema)
    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(schema).iter_errors(payload)
    )
    if error is not None:
        raise error
