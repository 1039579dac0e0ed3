"""Outbound URLs read once, the way the client that sends reads them (urllib3's `parse_url`,
which requests uses), and refused when another reader could see another host in them.

The redrive host allow-list was once walked around with `http://127.0.0.1\\.example.com:8231`:
`urllib.parse.urlsplit` reads the host `127.0.0.1\\.example.com`, urllib3 reads `127.0.0.1`
and a path. So a URL is taken only when it is plain: no space, control character or backslash
anywhere, no fragment, nothing before `@` unless the caller allows credentials (and then one
`@`), a host that is a lower-case-able ASCII DNS name or an IP address written the one usual way
(four decimal numbers, or IPv6 in brackets without a zone), and urllib3 and urlsplit must agree on
the host and the port. What is refused says why in words (`DestinationError`).
"""

import contextlib
import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from urllib3.exceptions import LocationParseError
from urllib3.util import parse_url

from workers.outbound.addresses import address_checked, addresses_resolved

SCHEMES = {"http": 80, "https": 443}
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
# A DNS name as resolvers take it: letters, digits, hyphens and underscores in dot-separated
# labels, none empty (so no trailing dot).
_NAME = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*")
_USERINFO = re.compile(r"[A-Za-z0-9._~%!$&'()*+,;=:-]*")
_PORT = re.compile(r"[0-9]{1,5}")


class DestinationError(ValueError):
    """The URL cannot be used as an outbound destination; the text completes "the URL ...".
    Permanent: the same URL is refused again (alerts read `permanent`)."""

    permanent = True


@dataclass(frozen=True)
class Destination:
    """Where a URL sends: its scheme, host (lower case; an IPv6 address without brackets) and
    port (the scheme's when the URL names none); `address` when the host is an IP address."""

    scheme: str
    host: str
    port: int
    address: object = None

    @property
    def origin(self):
        """scheme://host:port, for reasons and logs: a URL's path or query may hold a token."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


def destination_parse(url, *, credentials=False):
    """The Destination of `url`, or DestinationError. `credentials`: a user and password before
    the host are allowed (a URL read from an environment variable may hold them)."""
    if not isinstance(url, str):
        raise DestinationError("is not text")
    if any(c <= " " or c == "\x7f" for c in url):
        raise DestinationError("holds a space or a control character")
    if "\\" in url:
        raise DestinationError("holds a backslash, which URL readers take for / or not")
    scheme = _SCHEME.match(url)
    if scheme is None or scheme.group(1).lower() not in SCHEMES:
        raise DestinationError("must start with http:// or https://")
    rest = url[scheme.end() :]
    if not rest.startswith("//"):
        raise DestinationError("must start with http:// or https://")
    if "#" in url:
        raise DestinationError("holds a fragment (#), which is never sent")
    authority = re.split(r"[/?]", rest[2:], maxsplit=1)[0]
    userinfo, at, hostport = authority.rpartition("@")
    if at:
        if not credentials:
            raise DestinationError("must not hold credentials (a user or password before @)")
        if "@" in userinfo or not _USERINFO.fullmatch(userinfo):
            raise DestinationError("holds a user and password that URL readers read differently")
    host, port = _host_and_port(hostport)
    destination = _destination(scheme.group(1).lower(), host, port)
    _readers_agree(url, destination)
    return destination


def _host_and_port(hostport):
    if hostport.startswith("["):
        host, bracket, port = hostport[1:].partition("]")
        if not bracket:
            raise DestinationError("is not a valid URL")
        if "%" in host:
            raise DestinationError("names an IPv6 address with a zone (%), which is not sent to")
        try:
            address = ipaddress.IPv6Address(host)
        except ValueError:
            raise DestinationError("names an IPv6 address that is not one") from None
        host = str(address)
    else:
        host, colon, port = hostport.partition(":")
        port = colon + port
        host = _name(host)
    if port:
        if not port.startswith(":") or not _PORT.fullmatch(port[1:]):
            raise DestinationError("is not a valid URL")
        number = int(port[1:])
        if not 0 < number < 65536:
            raise DestinationError("is not a valid URL")
        return host, number
    return host, None


def _name(host):
    if not host:
        raise DestinationError("names no host")
    if not host.isascii():
        raise DestinationError(
            "names a host in letters beyond ASCII: write it in its ASCII form (xn--...)"
        )
    if "%" in host:
        raise DestinationError("names a percent-encoded host")
    lowered = host.lower()
    if lowered.endswith("."):
        raise DestinationError("names a host that ends with a dot")
    if not _NAME.fullmatch(lowered):
        raise DestinationError("names a host that is neither a DNS name nor an IP address")
    last = lowered.rsplit(".", 1)[-1]
    if last.isdigit() or last.startswith("0x"):
        # A resolver reads 2130706433, 0177.0.0.1, 0x7f.1 and 127.1 as 127.0.0.1: only the one
        # usual form is taken, so what a person reads is what is connected to.
        try:
            return str(ipaddress.IPv4Address(lowered))
        except ValueError:
            raise DestinationError(
                "names an IP address in another form than four decimal numbers (a.b.c.d)"
            ) from None
    return lowered


def _destination(scheme, host, port):
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    return Destination(scheme, host, port or SCHEMES[scheme], address)


def _readers_agree(url, destination):
    """urllib3 (which sends) and urlsplit (which the rest of Python reads with) see the host and
    port this module saw; otherwise the URL is refused."""
    try:
        sent = parse_url(url)
        read = urlsplit(url)
        seen = {
            (
                (sent.host or "").strip("[]").lower(),
                sent.port or SCHEMES[destination.scheme],
            ),
            ((read.hostname or "").lower(), read.port or SCHEMES[destination.scheme]),
        }
    except (LocationParseError, ValueError):
        raise DestinationError("is not a valid URL") from None
    expected = destination.host
    if destination.address is not None and destination.address.version == 6:
        # Both readers give an IPv6 address as written; compare addresses, not spellings.
        seen = {(_compressed(host), port) for host, port in seen}
    if seen != {(expected, destination.port)}:
        raise DestinationError("is read differently by URL readers (another host or port)")


def _compressed(host):
    try:
        return str(ipaddress.IPv6Address(host))
    except ValueError:
        return host


def destination_check(url, *, allowance, credentials=False, resolve=False, resolver=None):
    """The Destination of `url`, checked as far as can be before sending: parsed as above, and
    its address (an IP address in the URL; with `resolve`, every address its name resolves to)
    not internal unless the allowance lets it through. A name that does not resolve now passes:
    the check when sending is the one that counts (DNS changes). Raises DestinationError or
    OutboundRefused."""
    destination = destination_parse(url, credentials=credentials)
    if destination.address is not None:
        address_checked(destination.address, destination.port, allowance=allowance)
    elif resolve:
        kwargs = {"resolver": resolver} if resolver is not None else {}
        # A name that does not resolve now is checked again, for good, when sent.
        with contextlib.suppress(OSError):
            addresses_resolved(destination.host, destination.port, allowance=allowance, **kwargs)
    return destination
