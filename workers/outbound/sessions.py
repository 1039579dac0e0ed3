"""A requests Session whose every connection goes only to an address checked at that moment.

urllib3 opens a connection's socket in one method, `HTTPConnection._new_conn`: it resolves the
host and connects. Ours (`_GuardedConnection`) resolves the host once through the guard
(addresses.addresses_resolved: every address checked), and connects to those addresses only:
nothing resolves the name a second time, so a record that changes between the check and the
connect (DNS rebinding) changes nothing. Everything after the socket reads the connection's
`host`, which stays the name: the Host header, TLS's server name and the certificate's check
are the name's, as without the guard.

No proxy is used (a proxy would resolve the name itself), nor any setting or credential from the
environment (`trust_env` off), and redirects are for the caller to refuse (`allow_redirects=
False`): a guarded request goes where its URL says and nowhere else.
"""

import socket
import sys

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError
from urllib3.util.connection import _DEFAULT_TIMEOUT, _set_socket_options

from workers.outbound.addresses import addresses_resolved, allowance_from_environment
from workers.outbound.urls import DestinationError, destination_parse

# How much of an answer a reason may keep: a status line and a short excerpt, never the answer.
EXCERPT_CHARS = 200


def guarded_session(*, allowance=None, resolver=None):
    """A requests Session that sends only to addresses the guard allows: the allowance given
    (default: OUTBOUND_ALLOW_INTERNAL in this process's environment), names resolved by
    `resolver` (socket.getaddrinfo's signature; default socket.getaddrinfo). Refusals raise
    OutboundRefused (or DestinationError for a URL it will not read) before any connection."""
    if allowance is None:
        allowance = allowance_from_environment()
    session = requests.Session()
    session.trust_env = False
    adapter = _GuardedAdapter(allowance=allowance, resolver=resolver or socket.getaddrinfo)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


class _GuardedAdapter(HTTPAdapter):
    def __init__(self, *, allowance, resolver, **kwargs):
        # Set before HTTPAdapter.__init__, which makes the pool manager.
        self._pools = _pool_classes(allowance, resolver)
        super().__init__(**kwargs)

    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = self._pools

    def proxy_manager_for(self, proxy, **proxy_kwargs):
        raise DestinationError("is to go through a proxy, which would resolve it unchecked")

    def send(self, request, **kwargs):
        # The URL as prepared (what urllib3 is handed): read by the guard's own rules too.
        destination_parse(request.url.partition("#")[0], credentials=True)
        return super().send(request, **kwargs)


def _pool_classes(allowance, resolver):
    """Pool classes whose connections are guarded with this allowance and resolver: classes
    of their own, since urllib3 hands a pool's connections no argument it does not know."""
    guard = {"allowance": allowance, "resolver": resolver}
    http = type("GuardedHTTPConnection", (_GuardedConnection, HTTPConnection), guard)
    https = type("GuardedHTTPSConnection", (_GuardedConnection, HTTPSConnection), guard)
    return {
        "http": type("GuardedHTTPConnectionPool", (HTTPConnectionPool,), {"ConnectionCls": http}),
        "https": type(
            "GuardedHTTPSConnectionPool", (HTTPSConnectionPool,), {"ConnectionCls": https}
        ),
    }


class _GuardedConnection:
    allowance = None
    resolver = None

    def _new_conn(self):
        # As urllib3's own, but the addresses come from the guard: resolved once, all checked.
        host = self._dns_host.strip("[]")
        try:
            vetted = addresses_resolved(
                host, self.port, allowance=self.allowance, resolver=type(self).resolver
            )
        except socket.gaierror as exc:
            raise NameResolutionError(self.host, self, exc) from exc
        except OSError as exc:
            raise NewConnectionError(self, f"Failed to establish a new connection: {exc}") from exc
        try:
            sock = _connect(vetted, self.timeout, self.source_address, self.socket_options)
        except TimeoutError as exc:
            raise ConnectTimeoutError(
                self, f"Connection to {self.host} timed out. (connect timeout={self.timeout})"
            ) from exc
        except OSError as exc:
            raise NewConnectionError(self, f"Failed to establish a new connection: {exc}") from exc
        sys.audit("http.client.connect", self, self.host, self.port)
        return sock


def _connect(vetted, timeout, source_address, socket_options):
    """A socket connected to the first of `vetted` that answers (as socket.create_connection
    tries each address in turn); the last error when none does."""
    error = None
    for family, sockaddr in vetted:
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            _set_socket_options(sock, socket_options)
            if timeout is not _DEFAULT_TIMEOUT:
                sock.settimeout(timeout)
            if source_address:
                sock.bind(source_address)
            sock.connect(sockaddr)
        except OSError as exc:
            sock.close()
            error = exc
        else:
            return sock
    raise error


def excerpt(data, limit=EXCERPT_CHARS):
    """At most `limit` characters of an answer's bytes or text, inert: decoded as UTF-8 (what
    does not decode shown as �), every control or format character (line breaks, escapes,
    bidirectional overrides) a space, runs of spaces one. Safe in a reason, a log line or a page
    as text."""
    if isinstance(data, bytes):
        data = data[: limit * 4].decode("utf-8", errors="replace")
    text = "".join(c if c.isprintable() else " " for c in data[:limit])
    return " ".join(text.split())


def failure_cause(exc):
    """What a failed request came to, in a few words: requests wraps urllib3's error, which
    wraps the socket's, and the innermost says what happened ("Connection refused") without the
    URL the outer ones repeat."""
    inner = exc
    for _ in range(10):
        deeper = inner.__cause__ or inner.__context__
        if deeper is None:
            break
        inner = deeper
    if isinstance(inner, OSError) and inner.strerror:
        return inner.strerror
    return inner.__class__.__name__
