"""The words of the console's screens, each in a sentence: the message states, the rules R1-R19
of SEMANTICS.md (in our own words, shorter), and the other words the screens use.

One data structure, read by the glossary page (/help/glossary/) and by its test, which checks that
every state and every rule R1..R19 is here. The state codes come from workers.engine.states, the
one home of the states."""

from workers.engine import states as S

# (code, name, sentence), in lifecycle order.
STATES = (
    (S.TBDL, "to be delivered", "Queued and due: the next delivery run will try it."),
    (
        S.WAIT,
        "waiting",
        "An attempt failed for a passing reason; it is tried again at the time shown.",
    ),
    (
        S.DLNG,
        "delivering",
        "A delivery run holds it and its handler is running (or about to) right now.",
    ),
    (S.DLVD, "delivered", "Its handler processed it. Final."),
    (
        S.NDLV,
        "quarantined",
        "Not delivered: it waits for a person to decide to reprocess it, fail it or end it.",
    ),
    (S.FAIL, "failed", "A person decided it failed for good. Final."),
    (
        S.ENDED,
        "ended with an error",
        "Its conversation was ended with an error and its sender was told. Final.",
    ),
)
assert tuple(code for code, _, _ in STATES) == S.STATES, "one entry per state, in order"

# (id, name, sentence)
RULES = (
    (
        "R1",
        "lifecycle",
        "A new message is to be delivered; while its handler runs it is shown as delivering, "
        "never as still queued; success makes it delivered.",
    ),
    (
        "R2",
        "delivery count",
        "Every failed or crashed attempt adds one to the message's count of failures; a crash "
        "counts against the message whose handler was running, not its batch-mates.",
    ),
    (
        "R3",
        "maximum failed deliveries",
        "When a message has failed as many times as its queue allows (5 unless set), it goes "
        "to the queue's exception destination; 0 means no limit.",
    ),
    (
        "R4",
        "exception destination",
        "Where a message that failed too often goes: quarantine, another queue, or nowhere "
        "(it stays in its queue and is retried after a pause, forever).",
    ),
    (
        "R5",
        "backoff schedule",
        "After a failure a message waits before its next attempt, longer as failures add up, "
        "as the queue's table of delays says; past the table, until the next periodic run.",
    ),
    (
        "R6",
        "permanent failures",
        "A failure the handler calls permanent is not retried: the message is quarantined, or "
        "ended and its sender told, at once.",
    ),
    (
        "R7",
        "crash blacklisting",
        "Messages in flight when a worker crashes go back to be delivered, marked as blacklist "
        "candidates; one caught in a second crash is quarantined (blacklisted).",
    ),
    (
        "R8",
        "batch isolation",
        "When a batch crashes, its unfinished messages are retried in halving batches until "
        "the crashing one is alone; the others are delivered, none quarantined.",
    ),
    (
        "R9",
        "shared poison list",
        "Every quarantined message is on a shared poison list that workers (and outside "
        "applications) check before calling a handler; reprocessing takes it off.",
    ),
    (
        "R10",
        "fatal errors",
        "A handler that ends its own process leaves the message with the reason "
        '"fatal error in handler", and it is treated as a crash.',
    ),
    (
        "R11",
        "disabling a queue",
        "A queue can disable itself after a number of failed attempts in a row: delivery stops "
        "and an alert is raised until an administrator enables it again.",
    ),
    (
        "R12",
        "safe inspection",
        "Looking at a message, its body, headers, reason or history, never changes it.",
    ),
    (
        "R13",
        "decisions on a quarantined message",
        "A person reprocesses it (back to its queue, count reset, optionally with an edited "
        "body), fails it for good, or ends its conversation with an error; each is recorded.",
    ),
    (
        "R14",
        "nothing lost",
        "No message leaves the product without a recorded decision: there is no silent discard.",
    ),
    (
        "R15",
        "retention",
        "Finished messages are kept a number of days (30 unless set), then purged by a job "
        "that records what it purged; the audit trail outlives them.",
    ),
    (
        "R16",
        "queues are independent",
        "A slow, hanging or crashing handler on one queue never holds back another queue.",
    ),
    (
        "R17",
        "who must approve",
        "A second person approves large decisions and every one that edits a body, moves a "
        "message or ends a conversation, and anyone's decisions past an hourly budget.",
    ),
    (
        "R18",
        "what a producer wrote never steers",
        "Bodies, headers and reasons are data: where a message goes is decided only by "
        "configuration and by people's recorded decisions.",
    ),
    (
        "R19",
        "rights are never borrowed",
        "A token acts only for a service account, with its rights at each call; a person's "
        "rights grow only through a second administrator; secrets go only to their owner.",
    ),
)

