"""Edits of message bodies, free of Django: an edited body of a JSON message must parse; a JSON
Patch (RFC 6902, applied by the `jsonpatch` library) is checked before any request exists,
applied to a body, and its result checked against the message's content type.

The console checks a person's edited body and previews a bulk edit's patch with these; each
chunk of a bulk edit applies the request's patch to its members with `patched_messages`
(workers.jobs.decisions.run), one new version per member (R13: the original is kept).

Bodies are attacker-controlled, and what a member's failure says is shown to people who may not
read bodies: a reason never quotes a body (the library's own messages would: a failed `test`
prints the value it found), only the operation, its path (the patch's, the requester's text)
and the parser's words.
"""

import hashlib
import json
from dataclasses import dataclass

import jsonpatch
import pyarrow as pa
from jsonpointer import JsonPointer, JsonPointerException

from workers.jobs.trait_kinds import FIELD, VALUE
from workers.lake.schema import MESSAGE_SCHEMA

PATCH_OPS = ("add", "remove", "replace", "move", "copy", "test")
# The member each operation needs besides `op` and `path` (RFC 6902, section 4).
_NEEDS = {"add": "value", "replace": "value", "test": "value", "move": "from", "copy": "from"}
PATCH_MAX_OPERATIONS = 1000
# The patch as text, at most: a patch says what to change in every body, it does not carry them.
PATCH_TEXT_MAX = 100_000
PATCH_EXAMPLE = '[{"op": "add", "path": "/currency", "value": "EUR"}]'

# What a member's failure is recorded as: its id and why, in words.
FAILURE_SCHEMA = pa.schema([("message_id", pa.string()), ("reason", pa.string())])


# --- A JSON body ---------------------------------------------------------------------------------


def json_content_type(content_type):
    """True for a JSON body's content type (application/json, application/problem+json...)."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    return media == "application/json" or media.endswith("+json") or media == "text/json"


def _constant_at(text):
    """Where the first NaN, Infinity or -Infinity outside a string starts in `text`: outside
    strings, JSON's only capitals are those words."""
    in_string = escaped = False
    for at, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "NI":
            return at - 1 if char == "I" and at and text[at - 1] == "-" else at
    return 0


def json_strict(data):
    """`data` (bytes or text) parsed as RFC 8259 JSON: Python's parser, but NaN, Infinity and
    -Infinity refused as a strict consumer refuses them, at their line and column
    (json.JSONDecodeError). UnicodeDecodeError for bytes that are not Unicode text."""
    text = data if isinstance(data, str) else data.decode(json.detect_encoding(data), "strict")

    def refuse(name):
        raise json.JSONDecodeError(f"{name} is not a JSON value", text, _constant_at(text))

    return json.loads(text, parse_constant=refuse)


def json_refused(data, content_type, *, what="this"):
    """Why `data` is refused as a body of a message of `content_type`: the parser's message with
    its line and column; "" when it parses (or the message is not JSON). `what` names the body
    in the sentence ("this", "the patched body")."""
    if not json_content_type(content_type):
        return ""
    try:
        json_strict(data)
    except UnicodeDecodeError:
        return f"The message is {content_type}, and {what} is not UTF-8 text."
    except json.JSONDecodeError as exc:
        return (
            f"The message is {content_type}, and {what} is not valid JSON: {exc.msg} at line "
            f"{exc.lineno}, column {exc.colno}."
        )
    except RecursionError:
        return f"The message is {content_type}, and {what} is nested too deeply."
    return ""


# --- A JSON Patch --------------------------------------------------------------------------------


class PatchRefused(ValueError):
    """The patch is not one this product applies; the message says why, in a sentence."""


def _pointer_refused(number, member, value):
    if not isinstance(value, str):
        return f"Operation {number}: its {member} is a JSON Pointer, as text (RFC 6901)."
    try:
        JsonPointer(value)
    except JsonPointerException:
        return (
            f"Operation {number}: its {member} {value[:200]!r} is not a JSON Pointer: it is empty "
            'for the whole body, or starts with "/" (RFC 6901).'
        )
    return ""


