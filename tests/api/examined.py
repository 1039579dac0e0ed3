"""Which of the API's operations Schemathesis has already examined in depth, as they are now: a
fingerprint of each operation (its method, path, parameters, bodies and answers, with every
schema they refer to written out), kept in examined.json beside this file.

CI sends MAX_EXAMPLES generated requests to each operation whose fingerprint is new or changed,
and a sample to the others: an operation that has not changed since it passed in depth has little
left to show. After an API change, a run of the widest role with SCHEMATHESIS_EXAMINED_WRITE=1
examines every operation in depth and, when it passes, writes their fingerprints:

    SCHEMATHESIS_EXAMINED_WRITE=1 make test \
        PYTEST_ARGS="tests/api/test_schemathesis.py -k admin"
"""

import hashlib
import json
from pathlib import Path

EXAMINED = Path(__file__).with_name("examined.json")
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def _resolved(node, components, seen=()):
    """`node` with every local $ref written out in place (a reference back into itself kept as
    its name): an operation's fingerprint changes when a schema it uses changes."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            if ref in seen:
                return {"$ref": ref}
            target = components
            for part in ref[2:].split("/"):
                target = target[part]
            return _resolved(target, components, (*seen, ref))
        return {key: _resolved(value, components, seen) for key, value in node.items()}
    if isinstance(node, list):
        return [_resolved(value, components, seen) for value in node]
    return node


def fingerprints(document):
    """{operationId: SHA-256 of the operation as the document describes it}."""
    found = {}
    for path, item in document["paths"].items():
        shared = item.get("parameters", [])
        for method in METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            whole = {"method": method, "path": path, "shared": shared, "operation": operation}
            text = json.dumps(_resolved(whole, document), sort_keys=True, separators=(",", ":"))
            found[operation["operationId"]] = hashlib.sha256(text.encode()).hexdigest()
    return found


def examined():
    """The fingerprints examined.json keeps: {} when there is none."""
    if not EXAMINED.exists():
        return {}
    return json.loads(EXAMINED.read_text())


def unchanged(document):
    """The operationIds of `document` whose fingerprint examined.json keeps as it is now."""
    kept = examined()
    return sorted(op for op, found in fingerprints(document).items() if kept.get(op) == found)


def examined_write(document):
    EXAMINED.write_text(json.dumps(fingerprints(document), indent=1, sort_keys=True) + "\n")