# (word, sentence): the other words of the screens, alphabetically.
TERMS = (
    (
        "attempt",
        "One call of a queue's handler for one message. The message page counts them, and how "
        "many of them failed.",
    ),
    (
        "audit trail",
        "The record of who did what and when, chained so that a changed or removed entry shows.",
    ),
    (
        "blacklist candidate",
        "A message that was in a batch when a worker crashed: it is delivered alone until it "
        "proves innocent (delivered) or is blacklisted (in flight during a second crash).",
    ),
    (
        "break-glass",
        "Off unless switched on: an approver or administrator executes a waiting request alone, "
        "with a reason; the others are told at once and a second person reviews it afterwards.",
    ),
    (
        "conversation",
        "Messages that belong together; ending one with an error ends the others that are not "
        "finished yet.",
    ),
    (
        "delivery run",
        "One pass of the delivery engine over the messages that are due.",
    ),
    (
        "end with error",
        "A decision: the message and its conversation end, and the sender is told why.",
    ),
    (
        "fail",
        "A decision: the message failed for good and is not tried again.",
    ),
    (
        "failure group",
        "Failures that look alike (same queue, exception and message once numbers and ids are "
        "masked), so that they can be looked at and decided together.",
    ),
    (
        "four eyes",
        "A second person, never the requester, approves a decision before it is carried out.",
    ),
    (
        "handler",
        "The code that processes a queue's messages.",
    ),
    (
        "poison list",
        "The shared list of quarantined messages (by id, and by body if the queue says so) "
        "that no handler is given.",
    ),
    (
        "quarantine",
        "Where messages that cannot be processed wait for a person's decision.",
    ),
    (
        "queue",
        "A named destination with a handler and a delivery policy; enabled or disabled.",
    ),
    (
        "reprocess",
        "A decision: the message goes back to be delivered, with its failures forgotten, "
        "optionally with an edited body or in another queue.",
    ),
    (
        "request",
        "A decision asked for on a set of messages, executed at once or after approval.",
    ),
    (
        "bulk edit",
        "A reprocess that edits many messages' bodies with one JSON Patch (RFC 6902): previewed on "
        "some of them before it is asked, approved by a second person, each edited body stored "
        "as a new version (R13); a message it does not apply to stays quarantined.",
    ),
    (
        "set aside",
        "A header the producer sent under a name that is Antidote's own (antidote-, amqp-, "
        "nats-, redis-): kept as x-foreign-<name> for people to read, never used (R18).",
    ),
    (
        "standing rule",
        "A decision that stands, approved by a second person before it acts: archive (fail "
        "what stood untouched N days), redirect (a queue's reprocesses go elsewhere) or "
        "auto-retry (a group's new failures reprocessed after a delay, at most K times).",
    ),
)

# The settings a screen names, for the administrator who sets them: (name, title, sentence).
SETTINGS = (
    (
        "APPROVAL_OVER",
        "approval threshold",
        "A decision on more messages than this needs a second person's approval (R17).",
    ),
    (
        "BREAK_GLASS",
        "break-glass switch",
        "On, an approver or administrator may execute a waiting request alone in an emergency.",
    ),
    (
        "LAKE_QUERY_TIMEOUT_SECONDS",
        "lake query time limit",
        "How long a lake query may run before it is stopped, in seconds.",
    ),
)

