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
        "set aside",
        "A header the producer sent under a name that is Antidote's own (antidote-, amqp-, "
        "nats-, redis-): kept as x-foreign-<name> for people to read, never used (R18).",
    ),
)
