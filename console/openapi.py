"""What the OpenAPI document (/api/schema/, shown at /api/docs/) says besides the operations: its
introduction (who calls how, with a token or signed in, and a first message sent), and what
every operation shares (the 429 of the rates, with its Retry-After). SPECTACULAR_SETTINGS runs
`schema_postprocess` after drf-spectacular's own hooks."""

from console.api import ERRORS

INTRO = """
## Getting started

**1. Who calls.** An *application* calls with a token: it acts through a service account, an
account with the `application` role and nothing else, which never signs in. An administrator
makes the account under **Service tokens** (a second administrator confirms its role), then its
token there, or on the server with `manage.py token_create <account> --name <what for>`. A token
is shown once, expires (90 days by default), and acts only for its service account, with that
account's rights at each call. Send it with every call, as `Authorization: Token <key>`.
A *person* has no token: signed in to the console, their session calls the API (as this page's
"Try it out" does), with their roles' rights.

**2. A first call.** With `ANTIDOTE` set to this console's address (`https://antidote.example.com`)
and `TOKEN` to a service account's token:

```sh
curl -H "Authorization: Token $TOKEN" "$ANTIDOTE/api/v1/poison-list"
```

**3. Send a message** (a service account, into any queue; a person signed in, only into a queue
an administrator let them send into by hand, confirmed by a second one):

```sh
curl -X POST "$ANTIDOTE/api/v1/messages" \\
  -H "Authorization: Token $TOKEN" -H "Content-Type: application/json" \\
  -d '{"id": "order-1", "queue": "orders", "body": "{\\"order\\": 1}",
       "content_type": "application/json"}'
```

It answers `201` with `{"accepted": 1, "duplicates": 0, "refused": 0, "errors": []}`. Sending
the same message again is safe: it is counted as a duplicate. A batch is a list of messages, or
`{"messages": [...]}`.

**4. List messages** (a person signed in, with a role that sees them):
`GET /api/v1/messages?state=NDLV&page_size=50`, with the console's filters, a page at a time
(pass the answer's `next` as `after` for the next page).

## When a call is refused

Every refusal is JSON, `{"detail": "..."}`, saying what is wrong in words; a 400 adds the
messages by field, `{"detail": "...", "errors": {"field": ["..."]}}`. A 401 means no token, or
one that expired, was revoked, or whose account is no longer a service account; a 403 names the
permission missing and the roles that hold it; a 405 names the methods the path takes; a 429
(too many calls: `API_THROTTLE_RATE` per token, 600 a minute by default) comes with
`Retry-After`, in seconds.

## Moved

`GET /api/v1/index/messages` is now `GET /api/v1/messages`, with the same filters and pages.
The old path still answers, with a `Deprecation` header (RFC 9745) and a `Link` to the new one
(`rel="successor-version"`).
"""

RETRY_AFTER = {
    "description": "Seconds to wait before the next call.",
    "schema": {"type": "integer", "minimum": 0},
}


def schema_postprocess(result, generator, request, public):
    """Every operation answers 429 over the caller's rate (console.throttles), with
    Retry-After; the introduction follows the description of settings' SPECTACULAR_SETTINGS."""
    result["info"]["description"] = f"{result['info'].get('description', '')}\n{INTRO}"
    throttled = ERRORS[429]
    for operations in result["paths"].values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            if "429" not in responses:
                responses["429"] = {
                    "description": throttled.description,
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}
                    },
                }
            responses["429"].setdefault("headers", {})["Retry-After"] = RETRY_AFTER
    return result