# A queue's delivery policy, as queue files and the audit trail name its settings: (name, title,
# sentence); the rules they follow are R3-R15 above.
POLICY = (
    (
        "max_failed_deliveries",
        "maximum failed deliveries",
        "R3: failures before the exception destination; 0 for no limit.",
    ),
    ("exception_destination", "exception destination", "R4: quarantine, another queue, or none."),
    (
        "blocked_retry_timeout",
        "retry pause without a destination",
        "R4: with no exception destination, how long a message that failed too often waits.",
    ),
    (
        "backoff_every",
        "failures per delay",
        "R5: how many failed attempts each delay of the table covers.",
    ),
    (
        "backoff_delays",
        "backoff delays",
        "R5: the table of waits after failed attempts, in seconds.",
    ),
    ("periodic_interval", "periodic run interval", "R5: how often the queue's periodic run comes."),
    ("on_permanent", "on a permanent failure", "R6: quarantine, or return to the sender."),
    ("poison_match", "poison list match", "R9: by id, or by id or body."),
    (
        "disable_after",
        "disable after",
        "R11: failed attempts in a row before the queue disables itself; 0 for never.",
    ),
    (
        "retention_days",
        "retention days",
        "R15: days a finished message is kept before it is purged.",
    ),
    ("handler_options", "handler options", "What the queue's handler is given, by name."),
    (
        "locked_headers",
        "locked headers",
        "R18: header names an edit of the queue's messages keeps as they are, beside the "
        "product's own.",
    ),
)

# The options of a redrive queue's handler and of a broker source, as queue files name them:
# (name, title, sentence). Only the names a person would not read as words are here.
OPTIONS = (
    (
        "url_env",
        "URL variable",
        "The environment variable that holds the broker's or the endpoint's URL (the URL "
        "itself, which may hold a password, is never stored or shown).",
    ),
    (
        "secret_env",
        "signing secret variable",
        "The environment variable that holds the secret the HTTP handler signs each request with.",
    ),
    ("routing_key", "routing key", "The RabbitMQ routing key the messages are published with."),
    ("confirm_timeout", "confirmation time limit", "How long to wait for the broker's confirm."),
    ("ack_timeout", "acknowledgement time limit", "How long to wait for JetStream's ack."),
    ("ack_wait", "acknowledgement wait", "How long JetStream waits for an ack before it resends."),
    ("id_field", "id field", "The stream entry's field that carries the message's id."),
    ("body_field", "body field", "The stream entry's field that carries the message's body."),
    (
        "advisory_stream",
        "advisory stream",
        "The JetStream stream that keeps the advisories of messages that ran out of deliveries "
        "(advisories published before the source's first run are not seen).",
    ),
    (
        "parking_stream",
        "parking stream",
        "Where the source sets aside what it cannot take in, instead of losing it.",
    ),
    (
        "min_deliveries",
        "minimum deliveries",
        "A pending entry is taken as dead once it was delivered this many times.",
    ),
    (
        "min_idle_ms",
        "minimum idle time (ms)",
        "A pending entry is taken as dead once it was idle this long, in milliseconds.",
    ),
)