def patch_parse(patch):
    """`patch` (JSON text, or the list of operations it holds) as a list of operations, checked:
    RFC 8259 JSON, a list of 1 to PATCH_MAX_OPERATIONS operations, each with a known `op`, its
    `path` (and `from`) a JSON Pointer, and the `value` (or `from`) its operation needs; then
    the library's own check. PatchRefused says what is wrong, naming the operation by its
    number (from 1)."""
    if isinstance(patch, str):
        if len(patch) > PATCH_TEXT_MAX:
            raise PatchRefused(f"The patch is over {PATCH_TEXT_MAX:,} characters.")
        try:
            patch = json_strict(patch)
        except json.JSONDecodeError as exc:
            raise PatchRefused(
                f"The patch is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}."
            ) from None
        except RecursionError:
            raise PatchRefused("The patch is nested too deeply.") from None
    if not isinstance(patch, list) or not patch:
        raise PatchRefused(f"A JSON Patch is a list of operations, such as {PATCH_EXAMPLE}.")
    if len(patch) > PATCH_MAX_OPERATIONS:
        raise PatchRefused(f"A patch has at most {PATCH_MAX_OPERATIONS:,} operations.")
    for number, operation in enumerate(patch, start=1):
        if not isinstance(operation, dict):
            raise PatchRefused(f"Operation {number} is not an object like {PATCH_EXAMPLE[1:-1]}.")
        op = operation.get("op")
        if op not in PATCH_OPS:
            raise PatchRefused(f"Operation {number}: op is one of {', '.join(PATCH_OPS)}.")
        needs = _NEEDS.get(op)
        for member in ("path", "from") if needs == "from" else ("path",):
            if member not in operation:
                raise PatchRefused(f"Operation {number} ({op}) needs a {member}.")
            said = _pointer_refused(number, member, operation[member])
            if said:
                raise PatchRefused(said)
        if needs == "value" and "value" not in operation:
            raise PatchRefused(f"Operation {number} ({op} {operation['path']}) needs a value.")
    try:
        jsonpatch.JsonPatch(patch)
    except (jsonpatch.JsonPatchException, JsonPointerException) as exc:
        raise PatchRefused(f"This is not a JSON Patch: {exc}.") from None
    return patch


def patch_text(patch):
    """A checked patch as the request keeps it: its JSON text, operations and members in the
    order given (a value's members are a body's members to be: their order is kept)."""
    return json.dumps(patch, ensure_ascii=False)


