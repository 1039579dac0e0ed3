"""The kinds of trait "why do these fail" finds (workers.jobs.failure_traits), named once, apart
from the Spark job that finds them: a bulk edit reads a finding by its kind too (a finding about
a body's field is where one can start, workers.jobs.decisions.body_edits)."""

FIELD, VALUE, HEADER, HEADER_VALUE, CONTENT_TYPE, SENDER, SIZE, NOT_JSON = (
    "field",
    "value",
    "header",
    "header_value",
    "content_type",
    "sender",
    "size",
    "not_json",
)
# Kinds whose absence is a trait too (counted from the totals).
PRESENCE_KINDS = (FIELD, HEADER)