# What a lake query may ask for, as its criteria are stored: (name, title, sentence). The lake
# query form's labels are these titles.
CRITERIA = (
    ("queues", "queues", "The queues the messages are in (any of them)."),
    ("states", "states", "The states the messages are in (any of them)."),
    ("message_id_prefix", "id starts with", "The messages whose id starts with this."),
    ("sender", "sender", "The messages from this sender."),
    ("conversation_id", "conversation", "The messages of this conversation."),
    ("enqueued_from", "enqueued from", "The messages taken in at this time or later."),
    ("enqueued_to", "enqueued before", "The messages taken in before this time."),
    ("header_name", "header", "The messages that have this header."),
    ("header_value", "header value contains", "The header's value contains this text."),
    ("body_contains", "body contains", "The body contains this text."),
    (
        "body_regex",
        "body matches (Java regex)",
        "The body matches this regular expression, written as Java (Spark) reads it.",
    ),
    ("json_path", "JSON path ($.a.b)", "Where to look in a JSON body, as $.a.b."),
    ("json_equals", "value at the path equals", "The value at the JSON path equals this."),
)

# The message list's filters, as its links and a request's scope name them: (name, title,
# sentence). The filter form's labels say the same.
FILTERS = (
    ("group", "failure group", "The messages of one failure group."),
    ("exception_type", "exception", "The messages whose last failure raised this exception."),
    ("since", "failed since", "The messages whose last failure is at this time or later (UTC)."),
    ("until", "failed before", "The messages whose last failure is before this time (UTC)."),
    ("candidate", "blacklist candidate", "The messages marked, or not, as blacklist candidates."),
    ("owner", "under investigation by", "The messages someone is investigating."),
    ("q", "reason contains", "The messages whose failure reason contains this text."),
)

# What a request's scope may be, as it is stored: (kind, title, sentence).
SCOPE_KINDS = (
    ("lake_query", "lake query", "The messages a lake query found: its result."),
    (
        "failed_again",
        "failed again",
        "The messages an earlier request decided that are quarantined again.",
    ),
    (
        "standing_rule",
        "standing rule",
        "The messages a standing rule matched when it acted: its own request.",
    ),
)

# What an audit entry may be about, beyond plain words ("queue", "user"): (type, title, sentence).
TARGET_TYPES = (
    ("role_grant", "role grant", "A role asked for someone, confirmed by a second administrator."),
    ("alert_delivery", "alert delivery", "One sending of an alert to a webhook."),
    ("rule", "standing rule", "A standing rule: proposed, approved, applied, removed."),
)

# The handlers the product itself provides (a queue's handler is otherwise the path of the
# operator's own code): (path, title, sentence). Queue files name them, so the paths stay.
HANDLERS = (
    (
        "workers.brokers.redrive.publisher",
        "RabbitMQ redrive",
        "Publishes each message back to RabbitMQ, to the queue it died in unless told "
        "otherwise, with publisher confirms.",
    ),
    (
        "workers.brokers.nats.publisher",
        "NATS JetStream redrive",
        "Publishes each message back to the JetStream subject it came from unless told "
        "otherwise, and waits for the stream's ack.",
    ),
    (
        "workers.brokers.redis_streams.publisher",
        "Redis Streams redrive",
        "Adds each message back to the Redis stream it came from unless told otherwise.",
    ),
    (
        "workers.brokers.http.poster",
        "HTTP delivery",
        "Sends each message to an HTTP endpoint, signed, and reads the answer as the outcome.",
    ),
)