def patch_sha256(patch):
    """The patch's fingerprint, whatever the order of its members: what the audit trail records
    and what the request form checks a preview against."""
    canonical = json.dumps(patch, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Patched:
    """A patch applied to one body: the new body, or why there is none. `refused`: the patch
    applied but its result cannot be the message's body (it does not parse as its content type,
    or it is too large), as opposed to a patch that does not apply to this body."""

    body: bytes | None
    reason: str = ""
    refused: bool = False


# Why an operation does not apply, by the library's exception: in words that quote no body.
_WHY_NOT = (
    (jsonpatch.JsonPatchTestFailed, "the body does not hold the value tested"),
    (JsonPointerException, "its path is not in the body"),
    (jsonpatch.JsonPatchConflict, "its path is not in the body, or is outside a list"),
    (KeyError, "its path is not in the body"),
    (IndexError, "its path is outside a list"),
    (TypeError, "its path goes through a value that is neither an object nor an array"),
    (jsonpatch.JsonPatchException, "it cannot be applied to this body"),
)


def _operation_said(number, operation):
    where = operation["path"] or "(the whole body)"
    if "from" in operation:
        where = f"{operation['from'] or '(the whole body)'} to {where}"
    return f"operation {number} ({operation['op']} {where[:200]})"


def patch_apply(body, patch, *, content_type, max_bytes):
    """The checked `patch` (patch_parse) applied to `body` (bytes), as a Patched. The body is
    read by Python's parser (a producer's NaN is read as the number it meant); the result is
    written compact, in UTF-8, and must be at most `max_bytes` and, for a JSON content type,
    parse as RFC 8259 JSON."""
    try:
        document = json.loads(bytes(body))
    except UnicodeDecodeError:
        return Patched(None, "the body is not UTF-8 text, so not JSON")
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        return Patched(None, f"the body is not JSON: {exc.msg} at {where}")
    except RecursionError:
        return Patched(None, "the body is JSON nested too deeply")
    for number, operation in enumerate(patch, start=1):
        try:
            document = jsonpatch.JsonPatch([operation]).apply(document, in_place=True)
        except tuple(kind for kind, _ in _WHY_NOT) as exc:
            why = next(said for kind, said in _WHY_NOT if isinstance(exc, kind))
            return Patched(None, f"{_operation_said(number, operation)}: {why}")
    try:
        data = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        return Patched(None, "the patched body holds a lone surrogate, which is not text")
    except (ValueError, RecursionError):
        return Patched(None, "the patched body cannot be written as JSON")
    if len(data) > max_bytes:
        return Patched(
            None,
            f"the patched body is {len(data):,} bytes, over the limit of {max_bytes:,} bytes "
            "(MAX_BODY_BYTES)",
            refused=True,
        )
    said = json_refused(data, content_type, what="the patched body")
    if said:
        return Patched(None, said, refused=True)
    return Patched(data)


def patched_messages(rows, patch, *, max_bytes, redrive_target=None):
    """A bulk edit of a chunk's members: `rows`, each member's current version (MESSAGE_SCHEMA),
    patched. Returns (versions, failures): the new version of each member the patch applies to
    (the next version number, its new body, hash and size, everything else kept but the
    request's own redrive target, JSON text or None), and (message_id, reason) of each member it
    does not, in the order of `rows`."""
    versions, failed_ids, reasons = [], [], []
    for row in rows.to_pylist():
        patched = patch_apply(
            row["body"] or b"",
            patch,
            content_type=row["content_type"] or "",
            max_bytes=max_bytes,
        )
        if patched.body is None:
            failed_ids.append(row["message_id"])
            reasons.append(patched.reason)
            continue
        versions.append(
            row
            | {
                "version": row["version"] + 1,
                "body": patched.body,
                "body_sha256": hashlib.sha256(patched.body).hexdigest(),
                "body_size": len(patched.body),
                "redrive_target": redrive_target,
            }
        )
    return (
        pa.Table.from_pylist(versions, schema=MESSAGE_SCHEMA),
        pa.table({"message_id": failed_ids, "reason": reasons}, schema=FAILURE_SCHEMA),
    )


# --- From a finding ------------------------------------------------------------------------------


def _pointer(name):
    """A top-level member's JSON Pointer (RFC 6901: ~ and / escaped)."""
    return "/" + name.replace("~", "~0").replace("/", "~1")


def patch_skeleton(finding):
    """A bulk edit's first draft from a "why do these fail" finding about a body's field (a
    dict of workers.jobs.failure_traits.Finding): add the field these failures lack, remove the
    one they have, replace the value they share; the value is for the person to fill in. None
    for a finding of another kind: a JSON Patch edits a body, not its headers or its size."""
    kind, name = finding.get("kind"), finding.get("name")
    if kind not in (FIELD, VALUE) or not isinstance(name, str) or not name:
        return None
    path = _pointer(name)
    if kind == FIELD and finding.get("absent"):
        return [{"op": "add", "path": path, "value": None}]
    if kind == FIELD:
        return [{"op": "remove", "path": path}]
    return [{"op": "replace", "path": path, "value": None}]
