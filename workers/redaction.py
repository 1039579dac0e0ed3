"""URLs as logs, reasons and pages may show them: the origin (scheme://host:port) and a marker,
never the path, the query or a user and password. Slack's and Teams' webhook URLs carry their
key in the path, a PagerDuty or HTTP sink URL may carry a token in the query, a broker's URL its
password: whoever reads a log line is not whoever may post to that URL.

- `url_redacted(url)`: `https://hooks.slack.com:443/[redacted]`, whatever the URL holds; the
  marker is there even when the URL had no path, so that no reader learns whether it had one.
  A URL this module cannot read strictly is shown as the marker alone.
- `url_secrets(url)` and `scrubbed(text, secrets)`: an error text from a library may quote the
  URL or its parts (a parser's "invalid URL 'https://...'"): they are replaced by the marker.
- `library_logs_redacted()`: urllib3 logs each request's path at DEBUG (`"POST /services/T0/B0/
  XXXX HTTP/1.1" 500`) and a URL on a retry or a redirect; a filter on its loggers redacts them.

Plain Python (no Django): the workers log too.
"""

import logging
import re
from urllib.parse import unquote

MARKER = "[redacted]"
# A URL that is not strictly scheme://[user@]host[:port][/...]: nothing of it is shown.
UNREADABLE = f"{MARKER} (a URL)"
# The port each scheme the product speaks connects to when a URL names none.
DEFAULT_PORTS = {
    "http": 80,
    "https": 443,
    "amqp": 5672,
    "amqps": 5671,
    "nats": 4222,
    "tls": 4222,
    "redis": 6379,
    "rediss": 6379,
    "smtp": 25,
}
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
# A host as a reader may safely be shown it: a DNS name or an IPv4 address, or IPv6 in brackets.
_HOST = re.compile(r"[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*\.?|\[[0-9A-Fa-f:.]+\]")
_PORT = re.compile(r"[0-9]{1,5}")
# What ends the authority; a backslash too, as urllib3 (which sends) reads it: the host shown is
# the one connected to, and what follows the backslash is path.
_AUTHORITY_END = re.compile(r"[/?#\\]")
# urllib3's loggers that name a request's path or a whole URL in their arguments.
URLLIB3_LOGGERS = (
    "urllib3.connectionpool",
    "urllib3.connection",
    "urllib3.poolmanager",
    "urllib3.util.retry",
)


def _split(url):
    """(scheme, userinfo, host, port, rest) of `url`, or None when it is not plainly a URL."""
    if not isinstance(url, str):
        return None
    scheme = _SCHEME.match(url)
    if scheme is None:
        return None
    after = url[scheme.end() :]
    end = _AUTHORITY_END.search(after)
    authority, rest = (after[: end.start()], after[end.start() :]) if end else (after, "")
    userinfo, _, hostport = authority.rpartition("@")
    if hostport.startswith("["):
        inside, bracket, tail = hostport.partition("]")
        if not bracket or (tail and not tail.startswith(":")):
            return None
        host, port = inside + bracket, tail[1:]
    else:
        host, _, port = hostport.partition(":")
    if not _HOST.fullmatch(host) or (port and not _PORT.fullmatch(port)):
        return None
    name = scheme.group(1).lower()
    number = int(port) if port else DEFAULT_PORTS.get(name)
    return name, userinfo, host.lower(), number, rest


def url_redacted(url):
    """`scheme://host:port/[redacted]`: where `url` leads, and nothing it may hide."""
    parts = _split(url)
    if parts is None:
        return UNREADABLE
    scheme, _userinfo, host, port, _rest = parts
    where = f"{host}:{port}" if port is not None else host
    return f"{scheme}://{where}/{MARKER}"


def url_secrets(url, *, path=True):
    """What of `url` must not appear in a text: the URL as written, its user and password (as
    written and decoded), its query, and with `path` its path (a webhook's key; a broker's path
    is its vhost or database, no secret, and too short to scrub)."""
    if not isinstance(url, str) or not url:
        return ()
    found = {url}
    parts = _split(url)
    if parts is None:
        # Not plainly a URL: only the whole of it is known to be secret.
        return (url,)
    _scheme, userinfo, _host, _port, rest = parts
    for part in userinfo.split(":", 1) if userinfo else ():
        found |= {part, unquote(part)}
    path_part, _, query = rest.partition("?")
    if query:
        found |= {query, unquote(query)}
    if path and len(path_part) > 1:
        found |= {path_part, unquote(path_part), rest}
    return tuple(s for s in found if s)


def scrubbed(text, secrets):
    """`text` with each of `secrets` replaced by the marker, the longest first (a password inside
    the URL leaves no part of the URL behind)."""
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, MARKER)
    return text


def _arg_redacted(value):
    if not isinstance(value, str):
        return value
    if "://" in value:
        return url_redacted(value)
    if value.startswith("/"):
        return f"/{MARKER}"  # a request's target: the path and its query
    return value


class UrlArgsRedacted(logging.Filter):
    """Redacts the URLs and request paths among a record's arguments (urllib3 passes them as
    arguments, never formatted into its message)."""

    def filter(self, record):
        if isinstance(record.args, tuple) and record.args:
            record.args = tuple(_arg_redacted(a) for a in record.args)
        return True


def library_logs_redacted():
    """Put UrlArgsRedacted on urllib3's loggers, once: a filter on a logger sees the records it
    makes itself, so each that names a URL gets one."""
    for name in URLLIB3_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, UrlArgsRedacted) for f in logger.filters):
            logger.addFilter(UrlArgsRedacted())
