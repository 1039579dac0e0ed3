"""A client for Antidote's shared poison list, for applications outside the product (the AMPS
pattern): load the list when you start, skip the messages on it, report the ones you fail on.

One file, Python 3.9 or newer, standard library only: copy it into your application (the console
serves it at /static/clients/antidote_poison.py). Your application signs in with the API token of
a user with the `application` role (made by an administrator on the console's "Service tokens"
page, or `manage.py token_create <user> --name <what for>`).

    from antidote_poison import PoisonList

    poison = PoisonList("https://antidote.example.com", token="...")
    poison.load()                                    # the whole list, once, at start
    for batch in batches():
        poison.refresh()                             # what changed since, between batches
        for message in batch:
            if poison.is_poisoned(message.id, body=message.body):
                continue                             # skip what is listed
            try:
                handle(message)
            except Exception as exc:
                poison.report(message.id, f"{type(exc).__name__}: {exc}", queue="orders",
                              body=message.body)     # report what failed

The copy is kept current with the list's change log: `load()` reads the list page by page and
keeps the cursor of its first page; `refresh()` applies the changes after the cursor. Both may
be called again at any time; a change applied twice changes nothing.
"""

import hashlib
import json
import urllib.error
import urllib.parse
import urllib.request

__all__ = ["PoisonList", "PoisonListError", "body_sha256"]

API = "/api/v1/poison-list"


class PoisonListError(Exception):
    """The console refused a call (`status` is its HTTP status, `detail` its reason), or could
    not be reached (`status` is None)."""

    def __init__(self, status, detail):
        super().__init__(f"{status}: {detail}" if status else detail)
        self.status = status
        self.detail = detail


def body_sha256(body):
    """The hash the list keeps of a body: SHA-256 of its bytes (text is encoded as UTF-8), in
    lower-case hex."""
    if isinstance(body, str):
        body = body.encode("utf-8")
    return hashlib.sha256(body).hexdigest()


