"""Which addresses the product may send to: every address but the internal ones (loopback,
link-local, private, shared, multicast, reserved...), and of those only what the allowance
names, for demos and tests.

A name is resolved once, here, and every address it resolves to is checked: one denied address
refuses the name (a record that answers a public and an internal address is the classic way in).
The caller connects to the addresses this returns and never resolves the name again.
"""

import ipaddress
import os
import socket
from dataclasses import dataclass

from urllib3.util.connection import allowed_gai_family

# The environment variable (and console setting) that lets internal addresses through: for
# demos and tests only.
ALLOW_ENV = "OUTBOUND_ALLOW_INTERNAL"

_NET = ipaddress.ip_network

# (network, what it is), most specific first where they nest. IANA's special-purpose registries
# (RFC 6890 and its updates), said for the person who reads a refusal. Python's own flags back
# this table up (_denied), but their lists changed between versions: this one is ours.
DENIED_NETWORKS = (
    (_NET("0.0.0.0/8"), "a 'this network' address (0.0.0.0 reaches this host)"),
    (_NET("10.0.0.0/8"), "a private address (RFC 1918)"),
    (_NET("100.64.0.0/10"), "a shared address (carrier-grade NAT, RFC 6598)"),
    (_NET("127.0.0.0/8"), "a loopback address"),
    (_NET("169.254.0.0/16"), "a link-local address (cloud metadata services live there)"),
    (_NET("172.16.0.0/12"), "a private address (RFC 1918)"),
    (_NET("192.0.0.0/24"), "an IETF protocol address (RFC 6890)"),
    (_NET("192.0.2.0/24"), "a documentation address"),
    (_NET("192.88.99.0/24"), "a 6to4 relay address"),
    (_NET("192.168.0.0/16"), "a private address (RFC 1918)"),
    (_NET("198.18.0.0/15"), "a benchmarking address"),
    (_NET("198.51.100.0/24"), "a documentation address"),
    (_NET("203.0.113.0/24"), "a documentation address"),
    (_NET("224.0.0.0/4"), "a multicast address"),
    (_NET("240.0.0.0/4"), "a reserved address"),
    (_NET("::/128"), "the unspecified address"),
    (_NET("::1/128"), "a loopback address"),
    (_NET("::/8"), "a reserved IPv6 address (IPv4-compatible and others)"),
    (_NET("64:ff9b:1::/48"), "a local NAT64 address"),
    (_NET("100::/64"), "a discard address"),
    (_NET("2001::/23"), "an IETF protocol address (Teredo, ORCHID and others)"),
    (_NET("2001:db8::/32"), "a documentation address"),
    (_NET("3fff::/20"), "a documentation address"),
    (_NET("5f00::/16"), "a segment-routing address"),
    (_NET("fc00::/7"), "a unique local address (IPv6's private range)"),
    (_NET("fe80::/10"), "a link-local address"),
    (_NET("fec0::/10"), "a site-local address"),
    (_NET("ff00::/8"), "a multicast address"),
)
# IPv6 ranges that carry an IPv4 address inside: checked as that IPv4 address.
_NAT64 = _NET("64:ff9b::/96")


class OutboundRefused(Exception):
    """The product will not send there: the reason says what was refused and why. Permanent:
    the same destination is refused again (alerts read `permanent`)."""

    permanent = True


class AllowanceError(ValueError):
    """OUTBOUND_ALLOW_INTERNAL holds something that is not an allowance entry."""


@dataclass(frozen=True)
class Allowance:
    """Internal destinations let through: (network, port or None for any port) pairs."""

    entries: tuple = ()

    def permits(self, address, port):
        return any(
            address in network and (wanted is None or wanted == port)
            for network, wanted in self.entries
        )

    def __bool__(self):
        return bool(self.entries)


def allowance_parse(text):
    """An Allowance from comma-separated entries: `127.0.0.1:8231` or `[::1]:8231` (that
    address and port), `127.0.0.1` (that address, any port), `10.20.0.0/16` (that network, any
    port). Raises AllowanceError naming the entry that is none of these."""
    entries = []
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        try:
            entries.append(_entry(item))
        except ValueError:
            raise AllowanceError(
                f"{ALLOW_ENV} lists addresses (127.0.0.1), addresses with a port "
                f"(127.0.0.1:8231, [::1]:8231) or networks (10.20.0.0/16), not {item!r}"
            ) from None
    return Allowance(tuple(entries))


def _entry(item):
    if "/" in item:
        return _NET(item, strict=False), None
    if item.startswith("["):
        address, _, port = item[1:].partition("]:")
        return _NET(ipaddress.IPv6Address(address)), _port(port)
    if item.count(":") == 1:
        address, _, port = item.partition(":")
        return _NET(ipaddress.IPv4Address(address)), _port(port)
    return _NET(ipaddress.ip_address(item)), None


def _port(text):
    if not (text.isascii() and text.isdigit() and 0 < int(text) < 65536):
        raise ValueError(text)
    return int(text)


def allowance_from_environment():
    """The allowance in this process's environment (the HTTP sink's processes import no
    Django: they read it here). Raises AllowanceError when it is malformed."""
    return allowance_parse(os.environ.get(ALLOW_ENV, ""))


def address_refusal(address):
    """Why `address` (an ipaddress object) is internal, or None for an address the product may
    send to unless an allowance says otherwise."""
    if address.version == 6:
        inside = address.ipv4_mapped
        if inside is None and address in _NAT64:
            inside = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if inside is None and address.sixtofour is not None:
            inside = address.sixtofour
        if inside is not None:
            why = address_refusal(inside)
            return f"an IPv6 form of {inside}, {why}" if why else None
    for network, what in DENIED_NETWORKS:
        if address in network:
            return what
    if not address.is_global or address.is_multicast or address.is_reserved:
        return "not a public address"
    return None


def address_checked(address, port, *, allowance, name=None):
    """Raise OutboundRefused when `address` is internal and the allowance does not name it
    (with `port`). `name` is the host name it came from, for the reason."""
    why = address_refusal(address)
    if why is None or allowance.permits(address, port):
        return
    shown = f"[{address}]" if address.version == 6 else str(address)
    said = f"{name} resolves to {shown}" if name else shown
    raise OutboundRefused(
        f"{said}, {why}: the product does not send to internal addresses "
        f"({ALLOW_ENV} lets one through, for demos and tests only)"
    )


def addresses_resolved(host, port, *, allowance, resolver=socket.getaddrinfo):
    """Resolve `host` once and check every address it resolves to. Returns [(family, socket
    address)] to connect to, in the resolver's order; raises OutboundRefused when any of them is
    refused, and socket.gaierror (or OSError) when the name does not resolve."""
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is not None:
        address_checked(literal, port, allowance=allowance)
        family = socket.AF_INET6 if literal.version == 6 else socket.AF_INET
        return [(family, (str(literal), port))]
    answers = resolver(host, port, allowed_gai_family(), socket.SOCK_STREAM)
    vetted = []
    for family, _type, _proto, _canonical, sockaddr in answers:
        if family not in (socket.AF_INET, socket.AF_INET6):
            raise OutboundRefused(f"{host} resolves to an address that is not IP")
        # A scope (fe80::1%eth0) is not part of the address that is checked.
        address = ipaddress.ip_address(sockaddr[0].partition("%")[0])
        address_checked(address, port, allowance=allowance, name=host)
        vetted.append((family, (str(address), port, *sockaddr[2:])))
    if not vetted:
        raise OSError(f"{host} resolves to no address")
    return vetted
