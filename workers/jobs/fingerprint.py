"""Failure groups: failures that look alike share a fingerprint.

fingerprint = sha256(queue \\0 exception type \\0 masked message \\0 top stack frames), where the
message is masked so that the ids, numbers and UUIDs it quotes do not split a group ("order 12345
not found" and "order 99 not found" are one failure), and the frames are the innermost three
"file:function" pairs of the traceback.

The same masking exists twice, for plain Python (`fingerprint`, used by tests and by anyone who
wants to know a failure's group without Spark) and as Spark SQL expressions (`fingerprint_columns`,
used by the refresh job): Java's and Python's regex dialects agree on every pattern below, and a
test checks that both give the same fingerprints.
"""

import hashlib
import re

# Applied in this order: a UUID or a long quoted string may contain what later masks would eat.
MASKS = [
    (r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", "<uuid>"),
    # Quoted text of 20 characters or more is data (a payload, a name), not the message's wording.
    (r"\"[^\"]{20,}\"|'[^']{20,}'", "<str>"),
    # Hex ids: 8+ hex digits with at least one digit and one letter. An all-digit one is a number
    # below; an all-letter one ("deadbeef") is more likely a word.
    (r"\b(?=[0-9a-fA-F]*[0-9])(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{8,}\b", "<hex>"),
    (r"[0-9]+", "<n>"),
]
# One frame of a Python traceback: `  File "/srv/app/shop/handlers.py", line 12, in book`.
FRAME = r"File \"(?:[^\"]*[/\\])?([^\"/\\]+)\", line [0-9]+, in ([^\s]+)"
TOP_FRAMES = 3
FRAMES_SEPARATOR = "; "
PATTERN_MAX = 2000  # a masked message longer than this is cut before hashing

_MASKS = [(re.compile(p), token) for p, token in MASKS]
_FRAME = re.compile(FRAME)


def mask(message):
    """The message with its UUIDs, long quoted strings, hex ids and numbers replaced by tokens."""
    text = message or ""
    for pattern, token in _MASKS:
        text = pattern.sub(token, text)
    return text[:PATTERN_MAX]


def top_frames(stack):
    """The innermost TOP_FRAMES frames of a Python traceback, as "file:function", outermost
    first."""
    frames = [f"{m.group(1)}:{m.group(2)}" for m in _FRAME.finditer(stack or "")]
    return FRAMES_SEPARATOR.join(frames[-TOP_FRAMES:])


def fingerprint_of(queue, exception_type, pattern, frames):
    text = "\0".join([queue or "", exception_type or "", pattern or "", frames or ""])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def fingerprint(queue, exception_type, message, stack):
    """(fingerprint, masked message, frames) of one failure."""
    pattern, frames = mask(message), top_frames(stack)
    return fingerprint_of(queue, exception_type, pattern, frames), pattern, frames


def masked_column(message):
    """`mask` as a Spark column."""
    from pyspark.sql import functions as F

    pattern = F.coalesce(message, F.lit(""))
    for regex, token in MASKS:
        pattern = F.regexp_replace(pattern, regex, token)
    return F.substring(pattern, 1, PATTERN_MAX)


def frames_column(stack):
    """`top_frames` as a Spark column."""
    from pyspark.sql import functions as F

    matches = F.regexp_extract_all(F.coalesce(stack, F.lit("")), F.lit(FRAME), F.lit(0))
    named = F.transform(matches, lambda m: F.regexp_replace(m, FRAME, "$1:$2"))
    innermost = F.slice(named, F.greatest(F.size(named) - (TOP_FRAMES - 1), F.lit(1)), TOP_FRAMES)
    return F.array_join(innermost, FRAMES_SEPARATOR)


def digest_column(queue, exception_type, pattern, frames):
    """`fingerprint_of` as a Spark column, from a masked message and frames already computed
    (computing them once per row, not once per use: regexes are the job's costliest part)."""
    from pyspark.sql import functions as F

    parts = [F.coalesce(c, F.lit("")) for c in (queue, exception_type, pattern, frames)]
    return F.sha2(F.concat_ws("\0", *parts), 256)


def fingerprint_columns(queue, exception_type, message, stack):
    """The same as `fingerprint`, as three Spark columns: (fingerprint, pattern, frames)."""
    pattern, frames = masked_column(message), frames_column(stack)
    return digest_column(queue, exception_type, pattern, frames), pattern, frames
