"""Where a webhook may point: https URLs (http too where WEBHOOK_ALLOW_HTTP says
so) whose host resolves only to global addresses, unless WEBHOOK_ALLOWED_NETWORKS
lets an address in (server-side request forgery: a webhook must not be a way to
reach the server's own network, its metadata service or its loopback ports).
Checked at registration and again before every attempt (a name may be re-pointed
after registration); an attempt connects to the addresses its check passed, never
to a second resolution of the name (DNS rebinding)."""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings

from core.error_codes import DomainError

MAX_URL_LENGTH = 2000

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# IPv6 forms that carry an IPv4 address in their last 32 bits: NAT64's well-known
# prefix (RFC 6052) and the deprecated IPv4-compatible ::a.b.c.d (:: and ::1 included).
_LOW32_EMBEDDING = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("::/96"))
# NAT64's local-use prefix (RFC 8215): a translator inside some network, never public.
_LOCAL_NAT64 = ipaddress.ip_network("64:ff9b:1::/48")


def _refuse(message: str, code: str = "invalid_webhook_url") -> DomainError:
    return DomainError(message, code=code, field="url")


def _allowed(address: IPAddress) -> bool:
    networks = [ipaddress.ip_network(n, strict=False) for n in settings.WEBHOOK_ALLOWED_NETWORKS]
    return any(address.version == net.version and address in net for net in networks)


def _embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries (6to4, Teredo, NAT64, IPv4-compatible)."""
    if address.sixtofour is not None:
        return [address.sixtofour]
    if address.teredo is not None:
        return list(address.teredo)
    if any(address in net for net in _LOW32_EMBEDDING):
        return [ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)]
    return []


def _not_global(address: IPAddress) -> bool:
    return not address.is_global or address.is_multicast


def _internal(address: IPAddress) -> bool:
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:  # the connection is IPv4: judge that address
            return _not_global(address.ipv4_mapped)
        if address in _LOCAL_NAT64 or any(_not_global(a) for a in _embedded_ipv4(address)):
            return True
    return _not_global(address)


def check_webhook_url(url) -> str:
    """The URL if a delivery may go there, else a 400 naming the reason."""
    if not isinstance(url, str) or not url.strip():
        raise _refuse("url is required: an https URL.")
    if len(url) > MAX_URL_LENGTH:
        raise _refuse(f"url is at most {MAX_URL_LENGTH} characters.")
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise _refuse(f"url does not parse: {exc}.") from None
    check_scheme(parts.scheme)
    if not parts.hostname:
        raise _refuse("url has no host.")
    if parts.username is not None or parts.password is not None:
        raise _refuse("url must not carry credentials; verify deliveries by their signature.")
    if any(c.isspace() or ord(c) < 32 for c in url):
        raise _refuse("url contains whitespace or control characters.")
    check_host(parts.hostname, port or default_port(parts.scheme))
    return url.strip()


def check_scheme(scheme: str) -> None:
    if scheme == "https" or (scheme == "http" and settings.WEBHOOK_ALLOW_HTTP):
        return
    if scheme == "http":
        raise _refuse("url must be https:// (plain http is for development: WEBHOOK_ALLOW_HTTP).")
    raise _refuse("url must be https://.")


def default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80


def resolve(host: str, port: int) -> list[str]:
    """The addresses `host` resolves to: the one resolution of a name that a check
    and the connection after it both use."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


def check_host(host: str, port: int) -> list[IPAddress]:
    """The addresses of `host`, if every one may be reached, else a 400; connect
    to these (and only these) afterwards."""
    try:
        addresses = [ipaddress.ip_address(a.split("%")[0]) for a in resolve(host, port)]
    except (OSError, UnicodeError) as exc:
        raise _refuse(f"The host {host!r} does not resolve ({exc}).",
                      code="webhook_host_unresolvable") from None
    inside = sorted(str(a) for a in addresses if _internal(a) and not _allowed(a))
    if inside:
        raise _refuse(f"The host {host!r} resolves to an address inside the network ({', '.join(inside)}): "
                      "webhooks go to public addresses only (WEBHOOK_ALLOWED_NETWORKS lets others in).",
                      code="webhook_url_forbidden")
    return addresses