# Every action the audit trail records, as it records them (the action filter takes these). Its
# title is its words ("request.break_glass" -> "request break glass"): audit_action_title.
AUDIT_ACTIONS = (
    "account.email_changed",
    "alerts.delivery_retried",
    "alerts.subscriptions_changed",
    "alerts.threshold_removed",
    "alerts.threshold_set",
    "alerts.webhook_changed",
    "alerts.webhook_created",
    "alerts.webhook_disabled",
    "alerts.webhook_enabled",
    "audit.checkpoint_taken",
    "audit.exported",
    "counts.repaired",
    "execution.cancelled",
    "execution.failed",
    "execution.finished",
    "execution.resumed",
    "execution.started",
    "execution.step_failed",
    "execution.step_started",
    "execution.step_finished",
    "group.acknowledged",
    "group.ignored",
    "group.reopened",
    "group.resolved",
    "investigation.handed_over",
    "investigation.released",
    "investigation.taken",
    "investigation.ticket_changed",
    "lake_query.cancelled",
    "lake_query.created",
    "lake_query.finished",
    "login",
    "login.address_throttled",
    "login.failed",
    "login.locked_out",
    "login.lockout_lifted",
    "logout",
    "message.body_viewed",
    "messages.exported",
    "messages.sent_by_hand",
    "note.added",
    "poison.removed",
    "poison.reported",
    "policy.changed",
    "queue.created",
    "queue.disabled",
    "queue.enabled",
    "queue.paused",
    "request.approved",
    "request.break_glass",
    "request.break_glass_review_overdue",
    "request.break_glass_reviewed",
    "request.cancel_requested",
    "request.cancelled",
    "request.created",
    "request.expired",
    "request.rejected",
    "request.withdrawn",
    "retention.failed",
    "retention.previewed",
    "retention.purged",
    "retention.requested",
    "role.created",
    "role.deleted",
    "role.permissions_changed",
    "role_grant.confirmed",
    "role_grant.expired",
    "role_grant.rejected",
    "role_grant.requested",
    "role_grant.withdrawn",
    "rule.applied",
    "rule.approved",
    "rule.proposed",
    "rule.rejected",
    "rule.removed",
    "rule.stopped",
    "rule.withdrawn",
    "source.changed",
    "source.created",
    "sso.refused",
    "sso.sign_in_refused",
    "sso.signed_in",
    "token.created",
    "token.expired",
    "token.revoked",
    "user.activated",
    "user.cooldown_waived",
    "user.created",
    "user.deactivated",
    "user.deleted",
    "user.groups_changed",
    "user.ingest_rights_changed",
    "user.password_changed",
    "user.service_account_rule",
)


def audit_action_title(action):
    """An audit action in words: "role_grant.requested" -> "role grant requested"."""
    return action.replace(".", " ").replace("_", " ")


# Every code a person may meet on a screen, {code: (title, sentence)}: the `code` and `said`
# filters (console.browse.templatetags.codes) show it with its title and sentence on hover, the
# glossary lists them, and tests/page_words.py finds any shown with neither.
CODES = {
    **{code: (name, sentence) for code, name, sentence in STATES},
    **{
        name: (title, sentence)
        for name, title, sentence in (
            SETTINGS + POLICY + OPTIONS + CRITERIA + FILTERS + SCOPE_KINDS + TARGET_TYPES
        )
    },
    **{path: (title, sentence) for path, title, sentence in HANDLERS},
    **{action: (audit_action_title(action), "") for action in AUDIT_ACTIONS},
}


# The codes as the glossary page lists them: (anchor, heading, [(code, title, sentence)]).
CODE_GROUPS = (
    ("settings", "Settings", SETTINGS),
    ("policy", "A queue's delivery policy", POLICY),
    ("filters", "Filters of the message list", FILTERS),
    ("criteria", "Criteria of a lake query", CRITERIA),
    ("scopes", "What a request acts on", SCOPE_KINDS),
    ("targets", "What an audit entry is about", TARGET_TYPES),
    ("handlers", "Handlers the product provides", HANDLERS),
    ("options", "Options of handlers and broker sources", OPTIONS),
    (
        "audit-actions",
        "Actions of the audit trail",
        tuple((action, audit_action_title(action), "") for action in AUDIT_ACTIONS),
    ),
)


def code_title(code):
    """The plain title of a code; the code itself when it is not one of CODES."""
    return CODES.get(code, (code, ""))[0]


def code_hint(code):
    """What a code's hover says: its title, its sentence, and the code as configuration and
    the API write it ("quarantined (NDLV): Not delivered: ..."); "" for an unknown code."""
    if code not in CODES:
        return ""
    title, sentence = CODES[code]
    said = f"{title} ({code})" if title != code else code
    return f"{said}: {sentence}" if sentence else said
