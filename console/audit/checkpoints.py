"""Checkpoints of the audit chain, signed into files outside the database.

A checkpoint row is in the database, so whoever writes there can cut entries off the chain and
delete or rewrite the checkpoints that would tell. Each checkpoint is therefore also written to
AUDIT_CHECKPOINT_DIR, a file of its own holding JSON {seq, hash, at, key_id, mac}, the mac being
the HMAC under AUDIT_KEY of the rest. Files are only ever added: each is created exclusively, and
the product never rewrites or deletes one. `audit_verify` reads them all back."""

import hmac
import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings

from console.audit.keys import current_key, key_id, mac

FOLDER_NAME = "audit-checkpoints"
_PATTERN = "checkpoint-*.json"

# What reading a checkpoint file found.
SIGNED = "signed"  # its mac is right under a key we hold
FORGED = "forged"  # unreadable, malformed, or its mac is wrong
OTHER_KEY = "other key"  # signed with a key we do not hold


def checkpoint_dir():
    if settings.AUDIT_CHECKPOINT_DIR:
        return Path(settings.AUDIT_CHECKPOINT_DIR)
    # Looked up when used, not at start: the folder follows LAKE_URI wherever that is set.
    if "://" not in settings.LAKE_URI:
        return Path(settings.LAKE_URI) / FOLDER_NAME
    return Path(settings.VAR_DIR) / FOLDER_NAME


def _stamp(at):
    return at.astimezone(UTC).isoformat(timespec="microseconds")


def checkpoint_file_write(*, seq, hash, at):
    """Write one new checkpoint file; returns its path. Raises if a file of that name exists."""
    folder = checkpoint_dir()
    folder.mkdir(parents=True, exist_ok=True)
    key = current_key()
    body = {"seq": seq, "hash": hash, "at": _stamp(at), "key_id": key_id(key)}
    body["mac"] = mac(key, body)
    path = folder / f"checkpoint-{seq:012d}-{at.astimezone(UTC):%Y%m%dT%H%M%S%f}Z.json"
    # "x": never over a file already there, even one of the same name.
    with open(path, "x", encoding="utf-8") as f:
        f.write(json.dumps(body, sort_keys=True) + "\n")
        f.flush()
        os.fsync(f.fileno())
    return path


@dataclass(frozen=True)
class CheckpointFile:
    name: str
    status: str  # SIGNED, FORGED or OTHER_KEY
    seq: int | None = None
    hash: str = ""
    at: datetime | None = None
    key_id: str = ""


def _read(path, keys):
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
        claimed = body.pop("mac")
        seq, hash_, at, kid = body["seq"], body["hash"], body["at"], body["key_id"]
        if set(body) != {"seq", "hash", "at", "key_id"} or type(seq) is not int:
            raise ValueError("not a checkpoint")
        if not all(isinstance(value, str) for value in (hash_, at, kid, claimed)):
            raise ValueError("not a checkpoint")
        when = datetime.fromisoformat(at)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return CheckpointFile(name=path.name, status=FORGED)
    key = keys.get(kid)
    if key is None:
        return CheckpointFile(name=path.name, status=OTHER_KEY, key_id=kid[:8])
    if not hmac.compare_digest(mac(key, body), claimed):
        return CheckpointFile(name=path.name, status=FORGED)
    return CheckpointFile(name=path.name, status=SIGNED, seq=seq, hash=hash_, at=when, key_id=kid)


def checkpoint_files(*, keys):
    """Every checkpoint file in the folder, in name order (seq, then time), each checked against
    `keys` (by key id). No folder yet: no files."""
    folder = checkpoint_dir()
    if not folder.is_dir():
        return []
    return [_read(path, keys) for path in sorted(folder.glob(_PATTERN))]