class PoisonList:
    """A local copy of the poison list, and the calls that read and report to it."""

    def __init__(self, base_url, token, *, timeout=30.0, page_size=1000):
        if urllib.parse.urlsplit(base_url).scheme not in ("http", "https"):
            raise ValueError(f"the console's address must be http(s)://..., not {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.page_size = page_size
        self.cursor = None  # None until load(): the change log's cursor the copy is current to
        self._entries = {}  # message_id -> entry (message_id, body_sha256, queue, reason, ...)
        self._bodies = {}  # body_sha256 -> {message_id, ...}: the entries that carry it

    def __len__(self):
        return len(self._entries)

    # --- Reading the list -------------------------------------------------------------------

    def load(self):
        """Read the whole list; returns how many entries it holds. The changes made while the
        pages were read are applied too."""
        self._entries.clear()
        self._bodies.clear()
        after, cursor = None, None
        while True:
            query = {"limit": self.page_size}
            if after is not None:
                query["after"] = after
            page = self._call("GET", "", query=query)
            if cursor is None:
                # The first page's cursor was read before it: nothing falls between.
                cursor = page["cursor"]
            for entry in page["results"]:
                self._put(entry)
            after = page["next"]
            if after is None:
                break
        self.cursor = cursor
        self.refresh()
        return len(self._entries)

    def refresh(self):
        """Apply the changes made since the last load() or refresh(); returns how many."""
        if self.cursor is None:
            raise PoisonListError(None, "load() the list before refreshing it")
        applied = 0
        while True:
            page = self._call(
                "GET", "/changes", query={"since": self.cursor, "limit": self.page_size}
            )
            for change in page["results"]:
                self._apply(change)
            applied += len(page["results"])
            self.cursor = page["cursor"]
            if not page["more"]:
                return applied

    def reason(self, message_id=None, *, body=None, body_sha256=None):
        """Why this message is on the list, or None: by its id, or by its body (pass the body,
        or its hash) when one is given."""
        if message_id is not None and message_id in self._entries:
            return self._entries[message_id]["reason"]
        sha = _sha(body, body_sha256)
        if sha and self._bodies.get(sha):
            holder = next(iter(self._bodies[sha]))
            return f"same body as a poisoned message: {self._entries[holder]['reason']}"
        return None

    def is_poisoned(self, message_id=None, *, body=None, body_sha256=None):
        """Is this message on the list, by its id, or by its body (pass the body, or its hash)
        when one is given? Answered from the local copy: load() first."""
        if self.cursor is None:
            raise PoisonListError(None, "load() the list before asking it")
        return self.reason(message_id, body=body, body_sha256=body_sha256) is not None

    def check(self, ids=(), *, bodies=(), body_sha256s=()):
        """Ask the console, without a local copy, which of these ids and bodies (or body
        hashes) are on the list: ({message_id: reason}, {body_sha256: reason})."""
        hashes = [_sha(b, None) for b in bodies] + [h.lower() for h in body_sha256s]
        answer = self._call("POST", "/check", body={"ids": list(ids), "body_sha256": hashes})
        return (
            {i["message_id"]: i["reason"] for i in answer["ids"]},
            {b["body_sha256"]: b["reason"] for b in answer["body_sha256"]},
        )

    # --- Reporting --------------------------------------------------------------------------

    def report(self, message_id, reason, queue="", *, body=None, body_sha256=None):
        """Report a message this application failed on, with why; give its body (or the body's
        hash) so that the same body under another id is caught too. Returns the entry as now
        listed; the local copy has it at once."""
        payload = {"message_id": message_id, "reason": reason, "queue": queue}
        sha = _sha(body, body_sha256)
        if sha:
            payload["body_sha256"] = sha
        entry = self._call("POST", "/reports", body=payload)
        self._put(entry)
        return entry

    # --- Inside -----------------------------------------------------------------------------

    def _put(self, entry):
        self._drop(entry["message_id"])
        self._entries[entry["message_id"]] = entry
        if entry["body_sha256"]:
            self._bodies.setdefault(entry["body_sha256"], set()).add(entry["message_id"])

    def _drop(self, message_id):
        old = self._entries.pop(message_id, None)
        if old is not None and old["body_sha256"]:
            holders = self._bodies.get(old["body_sha256"], set())
            holders.discard(message_id)
            if not holders:
                self._bodies.pop(old["body_sha256"], None)
        return old

    def _apply(self, change):
        message_id = change["message_id"]
        if change["kind"] == "added":
            self._put({k: change[k] for k in ("message_id", "body_sha256", "queue", "reason")})
        elif change["kind"] == "removed":
            self._drop(message_id)
        elif change["kind"] == "body_cleared":
            entry = self._entries.get(message_id)
            if entry is not None and entry["body_sha256"] == change["body_sha256"]:
                self._drop(message_id)
                self._put(dict(entry, body_sha256=""))

    def _call(self, method, path, *, query=None, body=None):
        url = f"{self.base_url}{API}{path}"
        if query:
            url += "?" + urllib.parse.urlencode(query)
        headers = {"Authorization": f"Token {self.token}", "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        # http(s) only: the constructor checked the address.
        request = urllib.request.Request(url, data=data, headers=headers, method=method)  # noqa: S310
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            raise PoisonListError(exc.code, _detail(exc)) from None
        except urllib.error.URLError as exc:
            raise PoisonListError(None, f"cannot reach {self.base_url}: {exc.reason}") from None


def _sha(body, sha):
    if body is not None:
        return body_sha256(body)
    return sha.lower() if sha else None


def _detail(error):
    """The console's reason for a refusal: its JSON `detail`, or the start of what it sent."""
    raw = error.read()
    try:
        return json.loads(raw)["detail"]
    except (ValueError, KeyError, TypeError):
        return raw[:300].decode("utf-8", "replace") or error.reason
